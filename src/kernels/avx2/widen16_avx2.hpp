// AVX2 loads of 8 16-bit weights widened exactly to one ymm (an f16 by F16C's vcvtph2ps; a
// bf16 is an f32's upper half, so zero-extended and shifted left 16), for the kernels that
// read f16 or bf16 rows (half_panel_gemm_avx2.cpp, sparse_rows_avx2.cpp). Include only from
// files compiled with the avx2 level's flags.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace ffn::kernels {

inline __m128i load8(const uint16_t* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); }

// A tail (1 … 7 values) through a zeroed copy; the zero weights past it add exact zeros.
inline __m128i load8_tail(const uint16_t* p, int64_t count) {
  alignas(16) uint16_t tmp[8] = {};
  std::memcpy(tmp, p, static_cast<size_t>(count) * sizeof(uint16_t));
  return _mm_load_si128(reinterpret_cast<const __m128i*>(tmp));
}

struct F16x8 {
  using Elem = uint16_t;
  static __m256 load(const uint16_t* p) { return _mm256_cvtph_ps(load8(p)); }
  static __m256 load_tail(const uint16_t* p, int64_t count) { return _mm256_cvtph_ps(load8_tail(p, count)); }
};

struct Bf16x8 {
  using Elem = uint16_t;
  static __m256 widen(__m128i v) { return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(v), 16)); }
  static __m256 load(const uint16_t* p) { return widen(load8(p)); }
  static __m256 load_tail(const uint16_t* p, int64_t count) { return widen(load8_tail(p, count)); }
};

}  // namespace ffn::kernels
