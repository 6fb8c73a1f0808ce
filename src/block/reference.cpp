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
//
// Gemma 3n's Gaussian top-k (gate_sparsity s > 0) replaces the gate g_j by g'_j = relu(g_j − c)
// before the activation, c = μ + σ·m over the token's H gate values: μ their mean, σ their
// biased standard deviation, m = Φ⁻¹(s). relu is 1-Lipschitz, so
//   e_g' ≤ e_g_j + e_c + u·|g_j − c|                     (the subtraction rounds once)
// and e_g' takes e_g's place in e_a. The cutoff's error e_c, from the gates' errors e_g_j and
// the rounding of its own computation, in any order of summation:
//   mean:      e_μ ≤ (1/H)·Σ_j e_g_j + (H+1)·u·(1/H)·Σ_j |g_j|
//   variance:  the f32 v̂ of v = (1/H)·Σ (g_j − μ)², by two passes or by Welford's or by
//              E[g²] − μ², errs from rounding by at most e_v = 4·(H+3)·u·(1/H)·Σ g_j²
//              (each term (g_j − μ̂)² ≤ 2·(g_j² + μ̂²) ≤ 4·mean(g²) on average);
//   std:       σ is the norm of g's deviation from its mean over √H, and subtracting the
//              mean is a projection, so the gates' errors move it by at most
//              √((1/H)·Σ e_g_j²); the rounding of v moves √v by min(e_v/σ, √e_v)
//              (|√a − √b| ≤ |a − b|/√a and ≤ √|a − b|); the square root rounds once:
//              e_σ ≤ √((1/H)·Σ e_g_j²) + min(e_v/σ, √e_v) + u·σ;
//   m:         a forward may take m in f32 as torch does (Normal(0, 1).icdf of s in f32:
//              s rounded to f32 and 2s − 1 formed, together ≤ 1.5·u in s, so ≤ 1.5·u/φ(m)
//              in m; erfinv and the × √2 within a few ulps): e_m ≤ 2·u/φ(m) + 8·u·|m|;
//   cutoff:    e_c ≤ e_μ + |m|·e_σ + σ·e_m + 2·u·(|μ| + |σ·m|)   (a product, a sum).
// All first order, covered by the final doubling like the rest. The bound is per token and
// tight enough to tell the top-k from its absence (s = 0 moves g' by c ≈ 1.6·σ).
#include "block/reference.hpp"

#include <algorithm>
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

void apply_gaussian_top_k(double sparsity, std::vector<double>& g, std::vector<double>& e_g) {
  const size_t H = g.size();
  if (H == 0 || e_g.size() != H) throw Error("apply_gaussian_top_k: gate values and their bounds differ in length");
  const double u = kUnitRoundoff, n = static_cast<double>(H);
  double sum = 0.0, abs_sum = 0.0, sq_sum = 0.0, e_sum = 0.0, e_sq_sum = 0.0;
  for (size_t j = 0; j < H; ++j) {
    sum += g[j];
    abs_sum += std::fabs(g[j]);
    sq_sum += g[j] * g[j];
    e_sum += e_g[j];
    e_sq_sum += e_g[j] * e_g[j];
  }
  const double mean = sum / n;
  double dev_sq = 0.0;  // Σ (g − μ)², by the second pass
  for (size_t j = 0; j < H; ++j) dev_sq += (g[j] - mean) * (g[j] - mean);
  const double sigma = std::sqrt(dev_sq / n);  // biased: torch.std(unbiased=False)
  const double m = normal_quantile(sparsity);
  const double cutoff = mean + sigma * m;
  // The cutoff's error bound (derivation at the top of this file).
  const double e_mean = e_sum / n + (n + 1.0) * u * abs_sum / n;
  const double e_var = 4.0 * (n + 3.0) * u * sq_sum / n;
  const double e_sigma =
      std::sqrt(e_sq_sum / n) + (sigma > 0.0 ? std::min(e_var / sigma, std::sqrt(e_var)) : std::sqrt(e_var)) + u * sigma;
  const double density = std::exp(-0.5 * m * m) / std::sqrt(2.0 * M_PI);  // φ(m)
  const double e_m = 2.0 * u / density + 8.0 * u * std::fabs(m);
  const double e_cut =
      e_mean + std::fabs(m) * e_sigma + sigma * e_m + 2.0 * u * (std::fabs(mean) + std::fabs(sigma * m));
  for (size_t j = 0; j < H; ++j) {
    const double shifted = g[j] - cutoff;
    e_g[j] += e_cut + u * std::fabs(shifted);
    g[j] = shifted > 0.0 ? shifted : 0.0;
  }
}

void reference_forward_token(const Block& block, const float* x, double* y_out, double* error_bound_out,
                             double operand_rounding) {
  const auto& c = block.config();
  const auto& w = block.weights();
  const int64_t D = c.d_model, H = c.hidden;
  const double u = kUnitRoundoff;
  std::vector<double> h_exact(static_cast<size_t>(H));
  std::vector<double> h_err(static_cast<size_t>(H));  // e_h per hidden unit
  const double per_term = static_cast<double>(D + 1) * u + operand_rounding;  // of Σ|terms|
  // The gate's pre-activations first: Gemma 3n's cutoff needs all of them (GaussianTopK).
  std::vector<double> pre(static_cast<size_t>(H)), e_pre(static_cast<size_t>(H));
  for (int64_t j = 0; j < H; ++j) {
    const Dot g = c.variant.gated ? dot(w.gate.row(j), x, D, bias_at(w.gate_bias, j))
                                  : dot(w.up.row(j), x, D, bias_at(w.up_bias, j));
    pre[static_cast<size_t>(j)] = g.value;
    e_pre[static_cast<size_t>(j)] = per_term * g.abs_sum;
  }
  if (c.gate_sparsity > 0.0) apply_gaussian_top_k(c.gate_sparsity, pre, e_pre);
  for (int64_t j = 0; j < H; ++j) {
    const Dot up = dot(w.up.row(j), x, D, bias_at(w.up_bias, j));
    const double g = pre[static_cast<size_t>(j)], e_g = e_pre[static_cast<size_t>(j)];
    const double a = activation(c.variant.activation, g);
    const double e_a = reference::lipschitz(c.variant.activation, g, e_g) * e_g + 8.0 * u * (std::fabs(a) + std::fabs(g));
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
