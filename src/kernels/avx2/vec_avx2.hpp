// Avx2 vector traits for the portable kernel loops (f32_gemm_nt_tiles.hpp, roofs): the
// only place the AVX2 intrinsics of the f32 kernels live. Include only from files
// compiled with -mavx2 -mfma (see src/CMakeLists.txt).
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace ffn::kernels {

struct Avx2 {
  using Vec = __m256;
  static constexpr int64_t lanes = 8;
  static Vec broadcast(float v) { return _mm256_set1_ps(v); }
  static Vec zero() { return _mm256_setzero_ps(); }
  static Vec load(const float* p) { return _mm256_loadu_ps(p); }
  // vmaskmovps neither reads nor faults on masked-off lanes, and zeroes them.
  static Vec load_tail(const float* p, int64_t count) {
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_maskload_ps(p, _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(count)), lane));
  }
  static Vec fmadd(Vec a, Vec b, Vec acc) { return _mm256_fmadd_ps(a, b, acc); }
  // Fixed order: 128-bit halves, then pairs, then lanes.
  static float reduce(Vec v) {
    __m128 q = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    q = _mm_add_ps(q, _mm_movehl_ps(q, q));
    q = _mm_add_ss(q, _mm_movehdup_ps(q));
    return _mm_cvtss_f32(q);
  }
};

// The stores and the add of the outer-product kernels (f32_gemm_nn_tn_tiles.hpp,
// f32_panel_tiles.hpp), which write C a vector at a time.
struct Avx2Store : Avx2 {
  static Vec add(Vec a, Vec b) { return _mm256_add_ps(a, b); }
  static void store(float* p, Vec v) { _mm256_storeu_ps(p, v); }
  // vmaskmovps neither writes nor faults on masked-off lanes.
  static void store_tail(float* p, Vec v, int64_t count) {
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    _mm256_maskstore_ps(p, _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(count)), lane), v);
  }
};

}  // namespace ffn::kernels
