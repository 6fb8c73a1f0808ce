// sparsity_threshold (ffn/inference_block.hpp): the magnitude below which (inclusive) a
// target fraction of sample activations falls — the CATS threshold for SparseDecode;
// down_kept_share, its companion for a down threshold; and auto_sparse_decode, the loader's
// default.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "ffn/error.hpp"
#include "ffn/inference_block.hpp"

namespace ffn {

double down_kept_share(ConstMatrixView a, ConstMatrixView h, float threshold, float down_threshold) {
  if (a.rows != h.rows || a.cols != h.cols)
    throw Error("down_kept_share: a is [" + std::to_string(a.rows) + ", " + std::to_string(a.cols) + "] and h [" +
                std::to_string(h.rows) + ", " + std::to_string(h.cols) + "]; they must be of the same tokens");
  double gate_kept = 0, both = 0;
  for (int64_t t = 0; t < a.rows; ++t)
    for (int64_t j = 0; j < a.cols; ++j)
      if (sparse_decode_keeps(a.row(t)[j], threshold)) {
        ++gate_kept;
        both += sparse_decode_keeps(h.row(t)[j], down_threshold);
      }
  return gate_kept > 0 && both > 0 ? both / gate_kept : 1.0;
}

float sparsity_threshold(ConstMatrixView a, double sparsity) {
  if (!(sparsity >= 0.0 && sparsity < 1.0))
    throw Error("sparsity " + std::to_string(sparsity) + ": must be in [0, 1) (the fraction of channels dropped)");
  const int64_t n = a.rows * a.cols;
  if (n == 0) throw Error("sparsity_threshold: no activations to calibrate on");
  std::vector<float> m;
  m.reserve(static_cast<size_t>(n));
  for (int64_t r = 0; r < a.rows; ++r)
    for (int64_t c = 0; c < a.cols; ++c) {
      const float v = a.data[r * a.stride + c];
      if (std::isnan(v))
        throw Error("sparsity_threshold: activation [" + std::to_string(r) + ", " + std::to_string(c) + "] is NaN");
      m.push_back(std::abs(v));
    }
  // The ⌈s·n⌉-th smallest magnitude: at least that fraction is ≤ it. s = 0 gives 0, which
  // drops only exact zeros.
  const auto count = static_cast<int64_t>(std::ceil(sparsity * double(n)));
  if (count == 0) return 0.0f;
  std::nth_element(m.begin(), m.begin() + (count - 1), m.end());
  return m[static_cast<size_t>(count - 1)];
}

SparseDecode auto_sparse_decode(const BlockConfig& c, const MatrixTypes& types) {
  const Activation a = c.variant.activation;
  const bool zeros = a == Activation::relu || a == Activation::relu2 || a == Activation::relu6 || c.gate_sparsity > 0;
  auto rows_readable = [](WeightType t) {
    return t == WeightType::f32 || t == WeightType::f16 || t == WeightType::bf16;
  };
  // Gemma 3n's top-k keeps 1 − s of the channels of every token, so a few tokens' union stays
  // sparse: at s = 0.95 four tokens read a fifth of up's and down's rows, in 0.54–0.58 of the
  // dense block's time (docs/performance.md, "Sparse decode"). ReLU's zeros are the data's:
  // one token a call.
  return SparseDecode{.enabled = zeros && (!c.variant.gated || rows_readable(types.up)) && rows_readable(types.down),
                      .max_tokens = c.gate_sparsity >= 0.9 ? 4 : 1};
}

}  // namespace ffn
