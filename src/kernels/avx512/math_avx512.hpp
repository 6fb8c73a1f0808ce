// AVX-512 element-wise operations for the activation loops (activation_tiles.hpp): the
// arithmetic, masked tails, SLEEF's vector exp and tanh (1.0 ulp) and erfc_f32 (≤ 6 ulp).
// Include only from files compiled with -mavx512f -mavx2 -mfma (see src/CMakeLists.txt).
#pragma once

#include <immintrin.h>
#include <sleef.h>

#include <cstdint>

#include "kernels/erfc_f32.hpp"

namespace ffn::kernels {

struct Avx512Math {
  using Vec = __m512;
  static constexpr int64_t lanes = 16;
  static __mmask16 mask(int64_t count) { return static_cast<__mmask16>((1u << count) - 1u); }
  static Vec set1(float v) { return _mm512_set1_ps(v); }
  static Vec load(const float* p) { return _mm512_loadu_ps(p); }
  // Masked-off lanes are neither read nor written, and read as zero.
  static Vec load_tail(const float* p, int64_t count) { return _mm512_maskz_loadu_ps(mask(count), p); }
  static void store(float* p, Vec v) { _mm512_storeu_ps(p, v); }
  static void store_tail(float* p, Vec v, int64_t count) { _mm512_mask_storeu_ps(p, mask(count), v); }
  static Vec add(Vec a, Vec b) { return _mm512_add_ps(a, b); }
  static Vec sub(Vec a, Vec b) { return _mm512_sub_ps(a, b); }
  static Vec mul(Vec a, Vec b) { return _mm512_mul_ps(a, b); }
  static Vec div(Vec a, Vec b) { return _mm512_div_ps(a, b); }
  static Vec fma(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }  // a·b + c, rounded once
  static Vec abs(Vec v) { return _mm512_abs_ps(v); }
  // min(v, hi) with NaN kept (vminps returns its second operand when either is NaN).
  static Vec min_keep_nan(Vec v, float hi) { return _mm512_min_ps(set1(hi), v); }
  // z < 0 ? if_negative : otherwise, lane by lane (NaN and −0 take otherwise).
  static Vec negative_select(Vec z, Vec if_negative, Vec otherwise) {
    return _mm512_mask_mov_ps(otherwise, _mm512_cmp_ps_mask(z, _mm512_setzero_ps(), _CMP_LT_OQ), if_negative);
  }
  // clamp(v, lo, hi); a NaN v gives lo or hi (callers keep NaN through another term).
  static Vec clamp(Vec v, float lo, float hi) { return _mm512_min_ps(_mm512_max_ps(v, set1(lo)), set1(hi)); }
  // clamp(v, lo, hi) with NaN kept (v is the second operand of both).
  static Vec clamp_keep_nan(Vec v, float lo, float hi) { return _mm512_min_ps(set1(hi), _mm512_max_ps(set1(lo), v)); }
  // v < 0 ? 0 : v, lane by lane: NaN and −0 are kept (the comparison is false for them).
  static Vec relu(Vec v) { return negative_select(v, _mm512_setzero_ps(), v); }
  // z > 0 ? 1 : 0 (NaN gives 0).
  static Vec step(Vec z) {
    return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(z, _mm512_setzero_ps(), _CMP_GT_OQ), _mm512_set1_ps(1.0f));
  }
  static Vec exp(Vec v) { return Sleef_expf16_u10avx512f(v); }
  static Vec erfc(Vec v) { return erfc_f32<Avx512Math>(v); }
  static Vec tanh(Vec v) { return Sleef_tanhf16_u10avx512f(v); }
};

}  // namespace ffn::kernels
