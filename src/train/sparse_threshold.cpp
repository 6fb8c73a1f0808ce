// Calibration of the activation-sparse evaluation (train/sparse_eval.hpp): the per-layer
// thresholds t_l at a target fraction s, from the |a| of the dense model's forward on a
// calibration batch.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "ffn/error.hpp"
#include "train/sparse_eval.hpp"

namespace ffn {

float calibrated_threshold(std::vector<float> magnitudes, double s) {
  if (!(s >= 0.0 && s <= 1.0)) throw Error("sparsity target " + std::to_string(s) + ": must be in [0, 1]");
  if (magnitudes.empty()) throw Error("calibrated_threshold: no magnitudes to calibrate on");
  for (float m : magnitudes)
    if (!(m >= 0.0f)) throw Error("calibrated_threshold: magnitude " + std::to_string(m) + " is negative or NaN");
  const auto n = static_cast<int64_t>(magnitudes.size());
  // k channels to drop, the nearest whole number to s·N (halves up); s·N ≤ N fits in double.
  const auto k = std::min(n, static_cast<int64_t>(std::floor(s * double(n) + 0.5)));
  if (k == 0) return 0.0f;  // nothing is < 0: the dense model
  if (k == n) return std::numeric_limits<float>::infinity();
  // The (k+1)-th smallest: the k smallest are strictly below it unless they tie with it.
  std::nth_element(magnitudes.begin(), magnitudes.begin() + k, magnitudes.end());
  return magnitudes[size_t(k)];
}

std::vector<std::vector<float>> hidden_magnitudes(LanguageModel& model, const Batch& batch, SparsityRule rule,
                                                  ThreadPool& pool) {
  const auto L = static_cast<size_t>(model.config().layers);
  std::vector<std::vector<float>> out(L);
  std::vector<LayerSparsity> counts(L);
  MaskedForwardWork work;
  // Threshold 0 drops nothing but the exact zeros, which are 0 in h already: the dense forward.
  model.loss_with(
      batch,
      [&](size_t l, const Block& block, ConstMatrixView x, MatrixView y) {
        masked_block_forward(block, x, y, ChannelMask{rule, 0.0f, 0.0f}, work, counts[l], &out[l], pool);
      },
      &pool);
  return out;
}

std::vector<float> calibrated_thresholds(const std::vector<std::vector<float>>& magnitudes, double s) {
  std::vector<float> t;
  t.reserve(magnitudes.size());
  for (const auto& m : magnitudes) t.push_back(calibrated_threshold(m, s));
  return t;
}

}  // namespace ffn
