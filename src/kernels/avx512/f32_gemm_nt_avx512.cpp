// AVX-512F f32 GEMM (C = A·Bᵀ), 4×4 register tile: 16 zmm accumulators of 16 lanes
// (+ 4 weight vectors + 1 activation vector of the 32 registers). Loops in
// f32_gemm_nt_tiles.hpp; only the vector operations live here.
// Compiled with -mavx512f -mfma (this file only); called only when the CPU has AVX-512F.
#include <immintrin.h>

#include "kernels/f32_gemm_nt_tiles.hpp"
#include "kernels/kernels.hpp"

namespace ffn::kernels {
namespace {

struct Avx512 {
  using Vec = __m512;
  static constexpr int64_t lanes = 16;
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

}  // namespace

void f32_gemm_nt_avx512_4x4(int64_t T, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
                            int64_t ldb, float* C, int64_t ldc) {
  f32_gemm_nt_tiled<Avx512, 4, 4, 64>(T, N, K, A, lda, B, ldb, C, ldc);
}

}  // namespace ffn::kernels
