// AVX2 integer GEMM (q8_0 / q4_0 weights × q8_0 activations, contract in kernels.hpp), 2×2
// tile: a block pair is two ymm, one per block. vpmaddubsw multiplies unsigned by signed
// bytes into saturating 16-bit pairs, then vpmaddwd by ones adds pairs into 32-bit lanes of
// 4 products. q8_0: |w| times x with w's sign (vpsign), pairs ≤ 2·127·127 < 2¹⁵; q4_0: the
// nibbles w + 8 times x (pairs ≤ 2·15·127), plus the activations' −8·Σx per lane. Either
// way each lane is the exact Σ w·x of its 4 products, as in the AVX-512 VNNI kernel.
// Compiled with -mavx2 -mfma -mf16c (this file only); called only when the CPU has them.
#include "ffn/quant.hpp"
#include "kernels/avx2/vec_avx2.hpp"
#include "kernels/q_gemm_nt_tiles.hpp"

namespace ffn::kernels {
namespace {

struct Avx2Q {
  struct Acc {
    __m256 lo, hi;  // lanes 0–7 (block 2p), 8–15 (block 2p + 1)
  };
  struct W {
    __m256i lo, hi;
  };
  struct X {
    __m256i qlo, qhi, clo, chi;
  };
  struct S {
    __m256 lo, hi;
  };
  static Acc zero() { return {_mm256_setzero_ps(), _mm256_setzero_ps()}; }
  // Lanes l + (l+8) first, then the 8-lane tree of Avx2::reduce: the contract's order.
  static float reduce(Acc a) { return Avx2::reduce(_mm256_add_ps(a.lo, a.hi)); }

  static __m256i load256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
  template <WeightType Type, class Block>
  static __m256i load_block(const Block& b) {
    if constexpr (Type == WeightType::q8_0) {
      return load256(b.qs);
    } else {  // [qs, qs] with the upper copy shifted right 4, masked: values 0…31 in order
      const __m256i q = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs)));
      return _mm256_and_si256(_mm256_srlv_epi64(q, _mm256_setr_epi64x(0, 0, 4, 4)), _mm256_set1_epi8(0x0F));
    }
  }
  template <WeightType Type, bool Half, class Block>
  static W load_w(const Block* b) {
    return {load_block<Type>(b[0]), Half ? _mm256_setzero_si256() : load_block<Type>(b[1])};
  }
  template <bool Half, class Block>
  static S load_dw(const Block* b) {
    const __m256 d0 = _mm256_cvtph_ps(_mm_set1_epi16(static_cast<short>(b[0].d)));
    return {d0, Half ? d0 : _mm256_cvtph_ps(_mm_set1_epi16(static_cast<short>(b[1].d)))};
  }
  template <bool Half>
  static X load_x(const int8_t* qs, const int32_t* corr) {
    if constexpr (Half) return {load256(qs), _mm256_setzero_si256(), load256(corr), _mm256_setzero_si256()};
    return {load256(qs), load256(qs + 32), load256(corr), load256(corr + 8)};
  }
  template <bool Half>
  static S load_dx(const float* d) {
    return {_mm256_set1_ps(d[0]), _mm256_set1_ps(Half ? d[0] : d[1])};
  }
  template <WeightType Type>
  static __m256 lane_sums(__m256i w, __m256i x, __m256i corr) {
    const __m256i ones = _mm256_set1_epi16(1);
    if constexpr (Type == WeightType::q8_0)
      return _mm256_cvtepi32_ps(
          _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_abs_epi8(w), _mm256_sign_epi8(x, w)), ones));
    return _mm256_cvtepi32_ps(_mm256_add_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(w, x), ones), corr));
  }
  template <WeightType Type, bool Half>
  static Acc madd(Acc acc, W w, S dw, X x, S dx) {
    acc.lo = _mm256_fmadd_ps(lane_sums<Type>(w.lo, x.qlo, x.clo), _mm256_mul_ps(dw.lo, dx.lo), acc.lo);
    if constexpr (!Half)
      acc.hi = _mm256_fmadd_ps(lane_sums<Type>(w.hi, x.qhi, x.chi), _mm256_mul_ps(dw.hi, dx.hi), acc.hi);
    return acc;
  }
};

}  // namespace

void q_gemm_nt_avx2_2x2(WeightType type, int64_t T, int64_t N, int64_t K, Q8Rows A, const void* B, int64_t ldb,
                        float* C, int64_t ldc) {
  if (type == WeightType::q8_0)
    q_gemm_nt_tiled<Avx2Q, WeightType::q8_0, BlockQ8_0, 2, 2, 64>(T, N, K, A, static_cast<const BlockQ8_0*>(B), ldb, C,
                                                                  ldc);
  else
    q_gemm_nt_tiled<Avx2Q, WeightType::q4_0, BlockQ4_0, 2, 2, 64>(T, N, K, A, static_cast<const BlockQ4_0*>(B), ldb, C,
                                                                  ldc);
}

}  // namespace ffn::kernels
