// ggml's 16-entry codebooks of its non-linear 4-bit types and MXFP4's e8m0 block scale: shared
// by the block codecs (core/ggml_blocks_{32,k}.cpp) and the qsub panel kernels (qsub_panels.hpp), which
// map the stored nibbles through the same tables.
#pragma once

#include <cstdint>

namespace ffn {

// IQ4_NL and IQ4_XS: the non-linear codebook, ascending.
inline constexpr int8_t kIq4Values[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

// MXFP4: the e2m1 values (±0, 0.5, 1, 1.5, 2, 3, 4, 6) doubled, so that they are integers;
// index bit 3 is the sign, the low 3 bits e2m1's exponent and mantissa. The block scale is
// halved to match (e8m0_half_to_f32).
inline constexpr int8_t kMxfp4Values[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

// 2^(e − 128) exactly (e = 0, 1: the binary32 subnormals 2^−128, 2^−127), as ggml's
// GGML_E8M0_TO_FP32_HALF: half of the e8m0 value 2^(e − 127). e = 255 gives 2^127 (ggml does
// not treat it as NaN; ffn refuses such blocks at load, check_block_scales).
inline float e8m0_half_to_f32(uint8_t e) {
  const uint32_t bits = e < 2 ? 0x00200000u << e : uint32_t(e - 1) << 23;
  float f;
  __builtin_memcpy(&f, &bits, 4);
  return f;
}

}  // namespace ffn
