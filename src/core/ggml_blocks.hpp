// ggml's block formats beyond Q8_0 / Q4_0 (those are in core/quant.hpp), byte for byte as
// ggml lays them out (ggml-common.h), with ggml's dequantisation and its reference
// quantisers (quantize_row_*_ref, no importance matrix): the typed form of their codecs
// (codecs.hpp), which the weight-type table points at; the kernels read the panels made of them.
//
// Super-block types cover 256 consecutive values of one row (kSuperBlock); the 32-value types
// kQuantBlock (core/quant.hpp). Every `d`/`dmin`/`m` is IEEE binary16 bits (MXFP4's scale: an
// e8m0 exponent byte).
#pragma once

#include <cstdint>

#include "core/quant.hpp"
#include "kernels/codebooks.hpp"  // kIq4Values, kMxfp4Values, e8m0_half_to_f32

namespace ffn {

inline constexpr int64_t kSuperBlock = 256;

// Q4_1: value j = q_j·d + m, q_j in 0..15, nibbles as Q4_0's.
struct BlockQ4_1 {
  uint16_t d, m;
  uint8_t qs[16];
};
static_assert(sizeof(BlockQ4_1) == 20);

// Q5_0: value j = (q_j − 16)·d, q_j = nibble (as Q4_0) | bit j of qh (little-endian u32) << 4.
struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];
  uint8_t qs[16];
};
static_assert(sizeof(BlockQ5_0) == 22);

// Q5_1: value j = q_j·d + m, q_j as Q5_0's.
struct BlockQ5_1 {
  uint16_t d, m;
  uint8_t qh[4];
  uint8_t qs[16];
};
static_assert(sizeof(BlockQ5_1) == 24);

// IQ4_NL: value j = d·kIq4Values[q_j], q_j a nibble laid out as Q4_0's.
struct BlockIQ4_NL {
  uint16_t d;
  uint8_t qs[16];
};
static_assert(sizeof(BlockIQ4_NL) == 18);

// MXFP4 (OCP microscaling FP4): value j = kMxfp4Values[q_j]·2^(e − 128) (e8m0_half_to_f32),
// q_j a nibble laid out as Q4_0's, e the unsigned exponent of the e8m0 scale 2^(e − 127)
// (0xFF is NaN in the OCP format).
struct BlockMXFP4 {
  uint8_t e;
  uint8_t qs[16];
};
static_assert(sizeof(BlockMXFP4) == 17);

// Q2_K: 16 sub-blocks of 16; scales[s] = scale (low nibble) | min (high nibble); value =
// d·scale_s·q − dmin·min_s, q 2 bits (qs: 4 values a byte, ggml's order).
struct BlockQ2_K {
  uint8_t scales[16];
  uint8_t qs[64];
  uint16_t d, dmin;
};
static_assert(sizeof(BlockQ2_K) == 84);

// Q3_K: 16 sub-blocks of 16; 6-bit signed scales (offset 32) packed in 12 bytes; value =
// d·(scale_s − 32)·(q − 4·!hbit), q 2 low bits in qs, the high bit in hmask (ggml's order).
struct BlockQ3_K {
  uint8_t hmask[32];
  uint8_t qs[64];
  uint8_t scales[12];
  uint16_t d;
};
static_assert(sizeof(BlockQ3_K) == 110);

// Q4_K: 8 sub-blocks of 32; 6-bit scales and mins packed in 12 bytes (ggml's
// get_scale_min_k4); value = d·scale_s·q − dmin·min_s, q a nibble: sub-blocks 2i and 2i+1
// are the low and high nibbles of qs[32i … 32i+31].
struct BlockQ4_K {
  uint16_t d, dmin;
  uint8_t scales[12];
  uint8_t qs[128];
};
static_assert(sizeof(BlockQ4_K) == 144);

// Q5_K: Q4_K plus a fifth bit per value in qh (bit 2i of qh[l] for value l of sub-block 2i,
// bit 2i+1 for sub-block 2i+1).
struct BlockQ5_K {
  uint16_t d, dmin;
  uint8_t scales[12];
  uint8_t qh[32];
  uint8_t qs[128];
};
static_assert(sizeof(BlockQ5_K) == 176);

// Q6_K: 16 sub-blocks of 16 with int8 scales; value = d·scale_s·(q − 32), q 6 bits: 4 low
// in ql, 2 high in qh (ggml's order).
struct BlockQ6_K {
  uint8_t ql[128];
  uint8_t qh[64];
  int8_t scales[16];
  uint16_t d;
};
static_assert(sizeof(BlockQ6_K) == 210);

// IQ4_XS: 8 sub-blocks of 32; 6-bit scales (offset 32: 4 low bits in scales_l, 2 high in
// scales_h); value = d·(scale_s − 32)·kIq4Values[q], nibbles as Q4_K's.
struct BlockIQ4_XS {
  uint16_t d;
  uint16_t scales_h;
  uint8_t scales_l[4];
  uint8_t qs[128];
};
static_assert(sizeof(BlockIQ4_XS) == 136);

// TQ1_0 (BitNet b1.58's ternary weights): value = d·(t − 1), t in {0, 1, 2}. The first 240
// values are 5 base-3 digits a byte of qs (qs[0 … 31]: values m + 32n of the first 160, n = 0 …
// 4; qs[32 … 47]: values 160 + m + 16n), the last 16 are 4 digits a byte of qh (value 240 + j
// + 4n: digit n of qh[j]); a byte holds its digits scaled into 0 … 255 (byte = ⌈digits·256/243⌉
// with the first digit most significant), read back as digit n = ((byte·3ⁿ mod 256)·3) >> 8.
struct BlockTQ1_0 {
  uint8_t qs[48];
  uint8_t qh[4];
  uint16_t d;
};
static_assert(sizeof(BlockTQ1_0) == 54);

// TQ2_0: value = d·(t − 1), t the 2-bit code: value 128h + 32l + m is bits 2l … 2l + 1 of
// qs[32h + m] (h < 2, l < 4, m < 32).
struct BlockTQ2_0 {
  uint8_t qs[64];
  uint16_t d;
};
static_assert(sizeof(BlockTQ2_0) == 66);

// The 6-bit scale and min of sub-block j < 8 of Q4_K / Q5_K's 12 packed bytes.
inline void k4_scale_min(int j, const uint8_t* q, uint8_t& scale, uint8_t& min) {
  if (j < 4) {
    scale = q[j] & 63;
    min = q[j + 4] & 63;
  } else {
    scale = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    min = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

// Per type: dequantize_row_<t>(x, y, n) and quantize_row_<t>(x, y, n), y/x n values, n a
// non-negative multiple of the type's block (32 or 256). Dequantisation is ggml's
// dequantize_row_<t>, the same f32 operations in the same order (so bit for bit what ggml and
// gguf-py compute). Quantisation is ggml's reference quantiser, byte for byte; a non-finite x
// is an ffn::Error naming the element, as quantize_row_q4_0 does, and a block whose scale (or
// offset) does not fit binary16 — or, for the super-block and IQ4 types, with |x| > 1e10 — an
// ffn::Error naming the block. One choice where ggml's bytes are undefined: an IQ4_NL block
// with every |x| < 1e-15 (d = 0) repeats the previous block's codes, as ggml's reused code
// array does, and has codes 0 when it is the row's first (ggml: uninitialised memory). And for
// MXFP4, whose exponent ggml converts from a float that is negative when the block's largest
// |x| is below 2^−125 (undefined in C): e = 0 there (the smallest scale).
#define FFN_GGML_BLOCK_TYPES(X) \
  X(q4_1, BlockQ4_1)            \
  X(q5_0, BlockQ5_0)            \
  X(q5_1, BlockQ5_1)            \
  X(iq4_nl, BlockIQ4_NL)        \
  X(q2_K, BlockQ2_K)            \
  X(q3_K, BlockQ3_K)            \
  X(q4_K, BlockQ4_K)            \
  X(q5_K, BlockQ5_K)            \
  X(q6_K, BlockQ6_K)            \
  X(iq4_xs, BlockIQ4_XS)        \
  X(mxfp4, BlockMXFP4)          \
  X(tq1_0, BlockTQ1_0)          \
  X(tq2_0, BlockTQ2_0)

#define FFN_DECLARE_GGML_BLOCK(name, Block)                        \
  void dequantize_row_##name(const Block* x, float* y, int64_t n); \
  void quantize_row_##name(const float* x, Block* y, int64_t n);
FFN_GGML_BLOCK_TYPES(FFN_DECLARE_GGML_BLOCK)
#undef FFN_DECLARE_GGML_BLOCK

// ggml's q8_K, the activations of the super-block types' dot products: 256 values, value j =
// d·qs[j] (d f32), bsums[i] = Σ qs[16i … 16i+15]. quantize_row_q8_K is ggml's
// quantize_row_q8_K_ref byte for byte (a non-finite x is an ffn::Error).
struct BlockQ8_K {
  float d;
  int8_t qs[256];
  int16_t bsums[16];
};
static_assert(sizeof(BlockQ8_K) == 292);
void quantize_row_q8_K(const float* x, BlockQ8_K* y, int64_t n);
// Value j = d·qs[j], as ggml's dequantize_row_q8_K.
void dequantize_row_q8_K(const BlockQ8_K* x, float* y, int64_t n);

}  // namespace ffn
