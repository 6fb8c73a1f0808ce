// AVX2 element-wise operations for the activation loops (activation_tiles.hpp): the
// arithmetic, masked tails, SLEEF's vector exp and tanh (1.0 ulp) and erfc_f32 (≤ 6 ulp).
// Include only from files compiled with -mavx2 -mfma (see src/CMakeLists.txt).
#pragma once

#include <immintrin.h>
#include <sleef.h>

#include <cstdint>

#include "kernels/erfc_f32.hpp"

namespace ffn::kernels {

struct Avx2Math {
  using Vec = __m256;
  static constexpr int64_t lanes = 8;
  static __m256i mask(int64_t count) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(count)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static Vec set1(float v) { return _mm256_set1_ps(v); }
  static Vec load(const float* p) { return _mm256_loadu_ps(p); }
  // vmaskmovps neither reads nor writes masked-off lanes, and reads them as zero.
  static Vec load_tail(const float* p, int64_t count) { return _mm256_maskload_ps(p, mask(count)); }
  static void store(float* p, Vec v) { _mm256_storeu_ps(p, v); }
  static void store_tail(float* p, Vec v, int64_t count) { _mm256_maskstore_ps(p, mask(count), v); }
  static Vec add(Vec a, Vec b) { return _mm256_add_ps(a, b); }
  static Vec sub(Vec a, Vec b) { return _mm256_sub_ps(a, b); }
  static Vec mul(Vec a, Vec b) { return _mm256_mul_ps(a, b); }
  static Vec div(Vec a, Vec b) { return _mm256_div_ps(a, b); }
  static Vec fma(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }  // a·b + c, rounded once
  static Vec abs(Vec v) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v); }
  // min(v, hi) with NaN kept (vminps returns its second operand when either is NaN).
  static Vec min_keep_nan(Vec v, float hi) { return _mm256_min_ps(set1(hi), v); }
  // z < 0 ? if_negative : otherwise, lane by lane (NaN and −0 take otherwise).
  static Vec negative_select(Vec z, Vec if_negative, Vec otherwise) {
    return _mm256_blendv_ps(otherwise, if_negative, _mm256_cmp_ps(z, _mm256_setzero_ps(), _CMP_LT_OQ));
  }
  // clamp(v, lo, hi); a NaN v gives lo or hi (callers keep NaN through another term).
  static Vec clamp(Vec v, float lo, float hi) { return _mm256_min_ps(_mm256_max_ps(v, set1(lo)), set1(hi)); }
  static Vec clamp_keep_nan(Vec v, float lo, float hi) { return _mm256_min_ps(set1(hi), _mm256_max_ps(set1(lo), v)); }
  // v < 0 ? 0 : v, lane by lane: NaN and −0 are kept (the comparison is false for them).
  static Vec relu(Vec v) { return _mm256_andnot_ps(_mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_LT_OQ), v); }
  // z > 0 ? 1 : 0 (NaN gives 0).
  static Vec step(Vec z) {
    return _mm256_and_ps(_mm256_cmp_ps(z, _mm256_setzero_ps(), _CMP_GT_OQ), _mm256_set1_ps(1.0f));
  }
  static Vec exp(Vec v) { return Sleef_expf8_u10avx2(v); }
  static Vec erfc(Vec v) { return erfc_f32<Avx2Math>(v); }
  static Vec tanh(Vec v) { return Sleef_tanhf8_u10avx2(v); }
};

}  // namespace ffn::kernels
