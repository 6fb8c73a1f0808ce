// AVX-512F f32 GEMM (C = A·Bᵀ) with a 4×4 register tile: 4 activation rows × 4 weight
// rows, 16 zmm accumulators, each accumulating 16 lanes of k (lane j holds k ≡ j mod 16).
// The K tail (K mod 16) is a masked load into the same lanes; the 16 lanes are then summed
// by one fixed shuffle tree. Edge tiles (fewer than 4 rows) run the same code with fewer
// rows instantiated, so every element sees the same operations: results do not depend on
// how T and N are split.
// Compiled with -mavx512f -mfma (this file only); called only when the CPU has AVX-512F.
#include <immintrin.h>

#include "kernels/kernels.hpp"

namespace ffn::kernels {
namespace {

// Fixed reduction order: halves, then quarters, then pairs, then lanes.
inline float reduce16(__m512 v) {
  // Swap the 256-bit halves (shuffle imm 0x4E = blocks 2,3,0,1) and add.
  const __m256 h = _mm512_castps512_ps256(_mm512_add_ps(v, _mm512_shuffle_f32x4(v, v, 0x4E)));
  __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  q = _mm_add_ps(q, _mm_movehl_ps(q, q));
  q = _mm_add_ss(q, _mm_movehdup_ps(q));
  return _mm_cvtss_f32(q);
}

template <int MT, int NT>
void tile(int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb, float* C, int64_t ldc) {
  __m512 acc[MT][NT];
  for (int i = 0; i < MT; ++i)
    for (int j = 0; j < NT; ++j) acc[i][j] = _mm512_setzero_ps();
  int64_t k = 0;
  for (; k + 16 <= K; k += 16) {
    __m512 b[NT];
    for (int j = 0; j < NT; ++j) b[j] = _mm512_loadu_ps(B + j * ldb + k);
    for (int i = 0; i < MT; ++i) {
      const __m512 a = _mm512_loadu_ps(A + i * lda + k);
      for (int j = 0; j < NT; ++j) acc[i][j] = _mm512_fmadd_ps(a, b[j], acc[i][j]);
    }
  }
  if (k < K) {
    const auto mask = static_cast<__mmask16>((1u << (K - k)) - 1u);
    __m512 b[NT];
    for (int j = 0; j < NT; ++j) b[j] = _mm512_maskz_loadu_ps(mask, B + j * ldb + k);
    for (int i = 0; i < MT; ++i) {
      const __m512 a = _mm512_maskz_loadu_ps(mask, A + i * lda + k);
      for (int j = 0; j < NT; ++j) acc[i][j] = _mm512_fmadd_ps(a, b[j], acc[i][j]);
    }
  }
  for (int i = 0; i < MT; ++i)
    for (int j = 0; j < NT; ++j) C[i * ldc + j] = reduce16(acc[i][j]);
}

template <int MT>
void row_of_tiles(int64_t N, int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb,
                  float* C, int64_t ldc) {
  int64_t n = 0;
  for (; n + 4 <= N; n += 4) tile<MT, 4>(K, A, lda, B + n * ldb, ldb, C + n, ldc);
  switch (N - n) {
    case 3: tile<MT, 3>(K, A, lda, B + n * ldb, ldb, C + n, ldc); break;
    case 2: tile<MT, 2>(K, A, lda, B + n * ldb, ldb, C + n, ldc); break;
    case 1: tile<MT, 1>(K, A, lda, B + n * ldb, ldb, C + n, ldc); break;
    default: break;
  }
}

}  // namespace

void f32_gemm_nt_avx512_4x4(int64_t T, int64_t N, int64_t K, const float* A, int64_t lda,
                            const float* B, int64_t ldb, float* C, int64_t ldc) {
  // Weight-row panels of 64 outer, tokens inner: a panel (64 × K floats) stays in L2 while
  // every token tile passes over it.
  constexpr int64_t kPanel = 64;
  for (int64_t n0 = 0; n0 < N; n0 += kPanel) {
    const int64_t nb = N - n0 < kPanel ? N - n0 : kPanel;
    const float* Bp = B + n0 * ldb;
    int64_t t = 0;
    for (; t + 4 <= T; t += 4) row_of_tiles<4>(nb, K, A + t * lda, lda, Bp, ldb, C + t * ldc + n0, ldc);
    switch (T - t) {
      case 3: row_of_tiles<3>(nb, K, A + t * lda, lda, Bp, ldb, C + t * ldc + n0, ldc); break;
      case 2: row_of_tiles<2>(nb, K, A + t * lda, lda, Bp, ldb, C + t * ldc + n0, ldc); break;
      case 1: row_of_tiles<1>(nb, K, A + t * lda, lda, Bp, ldb, C + t * ldc + n0, ldc); break;
      default: break;
    }
  }
}

}  // namespace ffn::kernels
