// The accuracy contract of a forward whose products take quantised activations (q8_0, q8_K):
// the f32 bound of reference_forward_token plus the quantisation's error propagated through
// the block — stated in full in test_inference_types.cpp, whose tests and the sparse decode's
// (q8_0 up rows against x in q8_0) share it.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

#include "block/reference.hpp"
#include "block/reference_math.hpp"
#include "ffn/block.hpp"
#include "ffn/tensor.hpp"

namespace ffn::test {

// Per-value error of q8_0 (blocks of 32, binary16 scale) or q8_K (blocks of 256, f32 scale)
// quantisation in a block whose largest magnitude is a.
inline double q8_error(double a, size_t block) {
  if (block == 256) return a / 254.0 + a * 0x1p-20;
  return a / 254.0 + 127.0 * std::max(a / 127.0 * 0x1p-11, 0x1p-25) + a * 0x1p-20;
}

// e_k for each value of v (blocks of `block`: 32 for q8_0, 256 for q8_K).
inline std::vector<double> q8_errors(const std::vector<double>& v, size_t block) {
  std::vector<double> e(v.size());
  for (size_t b = 0; b < v.size(); b += block) {
    double a = 0;
    for (size_t j = b; j < b + block; ++j) a = std::max(a, std::fabs(v[j]));
    for (size_t j = b; j < b + block; ++j) e[j] = q8_error(a, block);
  }
  return e;
}

// The activation blocks of each stage: x's (the first stage's format) and h's (down's); h 0
// where h is not quantised, gate_x false where the gate's products take x as it is (a
// sparse decode's f32 gate beside its q8_0 up rows).
struct QuantBlocks {
  size_t x = 32, h = 32;
  bool gate_x = true;
};

// The contract's quantisation term δy for one token of an f32 block.
inline std::vector<double> quantisation_bound(const Block& block, const float* x, QuantBlocks blocks) {
  const auto& c = block.config();
  const auto& w = block.weights();
  const int64_t D = c.d_model, H = c.hidden;
  std::vector<double> xv(x, x + D);
  const auto ex = q8_errors(xv, blocks.x);
  auto project = [&](const Matrix& m, const Matrix& bias, int64_t n, double& value, double& err) {
    value = bias.empty() ? 0.0 : bias.data()[n];
    err = 0;
    for (int64_t k = 0; k < D; ++k) {
      value += double(m.row(n)[k]) * xv[size_t(k)];
      err += std::fabs(double(m.row(n)[k])) * ex[size_t(k)];
    }
  };
  std::vector<double> h_mag(static_cast<size_t>(H)), dh(static_cast<size_t>(H));
  for (int64_t n = 0; n < H; ++n) {
    double u, du;
    project(w.up, w.up_bias, n, u, du);
    if (c.variant.gated) {
      double g, dg;
      project(w.gate, w.gate_bias, n, g, dg);
      if (!blocks.gate_x) dg = 0;
      const double v = reference::up_factor(c.variant.activation, u);
      const double h = reference::activation(c.variant.activation, g) * v;
      const Activation a = c.variant.activation;
      dh[size_t(n)] = reference::lipschitz(a, g, dg) * dg * (std::fabs(v) + du) + reference::magnitude(a, g) * du;
      h_mag[size_t(n)] = std::fabs(h) + dh[size_t(n)];
    } else {
      dh[size_t(n)] = reference::lipschitz(c.variant.activation, u, du) * du;
      h_mag[size_t(n)] = std::fabs(reference::activation(c.variant.activation, u)) + dh[size_t(n)];
    }
  }
  const auto eh = blocks.h ? q8_errors(h_mag, blocks.h) : std::vector<double>(size_t(H));
  std::vector<double> dy(static_cast<size_t>(D));
  for (int64_t n = 0; n < D; ++n)
    for (int64_t k = 0; k < H; ++k)
      dy[size_t(n)] += std::fabs(double(w.down.row(n)[k])) * (dh[size_t(k)] + eh[size_t(k)]);
  return dy;
}

// Largest |y − reference| / bound over all outputs, the reference being `f32` (the block's
// rounded weights); the bound includes the quantisation term when `quantised`, and the
// activations' rounding (as reference_forward_token) when operand_rounding > 0.
inline double worst_ratio(const Block& f32, const Matrix& x, const Matrix& y, bool quantised,
                          double operand_rounding = 0.0, QuantBlocks blocks = {}) {
  const int64_t D = f32.config().d_model;
  std::vector<double> ref(static_cast<size_t>(D)), bound(static_cast<size_t>(D));
  double worst = 0;
  for (int64_t t = 0; t < x.rows(); ++t) {
    reference_forward_token(f32, x.row(t), ref.data(), bound.data(), operand_rounding);
    const auto dq = quantised ? quantisation_bound(f32, x.row(t), blocks) : std::vector<double>(size_t(D));
    for (int64_t i = 0; i < D; ++i) {
      const double r = std::fabs(double(y.row(t)[i]) - ref[size_t(i)]) / (bound[size_t(i)] + dq[size_t(i)]);
      worst = std::isnan(r) ? INFINITY : std::max(worst, r);
    }
  }
  return worst;
}

}  // namespace ffn::test
