// AVX2+FMA f32 GEMM (C = A·Bᵀ), 3×3 register tile: 9 ymm accumulators of 8 lanes
// (+ 3 weight vectors + 1 activation vector of the 16 registers). Loops in
// f32_gemm_nt_tiles.hpp; only the vector operations live here.
// Compiled with -mavx2 -mfma (this file only); called only when the CPU has both.
#include <immintrin.h>

#include "kernels/f32_gemm_nt_tiles.hpp"
#include "kernels/kernels.hpp"

namespace ffn::kernels {
namespace {

struct Avx2 {
  using Vec = __m256;
  static constexpr int64_t lanes = 8;
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

}  // namespace

void f32_gemm_nt_avx2_3x3(int64_t T, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
                          int64_t ldb, float* C, int64_t ldc) {
  f32_gemm_nt_tiled<Avx2, 3, 3, 48>(T, N, K, A, lda, B, ldb, C, ldc);
}

}  // namespace ffn::kernels
