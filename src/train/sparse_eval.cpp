// The activation-sparse evaluation of the byte-level model (train/sparse_eval.hpp): one
// block's forward with small hidden channels dropped, and the model's loss with every
// layer's forward so masked (through LanguageModel::loss_with, which keeps the rest of the
// model's forward as it is).
#include "train/sparse_eval.hpp"

#include <cmath>
#include <string>

#include "ffn/error.hpp"
#include "kernels/kernels.hpp"
#include "train/layers.hpp"

namespace ffn {
namespace {

void reshape(Matrix& m, int64_t rows, int64_t cols) {
  if (m.rows() != rows || m.cols() != cols) m = Matrix(rows, cols);
}

}  // namespace

void masked_block_forward(const Block& block, ConstMatrixView x, MatrixView y, const ChannelMask& mask,
                          MaskedForwardWork& work, LayerSparsity& counts, std::vector<float>* magnitudes,
                          ThreadPool& pool) {
  const BlockConfig& c = block.config();
  if (c.bias) throw Error("masked_block_forward: blocks with bias are not supported (W_down's bias has no channel)");
  if (std::isnan(mask.threshold) || std::isnan(mask.hidden_threshold))
    throw Error("masked_block_forward: threshold is NaN");
  const int64_t T = x.rows, H = c.hidden;
  const Activation act = c.variant.activation;
  // The pre-activations, by the block's own forward (y is overwritten below).
  forward_train(block, x, y, work.cache, /*recompute=*/false, &pool);
  if (T == 0) return;
  reshape(work.hidden, T, H);
  if (c.variant.gated) reshape(work.act, T, H);
  // a: what decides a channel (the rule); for 2-matrix blocks h itself.
  const bool by_gate = c.variant.gated && mask.rule == SparsityRule::gate;  // up's row skipped with a drop
  const float* const a = by_gate ? work.act.data() : work.hidden.data();
  const float* const u = work.cache.up.data();
  const float* const g = c.variant.gated ? work.cache.gate.data() : nullptr;
  float* const h = work.hidden.data();
  if (magnitudes) magnitudes->resize(magnitudes->size() + size_t(T * H));
  float* const mag = magnitudes ? magnitudes->data() + (magnitudes->size() - size_t(T * H)) : nullptr;

  std::vector<LayerSparsity> part(size_t(pool.size()));
  pool.run([&](int ith, int nth) {
    const auto [t0, t1] = split_range(T, ith, nth);
    if (t1 <= t0) return;
    const int64_t rows = t1 - t0;
    // h exactly as the block computes it (the same activation kernels, element by element).
    if (c.variant.gated) {
      kernels::f32_activation_rows(act, rows, H, g + t0 * H, H, work.act.row(t0), H);
      kernels::f32_gated_activation_rows(act, rows, H, g + t0 * H, H, u + t0 * H, H, h + t0 * H, H);
    } else {
      kernels::f32_activation_rows(act, rows, H, u + t0 * H, H, h + t0 * H, H);
    }
    LayerSparsity& p = part[size_t(ith)];
    for (int64_t i = t0 * H; i < t1 * H; ++i) {
      const float m = std::fabs(a[i]);  // before h[i] is zeroed: a may be h
      if (mag) mag[i] = m;
      const bool zero = a[i] == 0.0f;
      const bool by_a = zero || m < mask.threshold;
      const bool drop = by_a || std::fabs(h[i]) < mask.hidden_threshold;
      p.exact_zeros += zero;
      p.up_skipped += by_gate && by_a;
      p.dropped += drop;
      if (drop) h[i] = 0.0f;
    }
  });
  counts.channels += T * H;
  for (const auto& p : part) {
    counts.dropped += p.dropped;
    counts.up_skipped += p.up_skipped;
    counts.exact_zeros += p.exact_zeros;
  }
  // y = h·W_downᵀ by the forward GEMM the block's second stage uses (chosen by T alone).
  train_detail::linear_forward(pool, work.hidden.view(), block.weights().down.view(), y);
}

double SparseEvaluation::mean_over_layers(double (LayerSparsity::*fraction)() const) const {
  double sum = 0;
  for (const auto& l : layers) sum += (l.*fraction)();
  return layers.empty() ? 0.0 : sum / double(layers.size());
}

SparseEvaluation sparse_loss(LanguageModel& model, const Batch& batch, const std::vector<float>& thresholds,
                             SparsityRule rule, ThreadPool& pool, const std::vector<float>& hidden_thresholds) {
  const auto L = static_cast<size_t>(model.config().layers);
  if (thresholds.size() != L)
    throw Error("sparse_loss: " + std::to_string(thresholds.size()) + " thresholds for a model of " +
                std::to_string(L) + " layers");
  if (!hidden_thresholds.empty() && hidden_thresholds.size() != L)
    throw Error("sparse_loss: " + std::to_string(hidden_thresholds.size()) + " hidden thresholds for a model of " +
                std::to_string(L) + " layers");
  SparseEvaluation out;
  out.layers.resize(L);
  MaskedForwardWork work;
  out.loss = model.loss_with(
      batch,
      [&](size_t l, const Block& block, ConstMatrixView x, MatrixView y) {
        const ChannelMask mask{rule, thresholds[l], hidden_thresholds.empty() ? 0.0f : hidden_thresholds[l]};
        masked_block_forward(block, x, y, mask, work, out.layers[l], nullptr, pool);
      },
      &pool);
  return out;
}

}  // namespace ffn
