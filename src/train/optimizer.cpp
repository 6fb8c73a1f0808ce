// AdamW, the learning-rate schedule and global gradient-norm clipping (train/train.hpp).
#include <cmath>
#include <numbers>
#include <string>

#include "ffn/error.hpp"
#include "train/train.hpp"

namespace ffn {

void validate(const TrainOptions& o) {
  auto fail = [](const char* field, const std::string& v, const char* why) {
    throw Error(std::string("training ") + field + " = " + v + ": " + why);
  };
  if (o.steps < 1) fail("steps", std::to_string(o.steps), "must be ≥ 1");
  if (o.batch < 1) fail("batch", std::to_string(o.batch), "must be ≥ 1");
  if (o.warmup < 0) fail("warmup", std::to_string(o.warmup), "must be ≥ 0");
  if (!(o.lr > 0) || !std::isfinite(o.lr)) fail("lr", std::to_string(o.lr), "must be finite and > 0");
  if (!(o.min_lr_fraction >= 0 && o.min_lr_fraction <= 1))
    fail("min_lr_fraction", std::to_string(o.min_lr_fraction), "must be in [0, 1]");
  if (!(o.weight_decay >= 0)) fail("weight_decay", std::to_string(o.weight_decay), "must be ≥ 0");
  if (!(o.beta1 >= 0 && o.beta1 < 1)) fail("beta1", std::to_string(o.beta1), "must be in [0, 1)");
  if (!(o.beta2 >= 0 && o.beta2 < 1)) fail("beta2", std::to_string(o.beta2), "must be in [0, 1)");
  if (!(o.eps > 0)) fail("eps", std::to_string(o.eps), "must be > 0");
  if (o.eval_every < 1) fail("eval_every", std::to_string(o.eval_every), "must be ≥ 1");
  if (o.eval_tokens < 1) fail("eval_tokens", std::to_string(o.eval_tokens), "must be ≥ 1");
}

double learning_rate(const TrainOptions& o, int64_t step) {
  if (step < o.warmup) return o.lr * double(step + 1) / double(o.warmup);
  const int64_t decay_steps = o.steps - o.warmup;
  if (decay_steps <= 1) return o.lr;
  const double progress = double(step - o.warmup) / double(decay_steps - 1);  // 0 … 1
  const double cosine = 0.5 * (1.0 + std::cos(std::numbers::pi * std::min(progress, 1.0)));
  return o.lr * (o.min_lr_fraction + (1.0 - o.min_lr_fraction) * cosine);
}

AdamW::AdamW(std::vector<ParameterRef> params, const TrainOptions& options) : params_(std::move(params)), o_(options) {
  validate(o_);
  for (const auto& p : params_) {
    s_.m.emplace_back(size_t(p.size), 0.0f);
    s_.v.emplace_back(size_t(p.size), 0.0f);
  }
}

void AdamW::step(double lr) {
  ++s_.t;
  const double c1 = 1.0 - std::pow(o_.beta1, double(s_.t)), c2 = 1.0 - std::pow(o_.beta2, double(s_.t));
  const auto b1 = float(o_.beta1), b2 = float(o_.beta2);
  const auto step_size = float(lr / c1), sqrt_c2 = float(std::sqrt(c2)), eps = float(o_.eps);
  for (size_t i = 0; i < params_.size(); ++i) {
    const ParameterRef& p = params_[i];
    const float keep = p.decay ? float(1.0 - lr * o_.weight_decay) : 1.0f;
    float* m = s_.m[i].data();
    float* v = s_.v[i].data();
    for (int64_t j = 0; j < p.size; ++j) {
      const float g = p.grad[j];
      m[j] = b1 * m[j] + (1.0f - b1) * g;
      v[j] = b2 * v[j] + (1.0f - b2) * g * g;
      // PyTorch's form: θ −= (lr/c₁) · m / (√v/√c₂ + ε).
      p.value[j] = p.value[j] * keep - step_size * m[j] / (std::sqrt(v[j]) / sqrt_c2 + eps);
    }
  }
}

double clip_gradients(const std::vector<ParameterRef>& params, double max_norm) {
  double ss = 0;
  for (const auto& p : params)
    for (int64_t j = 0; j < p.size; ++j) ss += double(p.grad[j]) * double(p.grad[j]);
  const double norm = std::sqrt(ss);
  if (max_norm > 0 && norm > max_norm) {
    const auto scale = float(max_norm / norm);
    for (const auto& p : params)
      for (int64_t j = 0; j < p.size; ++j) p.grad[j] *= scale;
  }
  return norm;
}

}  // namespace ffn
