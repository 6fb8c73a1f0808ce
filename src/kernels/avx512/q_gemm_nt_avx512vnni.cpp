// AVX-512 VNNI integer GEMM (q8_0 / q4_0 weights × q8_0 activations, contract in
// kernels.hpp), 4×4 tile: one zmm per block pair. vpdpbusd multiplies unsigned by signed
// bytes, so the weights enter as unsigned — q8_0 as w + 128 (one xor), q4_0 as its nibbles
// w + 8 — and the dot product starts from the activations' precomputed −offset·Σx of each
// group of 4, which makes every 32-bit lane the exact Σ w·x of its 4 products.
// Compiled with -mavx512f -mavx512bw -mavx512vl -mavx512vnni -mfma -mf16c (this file only);
// called only when the CPU has them all.
#include "ffn/quant.hpp"
#include "kernels/avx512/vec_avx512.hpp"
#include "kernels/q_gemm_nt_tiles.hpp"

namespace ffn::kernels {
namespace {

struct Vnni {
  using Acc = __m512;
  struct X {
    __m512i q, corr;
  };
  static Acc zero() { return _mm512_setzero_ps(); }
  static float reduce(Acc v) { return Avx512::reduce(v); }

  static __m256i load256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
  static __m128i load128(const void* p) { return _mm_loadu_si128(static_cast<const __m128i*>(p)); }

  // q8_0: [b0.qs | b1.qs] + 128 as unsigned bytes. q4_0: 128-bit lanes [b0.qs, b0.qs, b1.qs,
  // b1.qs], the second of each pair shifted right 4, masked to nibbles: values 0…31 of
  // each block in order.
  template <WeightType Type, bool Half, class Block>
  static __m512i load_w(const Block* b) {
    if constexpr (Type == WeightType::q8_0) {
      const __m512i w = Half ? _mm512_zextsi256_si512(load256(b[0].qs))
                             : _mm512_inserti64x4(_mm512_castsi256_si512(load256(b[0].qs)), load256(b[1].qs), 1);
      return _mm512_xor_si512(w, _mm512_set1_epi8(static_cast<char>(0x80)));
    } else {
      __m512i q = _mm512_broadcast_i32x4(load128(b[0].qs));
      if constexpr (!Half) q = _mm512_mask_broadcast_i32x4(q, 0xFF00, load128(b[1].qs));
      q = _mm512_srlv_epi64(q, _mm512_setr_epi64(0, 0, 4, 4, 0, 0, 4, 4));
      return _mm512_and_si512(q, _mm512_set1_epi8(0x0F));
    }
  }
  template <bool Half, class Block>
  static __m512 load_dw(const Block* b) {
    const __m128i d0 = _mm_set1_epi16(static_cast<short>(b[0].d));
    const __m128i d1 = Half ? d0 : _mm_set1_epi16(static_cast<short>(b[1].d));
    return _mm512_cvtph_ps(_mm256_set_m128i(d1, d0));
  }
  template <bool Half>
  static X load_x(const int8_t* qs, const int32_t* corr) {
    if constexpr (Half) return {_mm512_zextsi256_si512(load256(qs)), _mm512_zextsi256_si512(load256(corr))};
    return {_mm512_loadu_si512(qs), _mm512_loadu_si512(corr)};
  }
  template <bool Half>
  static __m512 load_dx(const float* d) {
    if constexpr (Half) return _mm512_set1_ps(d[0]);
    return _mm512_shuffle_f32x4(_mm512_set1_ps(d[0]), _mm512_set1_ps(d[1]), 0x44);
  }
  template <WeightType Type, bool Half>
  static Acc madd(Acc acc, __m512i w, __m512 dw, X x, __m512 dx) {
    const __m512 sum = _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(x.corr, w, x.q));
    const __m512 s = _mm512_mul_ps(dw, dx);
    if constexpr (Half) return _mm512_mask3_fmadd_ps(sum, s, acc, 0x00FF);
    return _mm512_fmadd_ps(sum, s, acc);
  }
};

}  // namespace

void q_gemm_nt_avx512vnni_4x4(WeightType type, int64_t T, int64_t N, int64_t K, Q8Rows A, const void* B, int64_t ldb,
                              float* C, int64_t ldc) {
  if (type == WeightType::q8_0)
    q_gemm_nt_tiled<Vnni, WeightType::q8_0, BlockQ8_0, 4, 4, 64>(T, N, K, A, static_cast<const BlockQ8_0*>(B), ldb, C,
                                                                 ldc);
  else
    q_gemm_nt_tiled<Vnni, WeightType::q4_0, BlockQ4_0, 4, 4, 64>(T, N, K, A, static_cast<const BlockQ4_0*>(B), ldb, C,
                                                                 ldc);
}

}  // namespace ffn::kernels
