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
  static void accumulate(const __m256i (&s)[8], const float (&scale)[8], Acc& acc) {
    const __m256i s01 = _mm256_hadd_epi32(s[0], s[1]), s23 = _mm256_hadd_epi32(s[2], s[3]);
    const __m256i s45 = _mm256_hadd_epi32(s[4], s[5]), s67 = _mm256_hadd_epi32(s[6], s[7]);
    const __m256i s0123 = _mm256_hadd_epi32(s01, s23), s4567 = _mm256_hadd_epi32(s45, s67);
    const __m256i sums =
        _mm256_add_epi32(_mm256_permute2x128_si256(s0123, s4567, 0x20), _mm256_permute2x128_si256(s0123, s4567, 0x31));
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums), _mm256_loadu_ps(scale), acc);
  }
  static void store(Acc acc, float* out) { _mm256_storeu_ps(out, acc); }
  static float half(const std::byte* p) {
    uint16_t d;
    std::memcpy(&d, p, sizeof d);
    return _cvtsh_ss(d);
  }
};

}  // namespace ffn::kernels
