// Argument checks shared by the block quantisers (quant.cpp: Q8_0 / Q4_0, ggml_blocks_{32,k}.cpp:
// the other ggml formats), so that every codec reports bad input in the same words.
#pragma once

#include <cstdint>

namespace ffn::detail {

// n / block, the number of blocks of a row of n values; an ffn::Error naming `fn` and n
// unless n is a non-negative multiple of `block`.
int64_t block_count(int64_t n, int64_t block, const char* fn);

// 1/d, or 0 where d is 0 or 1/d overflows (a block whose values all lie below ~1e-37):
// such a block is encoded as zeros, which its binary16 scale, 0, decodes to anyway.
float reciprocal_scale(float d);

// An ffn::Error naming the element (first + j) unless every v[0 … len) is finite: ggml's
// quantisers give undefined or unusable bytes for NaN and ±Inf.
void require_finite(const float* v, int64_t len, int64_t first, const char* fn);

// The binary16 bits of a block's scale (or offset) d; an ffn::Error naming block b of `fn`
// and the largest |v| of its len values when d does not fit binary16 (it would be stored as
// ±Inf and the block would decode to ±Inf or NaN).
uint16_t scale_f16(float d, const float* v, int64_t len, int64_t b, const char* fn);

}  // namespace ffn::detail
