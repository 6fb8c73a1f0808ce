// The integer block dot of sparse_rows_q8_0.hpp on ymm registers, for the avx2, avx2_vnni
// and avx512_vnni levels, which differ only in the instruction that sums the products of
// unsigned and signed bytes (Dot::dot(u, s): int32 lanes, each the exact Σ of 4 products).
// Weights are signed, so each block enters as |w| and the activations take w's signs (x·sgn w),
// the products then w·x. Included only by files compiled with at least -mavx2 -mfma -mf16c.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace ffn::kernels {

template <class Dot>
struct I8x32 {
  struct Weights {
    __m256i w, magnitude;
  };
  using Codes = __m256i;
  using Sums = __m256i;
  using Acc = __m256;
  static Weights weights(const int8_t* q) {
    const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q));
    return {w, _mm256_sign_epi8(w, w)};  // |−128| is 128 as an unsigned byte
  }
  static Codes codes(const int8_t* q) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q)); }
  static Sums zero() { return _mm256_setzero_si256(); }
  static Sums dot(const Weights& w, Codes x) { return Dot::dot(w.magnitude, _mm256_sign_epi8(x, w.w)); }
  static Acc acc_zero() { return _mm256_setzero_ps(); }
  // Lane l of the 8 vectors' sums by pairwise adds: within each 128-bit half [s0 s1 s2 s3 of
  // lanes 0–3 | of lanes 4–7], then the halves added.
  static void accumulate(const __m256i (&s)[8], const float* scale, Acc& acc) {
    const __m256i s01 = _mm256_hadd_epi32(s[0], s[1]), s23 = _mm256_hadd_epi32(s[2], s[3]);
    const __m256i s45 = _mm256_hadd_epi32(s[4], s[5]), s67 = _mm256_hadd_epi32(s[6], s[7]);
    const __m256i s0123 = _mm256_hadd_epi32(s01, s23), s4567 = _mm256_hadd_epi32(s45, s67);
    const __m256i sums =
        _mm256_add_epi32(_mm256_permute2x128_si256(s0123, s4567, 0x20), _mm256_permute2x128_si256(s0123, s4567, 0x31));
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums), _mm256_loadu_ps(scale), acc);
  }
  static void store(Acc acc, float* out) { _mm256_storeu_ps(out, acc); }
  // The scales of 8 blocks from b0 (sparse_rows_q8_0.hpp's fill_scale_table): each lane's 8
  // as one vector (a row's 8 binary16 d widened by F16C, times the token's 8 activation
  // scales), then an 8 × 8 transpose, so table[j·8 + l] is lane l's of block b0 + j.
  template <int64_t R, int64_t TT>
  static void scale_table8(const std::byte* const (&w)[R], const float* x_scales, int64_t stride, int64_t b0,
                           float* table) {
    __m256 v[8];
    for (int64_t l = R * TT; l < 8; ++l) v[l] = _mm256_setzero_ps();
    for (int64_t r = 0; r < R; ++r) {
      const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w[r] + 2 * b0)));
      for (int64_t t = 0; t < TT; ++t) v[t * R + r] = _mm256_mul_ps(d, _mm256_loadu_ps(x_scales + t * stride + b0));
    }
    __m256 two[8], four[8];
    for (int i = 0; i < 4; ++i) {  // per 128-bit half: [v2i j0, v2i+1 j0, v2i j1, v2i+1 j1], and j2, j3
      two[2 * i] = _mm256_unpacklo_ps(v[2 * i], v[2 * i + 1]);
      two[2 * i + 1] = _mm256_unpackhi_ps(v[2 * i], v[2 * i + 1]);
    }
    for (int h = 0; h < 2; ++h)  // four[4h + c]: lanes 4h … 4h + 3 of block c of each half
      for (int i = 0; i < 2; ++i) {
        four[4 * h + 2 * i] = _mm256_shuffle_ps(two[4 * h + i], two[4 * h + 2 + i], _MM_SHUFFLE(1, 0, 1, 0));
        four[4 * h + 2 * i + 1] = _mm256_shuffle_ps(two[4 * h + i], two[4 * h + 2 + i], _MM_SHUFFLE(3, 2, 3, 2));
      }
    for (int c = 0; c < 4; ++c) {  // blocks c (low halves) and 4 + c (high halves)
      _mm256_storeu_ps(table + c * 8, _mm256_permute2f128_ps(four[c], four[4 + c], 0x20));
      _mm256_storeu_ps(table + (4 + c) * 8, _mm256_permute2f128_ps(four[c], four[4 + c], 0x31));
    }
  }
  static float half(const std::byte* p) {
    uint16_t d;
    std::memcpy(&d, p, sizeof d);
    return _cvtsh_ss(d);
  }
};

}  // namespace ffn::kernels
