// Half-precision conversions and ggml's quantised block formats Q8_0 and Q4_0, byte for byte
// as ggml lays them out, so that weights from GGUF files are used without re-quantising and
// weights quantised here load in ggml. A block covers 32 consecutive values of one row.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ffn {

inline constexpr int64_t kQuantBlock = 32;

// Q8_0: value j = qs[j] · d.
struct BlockQ8_0 {
  uint16_t d;  // scale, IEEE binary16 bits
  int8_t qs[kQuantBlock];
};
static_assert(sizeof(BlockQ8_0) == 34, "ggml's block_q8_0 is 34 bytes");

// Q4_0: value j = (q_j − 8) · d with q_j in 0..15; q_j for j < 16 is the low nibble of
// qs[j], q_j for j ≥ 16 the high nibble of qs[j − 16].
struct BlockQ4_0 {
  uint16_t d;  // scale, IEEE binary16 bits
  uint8_t qs[kQuantBlock / 2];
};
static_assert(sizeof(BlockQ4_0) == 18, "ggml's block_q4_0 is 18 bytes");

// f32 → binary16, IEEE round-to-nearest-even: |x| ≥ 65520 becomes ±Inf, results below
// 2⁻¹⁴ are rounded to the subnormal grid (2⁻²⁴), NaN stays NaN (quieted, sign and top
// payload bits kept). Bit-identical to F16C's vcvtps2ph with rounding mode 0.
uint16_t f32_to_f16(float x);
// Exact: every binary16 value, subnormals, ±Inf and NaN payloads included, is an f32.
float f16_to_f32(uint16_t h);
// f32 → bfloat16 as ggml does it: round-to-nearest-even on the upper 16 bits (f32
// subnormals are rounded, not flushed; overflow gives ±Inf), NaN stays a NaN with the quiet
// bit set.
uint16_t f32_to_bf16(float x);
// Exact: bfloat16 is the upper half of an f32.
float bf16_to_f32(uint16_t h);
// n binary16 / bfloat16 values stored little-endian at src (no alignment needed, as in
// file data), widened exactly to f32.
void f16_bytes_to_f32(const std::byte* src, float* out, int64_t n);
void bf16_bytes_to_f32(const std::byte* src, float* out, int64_t n);

// Quantisers rounding exactly as ggml's reference quantisers (quantize_row_q8_0_ref and
// quantize_row_q4_0_ref); x holds n floats, y n/32 blocks. n must be a non-negative
// multiple of 32; a non-finite x, or a block whose scale overflows binary16 (largest |x|
// above ~8.3e6 for Q8_0, ~5.2e5 for Q4_0), is an ffn::Error naming the element or block —
// ggml's result there is undefined or unusable.
void quantize_row_q8_0(const float* x, BlockQ8_0* y, int64_t n);
void quantize_row_q4_0(const float* x, BlockQ4_0* y, int64_t n);
// Value j = (q_j − offset) · d, one f32 product, as ggml's dequantize_row_*; n as above.
void dequantize_row_q8_0(const BlockQ8_0* x, float* y, int64_t n);
void dequantize_row_q4_0(const BlockQ4_0* x, float* y, int64_t n);

}  // namespace ffn
