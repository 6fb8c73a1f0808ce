// Shared checks of forward results against the double-precision oracle (reference.cpp).
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

#include "ffn/block.hpp"

namespace ffn::test {

// The nine named variants, T5 v1.1's gated GELU (tanh form), and the two 2-matrix blocks
// whose activations are otherwise only gates.
inline std::vector<Variant> all_variants() {
  std::vector<Variant> v = named_variants();
  v.push_back({true, Activation::gelu_tanh});
  v.push_back({false, Activation::sigmoid});
  v.push_back({false, Activation::identity});
  return v;
}

// Largest |y − reference| / bound over all outputs of y = block(x), the reference and its
// rigorous f32 bound computed from `reference_block`'s f32 weights (> 1: outside the bound;
// NaN counts as infinitely far). operand_rounding: as reference_forward_token.
inline double worst_bound_ratio(const Block& reference_block, const Matrix& x, const Matrix& y,
                                double operand_rounding = 0.0) {
  const int64_t D = reference_block.config().d_model;
  std::vector<double> ref(static_cast<size_t>(D)), bound(static_cast<size_t>(D));
  double worst = 0;
  for (int64_t t = 0; t < x.rows(); ++t) {
    reference_forward_token(reference_block, x.row(t), ref.data(), bound.data(), operand_rounding);
    for (int64_t i = 0; i < D; ++i) {
      const double r = std::fabs(double(y.row(t)[i]) - ref[size_t(i)]) / bound[size_t(i)];
      worst = std::isnan(r) ? INFINITY : std::max(worst, r);
    }
  }
  return worst;
}

}  // namespace ffn::test
