// The oracle of backward: one token at a time in double precision (every product, sum,
// activation and derivative in double, from the f32 weights, input and upstream
// gradient), written for obviousness rather than speed. The fast backward is tested
// against it; it is tested against finite differences of reference_forward_token.
//
// Error bound of an f32 backward, first order, then doubled for the higher-order terms
// (the forward's derivation in reference.cpp, carried on). u = 2⁻²⁴; per hidden unit j,
// with G_j, U_j the Σ|terms| of the gate and up pre-activations (bias included),
// P_j = Σ_i |dy_i·W_down[i][j]|, L = 1.13 ≥ max|act'| and C = 1 ≥ max|act''| (GELU and its
// tanh form 0.798, quick_gelu 0.851, Swish 0.5, σ 0.096, ReLU, relu6 and identity 0) — but
// for relu2, whose slope 2·relu(g) is unbounded: L = 2·(|g| + e_g) and C = 2 there
// (reference::lipschitz, reference::curvature):
//   pre-activations          e_g = (D+1)·u·G_j,  e_u = (D+1)·u·U_j
//   activation               e_a  ≤ L·e_g + 8·u·(|a| + |g|)                      (forward's)
//   its derivative           e_a' ≤ C·e_g + 16·u·(1 + |g|)  (libm within a few ulps; the
//                            16·u·|g| covers 1 − σ and 1 − t² losing their low bits);
//                            where the f32 g may lie across a kink, + the jump of a'
//                            there: 1 at ReLU's 0 and relu6's 0 and 6 (|g| ≤ e_g,
//                            |g − 6| ≤ e_g); relu2's a' is continuous
//   dh = dy·W_down (D terms) e_dh ≤ D·u·P_j
//   gated  h = a·u           e_h  ≤ e_a·|u| + |a|·e_u + u·|h|
//          du = dh·a         e_du ≤ e_dh·|a| + |dh|·e_a + u·|du|
//          dg = (dh·u)·a'    e_dg ≤ e_dh·|u·a'| + |dh|·e_u·|a'| + |dh·u|·e_a' + 2·u·|dg|
//   clamped_swish: u above is v = clamp(u, −7, 7) + 1 with e_v ≤ e_u + u·|v| (the forward's),
//          du = (dh·a)·v' with v' = [|u| ≤ 7] ∈ {0, 1} exact: e_du as above times v'; and
//          where the f32 u may lie across ±7 (||u| − 7| ≤ e_u), v' may differ: + |dh·a|.
//          Likewise a' jumps by ≤ L at g = 7: where |g − 7| ≤ e_g, e_a' += L (the jump
//          above). (C ≥ 1.702·0.5, the clamped Swish's largest |a''|.)
//   2-matrix h = a(z), dz = dh·a'(z): e_h = e_a, e_dz ≤ e_dh·|a'| + |dh|·e_a' + u·|dz|
//   a gradient over T tokens, Σ_t p_t·q_t with p exact (dy or x) and q an f32 value
//   carrying error e_q:      ≤ Σ_t |p_t|·e_q + T·u·Σ_t |p_t·q_t|
//   dx (per token, 2H terms; H for 2-matrix blocks):
//                            ≤ Σ_j (e_du·|W_up[j][k]| + e_dg·|W_gate[j][k]|) + 2H·u·Σ|terms|
// n·u·Σ|terms| bounds the rounding of any order of summing n products, so the bound holds
// for every kernel and for PyTorch's autograd alike, from zeroed gradients (accumulating
// into nonzero ones adds one rounding of the result). A wrong derivative, operand or index
// changes a gradient by a sizeable fraction of its Σ|terms|, far above this bound.
#include <cmath>
#include <vector>

#include "block/gate_sparsity_checks.hpp"
#include "block/reference.hpp"
#include "block/reference_math.hpp"
#include "ffn/backward.hpp"

namespace ffn {
namespace {

using reference::activation;
using reference::bias_at;
using reference::derivative;
using reference::Dot;
using reference::dot;
using reference::kUnitRoundoff;
constexpr double kFloor = 0x1p-126;  // the smallest normal f32: a zero gradient's bound

ReferenceGradient zeros(const Matrix& like) {
  const auto n = static_cast<size_t>(like.size());
  return {std::vector<double>(n), std::vector<double>(n), std::vector<double>(n)};
}

// Adds one token's term p·q, p exact and q an f32 value within e_q, to element i.
void add_term(ReferenceGradient& g, size_t i, double p, double q, double e_q) {
  g.value[i] += p * q;
  g.propagated[i] += std::fabs(p) * e_q;
  g.magnitude[i] += std::fabs(p * q);
}

// Per hidden unit of one token: exact values and error bounds of the f32 ones.
struct Unit {
  double up, e_up;  // up pre-activation (z of 2-matrix blocks)
  double h, e_h;    // hidden value
  double du, e_du;  // gradient of the up pre-activation (dz)
  double dg, e_dg;  // gradient of the gate pre-activation (gated blocks)
};

}  // namespace

ReferenceGradients::ReferenceGradients(const BlockConfig& config) {
  const BlockGradients shapes = zero_gradients(config);
  gate = zeros(shapes.gate);
  up = zeros(shapes.up);
  down = zeros(shapes.down);
  gate_bias = zeros(shapes.gate_bias);
  up_bias = zeros(shapes.up_bias);
  down_bias = zeros(shapes.down_bias);
}

double ReferenceGradients::bound(const ReferenceGradient& g, int64_t i) const {
  const auto k = static_cast<size_t>(i);
  return 2.0 * (g.propagated[k] + static_cast<double>(tokens) * kUnitRoundoff * g.magnitude[k]) + kFloor;
}

void reference_backward_token(const Block& block, const float* x, const float* dy, double* dx_out,
                              ReferenceGradients& grads, double* dx_bound_out) {
  const auto& c = block.config();
  const auto& w = block.weights();
  refuse_gate_sparsity(c, "reference_backward_token", "the backward oracle has no top-k, as training has none");
  const int64_t D = c.d_model, H = c.hidden;
  const bool gated = c.variant.gated;
  const Activation act = c.variant.activation;
  const double u = kUnitRoundoff;
  std::vector<Unit> units(static_cast<size_t>(H));

  for (int64_t j = 0; j < H; ++j) {
    Unit& n = units[static_cast<size_t>(j)];
    const Dot up = dot(w.up.row(j), x, D, bias_at(w.up_bias, j));
    const Dot pre = gated ? dot(w.gate.row(j), x, D, bias_at(w.gate_bias, j)) : up;
    const double g = pre.value, e_g = static_cast<double>(D + 1) * u * pre.abs_sum;
    n.up = up.value;
    n.e_up = static_cast<double>(D + 1) * u * up.abs_sum;
    const double a = activation(act, g), ad = derivative(act, g);
    const double e_a = reference::lipschitz(act, g, e_g) * e_g + 8.0 * u * (std::fabs(a) + std::fabs(g));
    const double e_ad = reference::curvature(act) * e_g + 16.0 * u * (1.0 + std::fabs(g)) +
                        reference::derivative_jump_near(act, g, e_g);

    double dh = 0.0, dh_abs = 0.0;
    for (int64_t i = 0; i < D; ++i) {
      const double p = static_cast<double>(dy[i]) * static_cast<double>(w.down.row(i)[j]);
      dh += p;
      dh_abs += std::fabs(p);
    }
    const double e_dh = static_cast<double>(D) * u * dh_abs;

    if (gated) {
      const double v = reference::up_factor(act, n.up), vd = reference::up_factor_derivative(act, n.up);
      const double e_v = n.e_up + (act == Activation::clamped_swish ? u * std::fabs(v) : 0.0);
      n.h = a * v;
      n.e_h = e_a * std::fabs(v) + std::fabs(a) * e_v + u * std::fabs(n.h);
      n.du = dh * a * vd;
      n.e_du = (e_dh * std::fabs(a) + std::fabs(dh) * e_a + u * std::fabs(dh * a)) * vd;
      if (reference::near_up_limit(act, n.up, n.e_up))
        n.e_du += std::fabs(dh * a) + e_dh * std::fabs(a) + std::fabs(dh) * e_a;
      n.dg = dh * v * ad;
      n.e_dg = e_dh * std::fabs(v * ad) + std::fabs(dh) * e_v * std::fabs(ad) + std::fabs(dh * v) * e_ad +
               2.0 * u * std::fabs(n.dg);
    } else {
      n.h = a;
      n.e_h = e_a;
      n.du = dh * ad;
      n.e_du = e_dh * std::fabs(ad) + std::fabs(dh) * e_ad + u * std::fabs(n.du);
      n.dg = n.e_dg = 0.0;
    }
  }

  for (int64_t i = 0; i < D; ++i) {
    const double dyi = dy[i];
    for (int64_t j = 0; j < H; ++j) {
      const Unit& n = units[static_cast<size_t>(j)];
      add_term(grads.down, static_cast<size_t>(i * H + j), dyi, n.h, n.e_h);
    }
    if (c.bias) add_term(grads.down_bias, static_cast<size_t>(i), 1.0, dyi, 0.0);
  }
  for (int64_t j = 0; j < H; ++j) {
    const Unit& n = units[static_cast<size_t>(j)];
    for (int64_t k = 0; k < D; ++k) {
      add_term(grads.up, static_cast<size_t>(j * D + k), x[k], n.du, n.e_du);
      if (gated) add_term(grads.gate, static_cast<size_t>(j * D + k), x[k], n.dg, n.e_dg);
    }
    if (c.bias) {
      add_term(grads.up_bias, static_cast<size_t>(j), 1.0, n.du, n.e_du);
      if (gated) add_term(grads.gate_bias, static_cast<size_t>(j), 1.0, n.dg, n.e_dg);
    }
  }
  ++grads.tokens;

  const double terms = static_cast<double>(gated ? 2 * H : H);
  for (int64_t k = 0; k < D; ++k) {
    double acc = 0.0, abs_sum = 0.0, propagated = 0.0;
    for (int64_t j = 0; j < H; ++j) {
      const Unit& n = units[static_cast<size_t>(j)];
      const double wu = w.up.row(j)[k];
      acc += n.du * wu;
      abs_sum += std::fabs(n.du * wu);
      propagated += n.e_du * std::fabs(wu);
      if (gated) {
        const double wg = w.gate.row(j)[k];
        acc += n.dg * wg;
        abs_sum += std::fabs(n.dg * wg);
        propagated += n.e_dg * std::fabs(wg);
      }
    }
    dx_out[k] = acc;
    if (dx_bound_out) dx_bound_out[k] = 2.0 * (propagated + terms * u * abs_sum) + kFloor;
  }
}

}  // namespace ffn
