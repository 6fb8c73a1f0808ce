// The row loop every f32_to_q8_rows kernel shares (contract in kernels.hpp): x in blocks of
// the format's 32 (q8_0) or 256 (q8_K) values, each quantised by the ISA's function for it,
//   bool block(const float* x, int8_t* codes, float* scale, int16_t* sums)
// (the block's codes, its one scale and its sums of 16; false where it refuses a value),
// stopping at the first block refused. The block functions are each file's own (unnamed
// namespace), so every instantiation is too: none is shared between ISA levels.
#pragma once

#include <cstdint>

#include "ffn/weight_type.hpp"

namespace ffn::kernels {

template <auto Q8_0Block, auto Q8_KBlock>
bool q8_rows_by_blocks(WeightType format, int64_t n, const float* x, int8_t* codes, float* scales, int16_t* sums) {
  const bool k = format == WeightType::q8_K;
  const int64_t block = k ? 256 : 32;
  for (int64_t c = 0; c < n; c += block) {
    const bool ok = k ? Q8_KBlock(x + c, codes + c, scales + c / block, sums + c / 16)
                      : Q8_0Block(x + c, codes + c, scales + c / block, sums + c / 16);
    if (!ok) return false;
  }
  return true;
}

}  // namespace ffn::kernels
