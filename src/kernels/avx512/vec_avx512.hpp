// Avx512 vector traits for the portable kernel loops (f32_gemm_nt_tiles.hpp, roofs): the
// only place the AVX512 intrinsics of the f32 kernels live. Include only from files
// compiled with -mavx512f -mfma (see src/CMakeLists.txt).
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace ffn::kernels {

struct Avx512 {
  using Vec = __m512;
  static constexpr int64_t lanes = 16;
  static Vec broadcast(float v) { return _mm512_set1_ps(v); }
  static Vec zero() { return _mm512_setzero_ps(); }
  static Vec load(const float* p) { return _mm512_loadu_ps(p); }
  // Masked-off lanes are neither read nor faulted on, and are zero.
  static Vec load_tail(const float* p, int64_t count) {
    return _mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << count) - 1u), p);
  }
  static Vec fmadd(Vec a, Vec b, Vec acc) { return _mm512_fmadd_ps(a, b, acc); }
  // Fixed order: 256-bit halves (shuffle imm 0x4E swaps them), then 128-bit, pairs, lanes.
  static float reduce(Vec v) {
    const __m256 h = _mm512_castps512_ps256(_mm512_add_ps(v, _mm512_shuffle_f32x4(v, v, 0x4E)));
    __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    q = _mm_add_ps(q, _mm_movehl_ps(q, q));
    q = _mm_add_ss(q, _mm_movehdup_ps(q));
    return _mm_cvtss_f32(q);
  }
};

// The stores and the add of the outer-product kernels (f32_gemm_nn_tn_tiles.hpp,
// f32_panel_tiles.hpp), which write C a vector at a time.
struct Avx512Store : Avx512 {
  static Vec add(Vec a, Vec b) { return _mm512_add_ps(a, b); }
  static void store(float* p, Vec v) { _mm512_storeu_ps(p, v); }
  // Masked-off lanes are neither written nor faulted on.
  static void store_tail(float* p, Vec v, int64_t count) {
    _mm512_mask_storeu_ps(p, static_cast<__mmask16>((1u << count) - 1u), v);
  }
};

}  // namespace ffn::kernels
