// Weight rows widened to their exact f32 values with AVX2 + F16C, 8 or 32 at a time: the
// large-T forward widens a panel of rows per call, O(N·K) work beside the GEMM's O(T·N·K),
// and the scalar f16 decoder would cost as much as the GEMM at T ≈ 50. The values equal
// widen_rows_scalar's (every conversion, and q·d with |q| ≤ 127 and d a binary16, is exact).
// Compiled with -mavx2 -mfma -mf16c (this file only).
#include <immintrin.h>

#include "ffn/quant.hpp"
#include "kernels/kernels.hpp"

namespace ffn::kernels {
namespace {

__m128i load128(const void* p) { return _mm_loadu_si128(static_cast<const __m128i*>(p)); }

void widen_half(bool bf16, const uint16_t* src, float* dst, int64_t K) {
  int64_t k = 0;
  for (; k + 8 <= K; k += 8) {
    const __m128i h = load128(src + k);
    const __m256 v = bf16 ? _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)) : _mm256_cvtph_ps(h);
    _mm256_storeu_ps(dst + k, v);
  }
  for (; k < K; ++k) dst[k] = bf16 ? bf16_to_f32(src[k]) : f16_to_f32(src[k]);
}

// 8 int8 values (as the low 8 bytes of q) times d.
void store8(float* dst, __m128i q, __m256 d) {
  _mm256_storeu_ps(dst, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)), d));
}

}  // namespace

void widen_rows_avx2(WeightType type, int64_t rows, int64_t K, const std::byte* B, int64_t ldb, float* out) {
  if (type == WeightType::f32 || ((type == WeightType::q8_0 || type == WeightType::q4_0) && K % kQuantBlock)) {
    widen_rows_scalar(type, rows, K, B, ldb, out);
    return;
  }
  for (int64_t r = 0; r < rows; ++r) {
    const std::byte* src = B + r * ldb;
    float* dst = out + r * K;
    if (type == WeightType::bf16 || type == WeightType::f16) {
      widen_half(type == WeightType::bf16, reinterpret_cast<const uint16_t*>(src), dst, K);
      continue;
    }
    for (int64_t b = 0; b < K / kQuantBlock; ++b, dst += kQuantBlock) {
      if (type == WeightType::q8_0) {
        const auto& blk = reinterpret_cast<const BlockQ8_0*>(src)[b];
        const __m256 d = _mm256_set1_ps(_cvtsh_ss(blk.d));
        for (int j = 0; j < 32; j += 8)
          store8(dst + j, _mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk.qs + j)), d);
      } else {
        const auto& blk = reinterpret_cast<const BlockQ4_0*>(src)[b];
        const __m256 d = _mm256_set1_ps(_cvtsh_ss(blk.d));
        const __m128i q = load128(blk.qs);
        const __m128i lo = _mm_sub_epi8(_mm_and_si128(q, _mm_set1_epi8(0x0F)), _mm_set1_epi8(8));
        const __m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(q, 4), _mm_set1_epi8(0x0F)), _mm_set1_epi8(8));
        store8(dst, lo, d);
        store8(dst + 8, _mm_srli_si128(lo, 8), d);
        store8(dst + 16, hi, d);
        store8(dst + 24, _mm_srli_si128(hi, 8), d);
      }
    }
  }
}

}  // namespace ffn::kernels
