// The integer roof loops' vector of 8 int32 lanes on ymm registers (int8_dot_roof.hpp's
// IntDot, less its step): the avx2 and avx2_vnni loops differ only in the step.
// Included only by files compiled with at least -mavx2.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace ffn::kernels {

struct Avx2Int32Lanes {
  using Vec = __m256i;
  static Vec from_int(int32_t i) { return _mm256_set1_epi32(i); }
  static int64_t reduce(Vec v) {
    alignas(32) int32_t lanes[8];
    _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), v);
    int64_t s = 0;
    for (int32_t l : lanes) s += l;
    return s;
  }
};

}  // namespace ffn::kernels
