// AVX-512F loads of 16 16-bit weights widened exactly to one zmm (an f16 by vcvtph2ps; a
// bf16 is an f32's upper half, so zero-extended and shifted left 16), for the kernels that
// read f16 or bf16 rows (half_panel_gemm_avx512.cpp, sparse_rows_avx512.cpp). Include only
// from files compiled with the avx512 level's flags.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace ffn::kernels {

inline __m256i load16(const uint16_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }

// A tail (1 … 15 values) through a zeroed copy: byte-masked loads need AVX-512BW, which this
// ISA level does not assume; the zero weights of the lanes past it add exact zeros.
inline __m256i load16_tail(const uint16_t* p, int64_t count) {
  alignas(32) uint16_t tmp[16] = {};
  std::memcpy(tmp, p, static_cast<size_t>(count) * sizeof(uint16_t));
  return _mm256_load_si256(reinterpret_cast<const __m256i*>(tmp));
}

struct F16x16 {
  using Elem = uint16_t;
  static __m512 load(const uint16_t* p) { return _mm512_cvtph_ps(load16(p)); }
  static __m512 load_tail(const uint16_t* p, int64_t count) { return _mm512_cvtph_ps(load16_tail(p, count)); }
};

struct Bf16x16 {
  using Elem = uint16_t;
  static __m512 widen(__m256i v) { return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(v), 16)); }
  static __m512 load(const uint16_t* p) { return widen(load16(p)); }
  static __m512 load_tail(const uint16_t* p, int64_t count) { return widen(load16_tail(p, count)); }
};

}  // namespace ffn::kernels
