// AVX2+FMA f32 GEMM (C = A·Bᵀ) with a 3×3 register tile: 3 activation rows × 3 weight
// rows, 9 ymm accumulators (9 + 3 + 1 registers of the 16), each accumulating 8 lanes of k
// (lane j holds k ≡ j mod 8). The K tail is a masked load into the same lanes; lanes are
// summed by one fixed shuffle tree. Edge tiles instantiate fewer rows of the same code, so
// results do not depend on how T and N are split.
// Compiled with -mavx2 -mfma (this file only); called only when the CPU has both.
#include <immintrin.h>

#include "kernels/kernels.hpp"

namespace ffn::kernels {
namespace {

inline float reduce8(__m256 v) {
  __m128 q = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  q = _mm_add_ps(q, _mm_movehl_ps(q, q));
  q = _mm_add_ss(q, _mm_movehdup_ps(q));
  return _mm_cvtss_f32(q);
}

inline __m256i tail_mask(int64_t remaining) {
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(remaining)), lane);
}

template <int MT, int NT>
void tile(int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb, float* C, int64_t ldc) {
  __m256 acc[MT][NT];
  for (int i = 0; i < MT; ++i)
    for (int j = 0; j < NT; ++j) acc[i][j] = _mm256_setzero_ps();
  int64_t k = 0;
  for (; k + 8 <= K; k += 8) {
    __m256 b[NT];
    for (int j = 0; j < NT; ++j) b[j] = _mm256_loadu_ps(B + j * ldb + k);
    for (int i = 0; i < MT; ++i) {
      const __m256 a = _mm256_loadu_ps(A + i * lda + k);
      for (int j = 0; j < NT; ++j) acc[i][j] = _mm256_fmadd_ps(a, b[j], acc[i][j]);
    }
  }
  if (k < K) {
    const __m256i mask = tail_mask(K - k);
    __m256 b[NT];
    for (int j = 0; j < NT; ++j) b[j] = _mm256_maskload_ps(B + j * ldb + k, mask);
    for (int i = 0; i < MT; ++i) {
      const __m256 a = _mm256_maskload_ps(A + i * lda + k, mask);
      for (int j = 0; j < NT; ++j) acc[i][j] = _mm256_fmadd_ps(a, b[j], acc[i][j]);
    }
  }
  for (int i = 0; i < MT; ++i)
    for (int j = 0; j < NT; ++j) C[i * ldc + j] = reduce8(acc[i][j]);
}

template <int MT>
void row_of_tiles(int64_t N, int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb,
                  float* C, int64_t ldc) {
  int64_t n = 0;
  for (; n + 3 <= N; n += 3) tile<MT, 3>(K, A, lda, B + n * ldb, ldb, C + n, ldc);
  switch (N - n) {
    case 2: tile<MT, 2>(K, A, lda, B + n * ldb, ldb, C + n, ldc); break;
    case 1: tile<MT, 1>(K, A, lda, B + n * ldb, ldb, C + n, ldc); break;
    default: break;
  }
}

}  // namespace

void f32_gemm_nt_avx2_3x3(int64_t T, int64_t N, int64_t K, const float* A, int64_t lda,
                          const float* B, int64_t ldb, float* C, int64_t ldc) {
  constexpr int64_t kPanel = 48;  // weight rows kept in L2 while all token tiles pass
  for (int64_t n0 = 0; n0 < N; n0 += kPanel) {
    const int64_t nb = N - n0 < kPanel ? N - n0 : kPanel;
    const float* Bp = B + n0 * ldb;
    int64_t t = 0;
    for (; t + 3 <= T; t += 3) row_of_tiles<3>(nb, K, A + t * lda, lda, Bp, ldb, C + t * ldc + n0, ldc);
    switch (T - t) {
      case 2: row_of_tiles<2>(nb, K, A + t * lda, lda, Bp, ldb, C + t * ldc + n0, ldc); break;
      case 1: row_of_tiles<1>(nb, K, A + t * lda, lda, Bp, ldb, C + t * ldc + n0, ldc); break;
      default: break;
    }
  }
}

}  // namespace ffn::kernels
