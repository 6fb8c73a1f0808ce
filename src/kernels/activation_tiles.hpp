// The activations and their derivatives, written once over an element-wise math traits
// type M (ScalarMath, Avx2Math, Avx512Math, NeonMath: add/sub/mul/div, relu, step, min_keep_nan,
// clamp_keep_nan, exp, erfc, tanh, loads and masked tails). Every formula is evaluated in
// the same order of f32 operations on every ISA, so ISAs differ only by their exp / erfc /
// tanh (libm's within a few ulps; SLEEF's exp / tanh within 1.0 ulp, erfc_f32.hpp's erfc
// within 6). Each element's result depends on its inputs alone — the tail of an array goes
// through the same vector functions under a mask — so splitting an array anywhere (across
// threads or tiles) never changes a bit.
#pragma once

#include <algorithm>
#include <cstdint>

#include "ffn/config.hpp"
#include "kernels/activation_kernels.hpp"

namespace ffn::kernels {

template <class M>
struct ActivationFormulas {
  using V = typename M::Vec;
  static constexpr float kSqrtHalf = 0.70710678118654752f;     // 1/√2
  static constexpr float kInvSqrt2Pi = 0.39894228040143268f;   // 1/√(2π)
  static constexpr float kSqrt2OverPi = 0.79788456080286536f;  // √(2/π)
  static constexpr float kCubic = 0.044715f;

  // x·Φ(x) = 0.5·x·erfc(−x/√2): erfc keeps full relative accuracy for negative x, where
  // 1 + erf(x/√2) would cancel.
  static V gelu(V v) { return M::mul(M::mul(M::set1(0.5f), v), M::erfc(M::mul(v, M::set1(-kSqrtHalf)))); }
  // 0.5·x·(1 + tanh(s)), s = √(2/π)·(x + 0.044715·x³), as PyTorch's approximate='tanh',
  // evaluated as x·σ(2s) (1 + tanh(s) = 2σ(2s)): the same function without the
  // cancellation of 1 + tanh(s) in f32, which loses every digit once x < −4 or so.
  static V gelu_tanh(V v) { return M::mul(v, sigmoid(M::mul(M::set1(2.0f), tanh_arg(v)))); }
  static V tanh_arg(V v) {
    const V cube = M::mul(M::mul(M::mul(M::set1(kCubic), v), v), v);
    return M::mul(M::set1(kSqrt2OverPi), M::add(v, cube));
  }
  // σ(x) = 1/(1 + e⁻ˣ); 1 − σ(x) is computed as σ(−x), never by subtraction, which would
  // cancel for x ≫ 0.
  static V sigmoid(V v) { return M::div(M::set1(1.0f), M::add(M::set1(1.0f), M::exp(M::mul(v, M::set1(-1.0f))))); }
  static V sigmoid_complement(V v) { return M::div(M::set1(1.0f), M::add(M::set1(1.0f), M::exp(v))); }
  static V swish(V v) { return M::mul(v, sigmoid(v)); }
  // x·σ(α·x), α = 1.702, as transformers' QuickGELUActivation evaluates it (α·x, σ, the
  // product). clamped_swish below is this at min(g, 7).
  static constexpr float kQuickGeluAlpha = 1.702f;
  static V quick_gelu(V v) { return M::mul(v, sigmoid(M::mul(v, M::set1(kQuickGeluAlpha)))); }
  // relu(x)², as ReLUSquaredActivation: relu keeps NaN and −0, and (−0)² = +0 as torch.square.
  static V relu2(V v) {
    const V r = M::relu(v);
    return M::mul(r, r);
  }
  // min(max(x, 0), 6), as torch's relu6 (a clamp): NaN and −0 kept. Written as relu, then the
  // NaN-keeping min, because a max with +0 turns −0 into +0 on some ISAs (Arm's FMAX).
  static constexpr float kRelu6Limit = 6.0f;
  static V relu6(V v) { return M::min_keep_nan(M::relu(v), kRelu6Limit); }

  // gpt-oss's gated activation (config.hpp, clamped_swish), as GptOssExperts evaluates it:
  // the gate m·σ(α·m), m = min(g, 7), and the up factor clamp(u, −7, 7) + 1, both keeping
  // NaN as PyTorch's clamp does. 7 and α = 1.702 are fixed (gpt-oss's swiglu_limit, alpha).
  static constexpr float kOaiLimit = 7.0f, kOaiAlpha = kQuickGeluAlpha;
  static constexpr float kOaiAboveLimit = 0x1.c00002p+2f;  // the float after 7: v ≤ 7 ⇔ 7⁺ − v > 0
  static V clamped_swish(V g) { return quick_gelu(M::min_keep_nan(g, kOaiLimit)); }
  static V oai_up(V u) { return M::add(M::clamp_keep_nan(u, -kOaiLimit, kOaiLimit), M::set1(1.0f)); }

  // Derivatives, the same functions as PyTorch's autograd formulas (aten's GeluBackward,
  // silu_backward, sigmoid_backward, threshold_backward; relu' = 0 at 0 and for NaN), with
  // 1 − σ as σ(−x) and 1 ± tanh through σ, for full relative accuracy.
  // d/dz z·Φ(z) = Φ(z) + z·φ(z), Φ through erfc as in the forward.
  static V gelu_grad(V z) {
    const V cdf = M::mul(M::set1(0.5f), M::erfc(M::mul(z, M::set1(-kSqrtHalf))));
    const V pdf = M::exp(M::mul(M::mul(M::set1(-0.5f), z), z));
    return M::add(cdf, M::mul(M::mul(z, M::set1(kInvSqrt2Pi)), pdf));
  }
  // d/dz 0.5·z·(1 + tanh(s)) = 0.5·(1 + t) + 0.5·z·(1 − t²)·c·(1 + 3k·z²), t = tanh(s);
  // with 0.5·(1 + t) = σ(2s) and 1 − t² = 4·σ(2s)·σ(−2s):  σ(2s) + 2z·σ(2s)·σ(−2s)·c·(1 + 3k·z²).
  // For |z| ≥ 10⁴, σ(2s)·σ(−2s) is exactly 0; z is clamped there in the slope term so that
  // z³ cannot overflow into 0·Inf = NaN.
  static V gelu_tanh_grad(V z) {
    const V two_s = M::mul(M::set1(2.0f), tanh_arg(z));
    const V p = sigmoid(two_s), q = sigmoid_complement(two_s);
    z = M::clamp(z, -1e4f, 1e4f);
    const V inner = M::add(M::set1(1.0f), M::mul(M::mul(M::set1(3.0f * kCubic), z), z));
    const V slope = M::mul(M::mul(M::mul(M::mul(M::mul(M::set1(2.0f), z), p), q), M::set1(kSqrt2OverPi)), inner);
    return M::add(p, slope);
  }
  static V sigmoid_grad(V z) { return M::mul(sigmoid(z), sigmoid_complement(z)); }
  // d/dz z·σ(z) = σ(z)·(1 + z·(1 − σ(z))).
  static V swish_grad(V z) { return M::mul(sigmoid(z), M::add(M::set1(1.0f), M::mul(z, sigmoid_complement(z)))); }
  // d/dx x·σ(α·x) = σ(z) + α·x·σ(z)·σ(−z) = σ(z)·(1 + z·σ(−z)), z = α·x: Swish's slope at
  // α·x, with σ(−z) never as 1 − σ(z). At x = ±Inf it is NaN (∞·0), as autograd's product rule
  // gives it through x·sigmoid(1.702·x).
  static V quick_gelu_grad(V x) { return swish_grad(M::mul(x, M::set1(kQuickGeluAlpha))); }
  // d/dz relu(z)² = 2·relu(z): 0 for z ≤ 0, NaN for NaN (autograd's pow backward of NaN).
  static V relu2_grad(V z) { return M::mul(M::set1(2.0f), M::relu(z)); }
  // d/dz relu6(z) = [0 < z < 6]: aten's hardtanh_backward passes the gradient strictly inside
  // (0, 6) and gives 0 at both ends, beyond them and (its vectorised loop) for NaN. 6 − z is
  // exact for z near 6 (Sterbenz), so the test z < 6 is exact.
  static V relu6_grad(V z) { return M::mul(M::step(z), M::step(M::sub(M::set1(kRelu6Limit), z))); }
  // d/dg m·σ(α·m) = [g ≤ 7]·σ(z)·(1 + z·σ(−z)), z = α·m: autograd's clamp passes the
  // gradient where g is at most the limit, 7 itself included, and gives 0 above it. The
  // slope is taken at m, so that g = +Inf gives 0 (not 0·NaN); a NaN g gives NaN.
  static V clamped_swish_grad(V g) { return M::mul(below_limit(g), quick_gelu_grad(M::min_keep_nan(g, kOaiLimit))); }
  // d/du of clamp(u, −7, 7) + 1: 1 for −7 ≤ u ≤ 7 (the ends included, as autograd has it),
  // else 0 (NaN too).
  static V oai_up_grad(V u) { return M::mul(below_limit(u), below_limit(M::mul(u, M::set1(-1.0f)))); }
  static V below_limit(V v) { return M::step(M::sub(M::set1(kOaiAboveLimit), v)); }  // v ≤ 7 ? 1 : 0
};

// Element-wise loops: full vectors, then one masked vector for the tail.
template <class M, class F>
void map_unary(const float* in, float* out, int64_t n, F f) {
  int64_t i = 0;
  for (; i + M::lanes <= n; i += M::lanes) M::store(out + i, f(M::load(in + i)));
  if (i < n) M::store_tail(out + i, f(M::load_tail(in + i, n - i)), n - i);
}
template <class M, class F>
void map_binary(const float* a, const float* b, float* out, int64_t n, F f) {
  int64_t i = 0;
  for (; i + M::lanes <= n; i += M::lanes) M::store(out + i, f(M::load(a + i), M::load(b + i)));
  if (i < n) M::store_tail(out + i, f(M::load_tail(a + i, n - i), M::load_tail(b + i, n - i)), n - i);
}

template <class M, class F>
void map_ternary(const float* a, const float* b, const float* c, float* out, int64_t n, F f) {
  int64_t i = 0;
  for (; i + M::lanes <= n; i += M::lanes) M::store(out + i, f(M::load(a + i), M::load(b + i), M::load(c + i)));
  if (i < n) {
    const int64_t r = n - i;
    M::store_tail(out + i, f(M::load_tail(a + i, r), M::load_tail(b + i, r), M::load_tail(c + i, r)), r);
  }
}

// Calls body(act) with act the activation's formula as a callable on vectors.
template <class M, class Body>
void with_activation(Activation a, Body body) {
  using A = ActivationFormulas<M>;
  using V = typename M::Vec;
  switch (a) {
    case Activation::relu:
      return body([](V v) { return M::relu(v); });
    case Activation::gelu:
      return body([](V v) { return A::gelu(v); });
    case Activation::gelu_tanh:
      return body([](V v) { return A::gelu_tanh(v); });
    case Activation::swish:
      return body([](V v) { return A::swish(v); });
    case Activation::sigmoid:
      return body([](V v) { return A::sigmoid(v); });
    case Activation::identity:
      return body([](V v) { return v; });
    case Activation::clamped_swish:
      return body([](V v) { return A::clamped_swish(v); });
    case Activation::quick_gelu:
      return body([](V v) { return A::quick_gelu(v); });
    case Activation::relu2:
      return body([](V v) { return A::relu2(v); });
    case Activation::relu6:
      return body([](V v) { return A::relu6(v); });
  }
}
template <class M, class Body>
void with_derivative(Activation a, Body body) {
  using A = ActivationFormulas<M>;
  using V = typename M::Vec;
  switch (a) {
    case Activation::relu:
      return body([](V z) { return M::step(z); });
    case Activation::gelu:
      return body([](V z) { return A::gelu_grad(z); });
    case Activation::gelu_tanh:
      return body([](V z) { return A::gelu_tanh_grad(z); });
    case Activation::swish:
      return body([](V z) { return A::swish_grad(z); });
    case Activation::sigmoid:
      return body([](V z) { return A::sigmoid_grad(z); });
    case Activation::identity:
      return body([](V) { return M::set1(1.0f); });
    case Activation::clamped_swish:
      return body([](V z) { return A::clamped_swish_grad(z); });
    case Activation::quick_gelu:
      return body([](V z) { return A::quick_gelu_grad(z); });
    case Activation::relu2:
      return body([](V z) { return A::relu2_grad(z); });
    case Activation::relu6:
      return body([](V z) { return A::relu6_grad(z); });
  }
}

// The kernels of activation_kernels.hpp, for one ISA's math M (contracts there). A gated
// block multiplies act(g) by u, except clamped_swish's, which multiplies by
// clamp(u, −7, 7) + 1 (A::oai_up); which of the two is chosen once per call, so the other
// activations keep their plain loop.
template <class M>
struct ActivationLoops {
  using V = typename M::Vec;
  using A = ActivationFormulas<M>;
  static void activation(Activation a, int64_t rows, int64_t cols, const float* in, int64_t ld_in, float* out,
                         int64_t ld_out) {
    with_activation<M>(a, [&](auto act) {
      for (int64_t r = 0; r < rows; ++r) map_unary<M>(in + r * ld_in, out + r * ld_out, cols, act);
    });
  }
  static void gated(Activation a, int64_t rows, int64_t cols, const float* g, int64_t ld_g, const float* u,
                    int64_t ld_u, float* out, int64_t ld_out) {
    if (a == Activation::clamped_swish) return gated_rows<true>(a, rows, cols, g, ld_g, u, ld_u, out, ld_out);
    gated_rows<false>(a, rows, cols, g, ld_g, u, ld_u, out, ld_out);
  }
  static void backward(Activation a, const float* z, const float* dh, float* h, float* dz, int64_t n) {
    activation(a, 1, n, z, n, h, n);
    with_derivative<M>(a,
                       [&](auto grad) { map_binary<M>(z, dh, dz, n, [&](V zv, V d) { return M::mul(d, grad(zv)); }); });
  }
  static void gated_backward(Activation a, const float* g, const float* u, const float* dh, float* h, float* du,
                             float* dg, int64_t n) {
    if (a == Activation::clamped_swish) return gated_backward_of<true>(a, g, u, dh, h, du, dg, n);
    gated_backward_of<false>(a, g, u, dh, h, du, dg, n);
  }

  // u as the gated product takes it: itself, or gpt-oss's clamp(u, −7, 7) + 1.
  template <bool kOaiUp>
  static V up_factor(V u) {
    if constexpr (kOaiUp) return A::oai_up(u);
    return u;
  }
  template <bool kOaiUp>
  static void gated_rows(Activation a, int64_t rows, int64_t cols, const float* g, int64_t ld_g, const float* u,
                         int64_t ld_u, float* out, int64_t ld_out) {
    with_activation<M>(a, [&](auto act) {
      for (int64_t r = 0; r < rows; ++r)
        map_binary<M>(g + r * ld_g, u + r * ld_u, out + r * ld_out, cols,
                      [&](V gv, V uv) { return M::mul(act(gv), up_factor<kOaiUp>(uv)); });
    });
  }
  // With v = up_factor(u): h = act(g)·v, du = (dh·act(g))·v'(u), dg = (dh·v)·act'(g), in the
  // order autograd multiplies (v' = 1 for the plain factor, and is not multiplied then).
  template <bool kOaiUp>
  static void gated_backward_of(Activation a, const float* g, const float* u, const float* dh, float* h, float* du,
                                float* dg, int64_t n) {
    // du holds act(g) first; h = act(g)·v is then the forward's product of the same floats.
    activation(a, 1, n, g, n, du, n);
    map_binary<M>(du, u, h, n, [](V s, V uv) { return M::mul(s, up_factor<kOaiUp>(uv)); });
    if constexpr (kOaiUp) {
      map_ternary<M>(dh, du, u, du, n, [](V d, V s, V uv) { return M::mul(M::mul(d, s), A::oai_up_grad(uv)); });
    } else {
      map_binary<M>(dh, du, du, n, [](V d, V s) { return M::mul(d, s); });
    }
    with_derivative<M>(a, [&](auto grad) {
      map_ternary<M>(dh, u, g, dg, n,
                     [&](V d, V uv, V gv) { return M::mul(M::mul(d, up_factor<kOaiUp>(uv)), grad(gv)); });
    });
  }
  static void erfc(const float* z, float* out, int64_t n) {
    map_unary<M>(z, out, n, [](V v) { return M::erfc(v); });
  }
};

}  // namespace ffn::kernels
