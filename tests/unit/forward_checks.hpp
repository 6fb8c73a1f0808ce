// Shared checks of forward results against the double-precision oracle (reference.cpp).
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

#include "block/reference.hpp"
#include "ffn/block.hpp"

namespace ffn::test {

// The nine named variants, T5 v1.1's gated GELU (tanh form), the two 2-matrix blocks
// whose activations are otherwise only gates, gpt-oss's swiglu_oai, and Hugging Face's
// quick_gelu (CLIP's 2-matrix block), relu2 (Nemotron's) and relu6, gated.
inline std::vector<Variant> all_variants() {
  std::vector<Variant> v = named_variants();
  v.push_back({true, Activation::gelu_tanh});
  v.push_back({false, Activation::sigmoid});
  v.push_back({false, Activation::identity});
  v.push_back({true, Activation::clamped_swish});
  v.push_back({false, Activation::quick_gelu});
  v.push_back({false, Activation::relu2});
  v.push_back({true, Activation::relu6});
  return v;
}

// A block whose gate and up weights and biases are 10× Block::random's: at x uniform in ±2
// its pre-activations spread over about ±7 (Block::random's ≈ 0.67, ×10), reaching past
// gpt-oss's limit 7 and relu6's 6, and into relu2's steep part.
inline Block scaled_block(Variant v, int64_t d, int64_t hidden, bool bias, uint32_t seed) {
  Block b = Block::random({v, d, hidden, bias}, seed);
  auto& w = b.weights();
  for (Matrix* m : {&w.gate, &w.up, &w.gate_bias, &w.up_bias})
    for (int64_t i = 0; i < m->size(); ++i) m->data()[i] *= 10.0f;
  return b;
}
// A swiglu_oai block with its clamps engaged.
inline Block clamping_block(int64_t d, int64_t hidden, bool bias, uint32_t seed) {
  return scaled_block({true, Activation::clamped_swish}, d, hidden, bias, seed);
}

// The share of the (token, unit) pairs of x whose activation's argument (the gate's
// pre-activation, the up's in a 2-matrix block) is above `limit`, in double.
inline double share_above(const Block& b, const Matrix& x, double limit) {
  const auto& w = b.weights();
  const bool gated = b.config().variant.gated;
  const Matrix& m = gated ? w.gate : w.up;
  const Matrix& bias = gated ? w.gate_bias : w.up_bias;
  const int64_t D = b.config().d_model, H = b.config().hidden;
  double n = 0;
  for (int64_t t = 0; t < x.rows(); ++t)
    for (int64_t j = 0; j < H; ++j) {
      double z = bias.empty() ? 0.0 : bias.data()[j];
      for (int64_t k = 0; k < D; ++k) z += double(m.row(j)[k]) * x.row(t)[k];
      n += z > limit;
    }
  return n / double(x.rows() * H);
}

// The shares of the (token, unit) pairs of x whose gate is above 7 and whose up is beyond
// ±7, in double: that the tests at scale reach the clamps.
struct ClampShares {
  double gate = 0, up = 0;
};
inline ClampShares clamp_shares(const Block& b, const Matrix& x) {
  const auto& w = b.weights();
  const int64_t D = b.config().d_model, H = b.config().hidden;
  ClampShares s;
  for (int64_t t = 0; t < x.rows(); ++t)
    for (int64_t j = 0; j < H; ++j) {
      double g = w.gate_bias.empty() ? 0.0 : w.gate_bias.data()[j], u = w.up_bias.empty() ? 0.0 : w.up_bias.data()[j];
      for (int64_t k = 0; k < D; ++k) {
        g += double(w.gate.row(j)[k]) * x.row(t)[k];
        u += double(w.up.row(j)[k]) * x.row(t)[k];
      }
      s.gate += g > 7.0;
      s.up += std::fabs(u) > 7.0;
    }
  const double n = double(x.rows() * H);
  return {s.gate / n, s.up / n};
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
