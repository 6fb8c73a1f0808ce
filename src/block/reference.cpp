// The oracle: a forward pass in double precision, one token at a time, written for
// obviousness rather than speed. Every fast path is tested against it.
//
// Error bound of an f32 forward (first order, then doubled for the higher-order terms).
// With u = 2⁻²⁴, G_j = Σ_k |W_gate[j][k]·x_k| + |b_gate[j]| (U_j likewise for up) and L =
// 1.13 ≥ max |act'| over every activation here (GELU's is 1.129, Swish's 1.100) but relu2,
// whose slope 2·relu(g) is unbounded: L = 2·(|g_j| + e_g) for it (reference::lipschitz):
//   gate/up pre-activations (D products + a bias):  e_g ≤ (D+1)·u·G_j, e_u ≤ (D+1)·u·U_j
//   activation (libm within a few ulps, plus the    e_a ≤ L·e_g + 8·u·(|a_j| + |g_j|)
//   cancellation of 1 + tanh for large negative g)
//   hidden: gated h = a·u                            e_h ≤ e_a·|u_j| + |a_j|·e_u + u·|h_j|
//           clamped_swish: h = a·v, v = clamp(u, −7, 7) + 1: the clamp is 1-Lipschitz and
//           the + 1 rounds once, so e_v ≤ e_u + u·|v| and e_h ≤ e_a·|v| + |a|·e_v + u·|h|
//           (a = m·σ(1.702·m), m = min(g, 7): min is 1-Lipschitz, so L holds for a too)
//           2-matrix h = a                           e_h ≤ e_a
//   output (H products + a bias):  e_y ≤ Σ_j |W_down[i][j]|·e_h_j
//                                        + (H+1)·u·(Σ_j |W_down[i][j]·h_j| + |b_down[i]|)
// (H+1)·u·Σ|terms| bounds the rounding of any order of summation, so the bound holds for
// every kernel and for PyTorch alike. A real bug — a wrong index, activation, bias or
// operand — changes outputs by a sizeable fraction of Σ|terms|, far above this bound at the
// tested sizes.
// A forward that rounds its products' activation operands with relative error r (x before
// the gate/up products, h before the down projection) adds r·G_j to e_g (r·U_j to e_u) and
// r·|h_j| to e_h; the products of r with u are higher order (covered by the doubling).
#include "block/reference.hpp"

#include <cmath>
#include <vector>

#include "block/reference_math.hpp"
#include "ffn/block.hpp"
#include "ffn/error.hpp"

namespace ffn {
namespace {

using reference::activation;
using reference::bias_at;
using reference::Dot;
using reference::dot;
using reference::kUnitRoundoff;

}  // namespace

void reference_forward_token(const Block& block, const float* x, double* y_out, double* error_bound_out,
                             double operand_rounding) {
  const auto& c = block.config();
  const auto& w = block.weights();
  const int64_t D = c.d_model, H = c.hidden;
  const double u = kUnitRoundoff;
  std::vector<double> h_exact(static_cast<size_t>(H));
  std::vector<double> h_err(static_cast<size_t>(H));  // e_h per hidden unit
  for (int64_t j = 0; j < H; ++j) {
    const Dot up = dot(w.up.row(j), x, D, bias_at(w.up_bias, j));
    const Dot pre = c.variant.gated ? dot(w.gate.row(j), x, D, bias_at(w.gate_bias, j)) : up;
    const double a = activation(c.variant.activation, pre.value);
    const double per_term = static_cast<double>(D + 1) * u + operand_rounding;  // of Σ|terms|
    const double e_pre = per_term * pre.abs_sum;
    const double e_a = reference::lipschitz(c.variant.activation, pre.value, e_pre) * e_pre + 8.0 * u * (std::fabs(a) + std::fabs(pre.value));
    double hj = a, e_h = e_a;
    if (c.variant.gated) {
      const double v = reference::up_factor(c.variant.activation, up.value);
      const bool shifted = c.variant.activation == Activation::clamped_swish;  // v's + 1 rounds once
      const double e_v = per_term * up.abs_sum + (shifted ? u * std::fabs(v) : 0.0);
      hj = a * v;
      e_h = e_a * std::fabs(v) + std::fabs(a) * e_v + u * std::fabs(hj);
    }
    e_h += operand_rounding * std::fabs(hj);
    h_exact[static_cast<size_t>(j)] = hj;
    h_err[static_cast<size_t>(j)] = e_h;
  }
  for (int64_t i = 0; i < D; ++i) {
    const float* wd = w.down.row(i);
    double acc = 0.0, abs_sum = 0.0, propagated = 0.0;
    for (int64_t j = 0; j < H; ++j) {
      const double p = static_cast<double>(wd[j]) * h_exact[static_cast<size_t>(j)];
      acc += p;
      abs_sum += std::fabs(p);
      propagated += std::fabs(static_cast<double>(wd[j])) * h_err[static_cast<size_t>(j)];
    }
    if (const float* b = bias_at(w.down_bias, i)) {
      acc += *b;
      abs_sum += std::fabs(*b);
    }
    y_out[i] = acc;
    if (error_bound_out)
      error_bound_out[i] = 2.0 * (propagated + static_cast<double>(H + 1) * u * abs_sum) + 0x1p-126;
  }
}

void reference_forward(const Block& block, ConstMatrixView x, MatrixView y) {
  const int64_t D = block.config().d_model;
  if (x.cols != D || y.cols != D || x.rows != y.rows)
    throw Error("reference_forward: x is " + std::to_string(x.rows) + "×" + std::to_string(x.cols) +
                ", y is " + std::to_string(y.rows) + "×" + std::to_string(y.cols) + ", d_model is " +
                std::to_string(D));
  std::vector<double> row(static_cast<size_t>(D));
  for (int64_t t = 0; t < x.rows; ++t) {
    reference_forward_token(block, x.row(t), row.data());
    for (int64_t i = 0; i < D; ++i) y.row(t)[i] = static_cast<float>(row[static_cast<size_t>(i)]);
  }
}

}  // namespace ffn
