// erfc in f32 for the vector activation loops, written once over a math traits type M
// (Avx2Math, Avx512Math: add/sub/mul/div, fma, abs, min_keep_nan, negative_select, exp).
//
// For a = |z|:  erfc(a) = exp(−a²) · erfcx(a),  and erfc(−a) = 2 − erfc(a).
// erfcx(a) = erfc(a)·exp(a²) falls smoothly from 1 at a = 0 to ~1/(a√π); with
// t = 1/(1 + a/2) ∈ (0, 1] it is t·Q(t) for a degree-9 polynomial Q, fitted by
// scripts/fit_erfc.py (minimax in relative error for a ∈ [0, 10.1], 0.6 ulp with the
// coefficients rounded to f32). Three things keep the f32 evaluation near that:
//   - t's own rounding (≤ 1 ulp) would move erfcx by up to 2.3 ulp near a = 0; its error
//     is computed exactly (1 + a/2 = s + s_lo, 1 − t·s by FMA) and corrected to first order
//     with erfcx'(a) = 2a·erfcx(a) − 2/√π;
//   - a² is split exactly into hi + lo (FMA), and exp(−a²) = exp(−hi)·(1 − lo): lo is below
//     half an ulp of hi, so the linear term is exact to lo² < 2⁻³⁴, and one exp serves;
//   - exp(−hi) is the last factor, so a result below FLT_MIN is rounded once.
// Measured against double-precision erfc on dense grids of [−12, 12] and ±1e−40…1e5: at
// most 5.8 ulp, 0.4–0.5 on average (SLEEF's erfcf_u15, used before: 2.5 and 0.2), in a
// fraction of SLEEF's time (docs/performance.md). Held to 6 ulp by tests/unit/test_erfc.cpp. GELU takes erfc at
// −x/√2, whose own rounding moves erfc by a² ulp (≥ 4.5 ulp once x < −3) whichever erfc.
// Beyond a = 10.1 erfc(a) < FLT_TRUE_MIN/2, so a is clamped there (which also keeps
// hi − a² from reading Inf − Inf). NaN stays NaN; erfc(±0) = 1, erfc(−Inf) = 2.
#pragma once

namespace ffn::kernels {

template <class M>
typename M::Vec erfc_f32(typename M::Vec z) {
  using V = typename M::Vec;
  // Q(t), highest degree first.
  static constexpr float kQ[] = {0.0119817508f,  -0.121649452f, 0.425248951f, -0.665260136f, 0.417449892f,
                                 -0.0963476971f, 0.224893019f,  0.238776222f, 0.282842219f,  0.282065213f};
  constexpr float kTwoOverSqrtPi = 1.12837917f;
  const V one = M::set1(1.0f), half = M::set1(0.5f);
  const V a = M::min_keep_nan(M::abs(z), 10.1f);
  const V s = M::fma(a, half, one);  // 1 + a/2, rounded
  const V t = M::div(one, s);
  V q = M::set1(kQ[0]);
  for (int i = 1; i < static_cast<int>(sizeof kQ / sizeof kQ[0]); ++i) q = M::fma(q, t, M::set1(kQ[i]));
  V erfcx = M::mul(t, q);
  // 1 + a/2 = s + s_lo exactly (s − 1 is exact for s ∈ [1, 8)); 1/(s + s_lo) = t·(1 + e).
  const V s_lo = M::fma(a, half, M::sub(one, s));
  const V minus_t = M::sub(M::set1(0.0f), t);
  const V e = M::fma(minus_t, s_lo, M::fma(minus_t, s, one));
  // erfcx(a) − erfcx(a at t) ≈ erfcx'(a)·da, da = −2·e/t = −2·e·s.
  const V slope = M::fma(M::add(a, a), erfcx, M::set1(-kTwoOverSqrtPi));
  erfcx = M::fma(M::mul(M::mul(e, s), M::set1(-2.0f)), slope, erfcx);
  const V hi = M::mul(a, a);
  const V lo = M::fma(a, a, M::sub(M::set1(0.0f), hi));  // a² − hi, exact
  const V tail = M::mul(M::mul(erfcx, M::sub(one, lo)), M::exp(M::sub(M::set1(0.0f), hi)));
  return M::negative_select(z, M::sub(M::set1(2.0f), tail), tail);
}

}  // namespace ffn::kernels
