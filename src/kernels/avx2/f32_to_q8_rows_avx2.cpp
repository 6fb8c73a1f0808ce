// The activations' quantisation in 256-bit vectors (contract in kernels.hpp, f32_to_q8_rows):
// the same arithmetic as the scalar reference a block at a time — the block's largest |x|,
// then each code from one f32 product x·(1/d) or x·iscale, rounded as ggml's functions round
// it — so the same bits: q8_0 half away from zero (std::round) by truncation and a ±1 where
// the dropped fraction is at least a half, q8_K half to even by ggml's own 1.5·2²³ trick.
// Eight lanes a step, where the scalar loop called roundf and fmaxf a value.
// Compiled with the avx2 level's flags (ffn/isa_list.hpp); called only when the CPU has the level.
#include <immintrin.h>

#include <cfloat>

#include "core/quant_checks.hpp"
#include "kernels/avx2/avx2_kernels.hpp"
#include "kernels/q8_rows_by_blocks.hpp"

namespace ffn::kernels {
namespace {

// (A function, not a constant: a namespace-scope vector would run AVX2 at start-up on every CPU.)
__m256 sign_bit() { return _mm256_set1_ps(-0.0f); }

__m256 abs8(__m256 v) { return _mm256_andnot_ps(sign_bit(), v); }

// All 8 lanes finite (|v| ≤ FLT_MAX: false for Inf and, unordered, for NaN).
bool finite8(__m256 abs_v) {
  return _mm256_movemask_ps(_mm256_cmp_ps(abs_v, _mm256_set1_ps(FLT_MAX), _CMP_LE_OQ)) == 0xFF;
}

float max8(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  return _mm_cvtss_f32(_mm_max_ss(m, _mm_shuffle_ps(m, m, 1)));
}

int32_t sum8(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
  return _mm_cvtsi128_si32(_mm_add_epi32(s, _mm_shuffle_epi32(s, 1)));
}

// t rounded to the nearest integer, halves away from zero (std::round), as int32.
__m256i round_half_away(__m256 t) {
  const __m256 r = _mm256_round_ps(t, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m256 half_or_more = _mm256_cmp_ps(abs8(_mm256_sub_ps(t, r)), _mm256_set1_ps(0.5f), _CMP_GE_OQ);
  const __m256 away = _mm256_or_ps(_mm256_and_ps(t, sign_bit()), _mm256_set1_ps(1.0f));  // ±1, t's sign
  return _mm256_cvttps_epi32(_mm256_add_ps(r, _mm256_and_ps(half_or_more, away)));
}

// ggml's nearest_int, lane by lane: t + 1.5·2²³ holds t rounded to an integer (ties to even)
// in its low 22 mantissa bits, for |t| < 2²².
__m256i nearest_int8(__m256 t) {
  const __m256i bits = _mm256_castps_si256(_mm256_add_ps(t, _mm256_set1_ps(12582912.0f)));
  return _mm256_sub_epi32(_mm256_and_si256(bits, _mm256_set1_epi32(0x007FFFFF)), _mm256_set1_epi32(0x00400000));
}

// 32 codes q[0 … 3] (int32 within int8's range) stored as bytes in order, and the sums of
// each 16: q[0], q[1] and q[2], q[3].
void store_codes(const __m256i q[4], int8_t* codes, int16_t* sums) {
  // packs interleave the 128-bit lanes: bytes 4i … 4i + 3 of the result hold q[i % 4]'s
  // values 4(i / 4) …; the permutation puts them back in order.
  const __m256i bytes = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
  const __m256i in_order = _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(codes), in_order);
  sums[0] = static_cast<int16_t>(sum8(_mm256_add_epi32(q[0], q[1])));
  sums[1] = static_cast<int16_t>(sum8(_mm256_add_epi32(q[2], q[3])));
}

// One q8_0 block of 32 values; false where one is not finite or the scale overflows binary16.
bool q8_0_block(const float* x, int8_t* codes, float* scale, int16_t* sums) {
  __m256 v[4], amax = _mm256_setzero_ps();
  bool finite = true;
  for (int i = 0; i < 4; ++i) {
    v[i] = _mm256_loadu_ps(x + 8 * i);
    const __m256 a = abs8(v[i]);
    finite &= finite8(a);
    amax = _mm256_max_ps(amax, a);
  }
  if (!finite) return false;
  const float d = max8(amax) / 127.0f;
  const uint16_t h = _cvtss_sh(d, _MM_FROUND_TO_NEAREST_INT);  // IEEE binary16, to nearest even
  if ((h & 0x7C00u) == 0x7C00u) return false;
  *scale = _cvtsh_ss(h);
  const float id = ffn::detail::reciprocal_scale(d);
  const __m256 idv = _mm256_set1_ps(id);
  __m256i q[4];
  for (int i = 0; i < 4; ++i) q[i] = round_half_away(_mm256_mul_ps(v[i], idv));
  store_codes(q, codes, sums);
  return true;
}

// One q8_K block of 256 values; false where one is not finite.
bool q8_K_block(const float* x, int8_t* codes, float* scale, int16_t* sums) {
  __m256 amax = _mm256_setzero_ps();
  bool finite = true;
  for (int i = 0; i < 32; ++i) {
    const __m256 a = abs8(_mm256_loadu_ps(x + 8 * i));
    finite &= finite8(a);
    amax = _mm256_max_ps(amax, a);
  }
  if (!finite) return false;
  const float largest = max8(amax);
  if (largest == 0.0f) {
    *scale = 0.0f;
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(codes), _mm256_setzero_si256());
    for (int i = 1; i < 8; ++i) _mm256_storeu_si256(reinterpret_cast<__m256i*>(codes + 32 * i), _mm256_setzero_si256());
    for (int i = 0; i < 16; ++i) sums[i] = 0;
    return true;
  }
  // The first value whose |x| is the largest, with its sign (signed_absmax).
  float max = 0.0f;
  for (int i = 0; i < 32; ++i) {
    const int hits =
        _mm256_movemask_ps(_mm256_cmp_ps(abs8(_mm256_loadu_ps(x + 8 * i)), _mm256_set1_ps(largest), _CMP_EQ_OQ));
    if (hits) {
      max = x[8 * i + __builtin_ctz(static_cast<unsigned>(hits))];
      break;
    }
  }
  const float iscale = -127.0f / max;
  const __m256 is = _mm256_set1_ps(iscale);
  for (int g = 0; g < 8; ++g) {
    __m256i q[4];
    for (int i = 0; i < 4; ++i) {
      const __m256i r = _mm256_min_epi32(nearest_int8(_mm256_mul_ps(is, _mm256_loadu_ps(x + 32 * g + 8 * i))),
                                         _mm256_set1_epi32(127));
      // The low byte sign-extended, as the reference's cast to int8 keeps it: the same value
      // within int8, and where iscale overflows (every |x| below ~4e-37) the byte of
      // nearest_int's ±Inf, not the saturation store_codes' packs would make.
      q[i] = _mm256_srai_epi32(_mm256_slli_epi32(r, 24), 24);
    }
    store_codes(q, codes + 32 * g, sums + 2 * g);
  }
  *scale = 1 / iscale;
  return true;
}

}  // namespace

const F32ToQ8Rows f32_to_q8_rows_avx2 = q8_rows_by_blocks<q8_0_block, q8_K_block>;

}  // namespace ffn::kernels
