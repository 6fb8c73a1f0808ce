// ggml's 32-value block formats Q4_1, Q5_0, Q5_1, IQ4_NL and MXFP4 (layouts in
// ggml_blocks.hpp): dequantisers and reference quantisers that reproduce ggml-quants.c's
// results bit for bit.
//
// How that is kept: every f32 expression is evaluated as ggml writes it — the same operands,
// the same left-to-right association, int → float conversions at the same points — and the
// project compiles with -ffp-contract=off, so no multiply-add is fused. Rounding to an integer
// is ggml's nearest_int (ggml_blocks_shared.hpp) where ggml uses it and C's truncation where ggml casts.
// binary16 conversions are ffn's f32_to_f16 (round to nearest even, as ggml's
// GGML_FP32_TO_FP16) and the exact f16_to_f32.
//
// Where this differs from ggml on purpose: a non-finite x, a scale or offset that does not fit
// binary16, or (super-block and IQ4 types) |x| above kMaxAbs is an ffn::Error — ggml stores
// ±Inf / NaN scales there, or asserts in nearest_int.
#include <cfloat>
#include <cmath>
#include <cstring>
#include <string>

#include "core/codecs.hpp"
#include "core/ggml_blocks.hpp"
#include "core/ggml_blocks_shared.hpp"

namespace ffn {
namespace {

using namespace ggml_detail;

// ---- the 32-value blocks ----

// Q4_1 / Q5_1's per-block range: the smallest and largest x of the block (ggml starts from
// ±FLT_MAX and compares strictly).
void block_min_max(const float* v, float& lo, float& hi) {
  lo = FLT_MAX;
  hi = -FLT_MAX;
  for (int64_t j = 0; j < kQuantBlock; ++j) {
    if (v[j] < lo) lo = v[j];
    if (v[j] > hi) hi = v[j];
  }
}

// The 5th bits of a 32-value block's codes q[0…31] as Q5_0 / Q5_1 store them: bit j of a
// little-endian u32.
void store_high_bits(const uint8_t* q, uint8_t* qh) {
  uint32_t bits = 0;
  for (int j = 0; j < 32; ++j) bits |= static_cast<uint32_t>((q[j] >> 4) & 1) << j;
  std::memcpy(qh, &bits, sizeof bits);
}

// Code j (0 … 31) of a Q5_0 / Q5_1 block: nibble j (Q4_0's order) plus bit j of qh as bit 4.
int q5_code(const uint8_t* qs, const uint8_t* qh, int j) {
  uint32_t bits;
  std::memcpy(&bits, qh, sizeof bits);
  const int nibble = j < 16 ? (qs[j] & 0x0F) : (qs[j - 16] >> 4);
  return nibble | static_cast<int>(((bits >> j) & 1) << 4);
}

}  // namespace

using namespace ggml_detail;

// ---------------------------------------------------------------- dequantisation

void dequantize_row_q4_1(const BlockQ4_1* x, float* y, int64_t n) {
  const int64_t blocks = block_count(n, kQuantBlock, "dequantize_row_q4_1");
  for (int64_t b = 0; b < blocks; ++b, y += kQuantBlock) {
    const float d = f16_to_f32(x[b].d), m = f16_to_f32(x[b].m);
    for (int j = 0; j < 16; ++j) {
      y[j] = static_cast<float>(x[b].qs[j] & 0x0F) * d + m;
      y[j + 16] = static_cast<float>(x[b].qs[j] >> 4) * d + m;
    }
  }
}

void dequantize_row_q5_0(const BlockQ5_0* x, float* y, int64_t n) {
  const int64_t blocks = block_count(n, kQuantBlock, "dequantize_row_q5_0");
  for (int64_t b = 0; b < blocks; ++b, y += kQuantBlock) {
    const float d = f16_to_f32(x[b].d);
    for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(q5_code(x[b].qs, x[b].qh, j) - 16) * d;
  }
}

void dequantize_row_q5_1(const BlockQ5_1* x, float* y, int64_t n) {
  const int64_t blocks = block_count(n, kQuantBlock, "dequantize_row_q5_1");
  for (int64_t b = 0; b < blocks; ++b, y += kQuantBlock) {
    const float d = f16_to_f32(x[b].d), m = f16_to_f32(x[b].m);
    for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(q5_code(x[b].qs, x[b].qh, j)) * d + m;
  }
}

void dequantize_row_iq4_nl(const BlockIQ4_NL* x, float* y, int64_t n) {
  const int64_t blocks = block_count(n, kQuantBlock, "dequantize_row_iq4_nl");
  for (int64_t b = 0; b < blocks; ++b, y += kQuantBlock) {
    const float d = f16_to_f32(x[b].d);
    for (int j = 0; j < 16; ++j) {
      y[j] = d * static_cast<float>(kIq4Values[x[b].qs[j] & 0xF]);
      y[j + 16] = d * static_cast<float>(kIq4Values[x[b].qs[j] >> 4]);
    }
  }
}

void dequantize_row_mxfp4(const BlockMXFP4* x, float* y, int64_t n) {
  const int64_t blocks = block_count(n, kQuantBlock, "dequantize_row_mxfp4");
  for (int64_t b = 0; b < blocks; ++b, y += kQuantBlock) {
    const float d = e8m0_half_to_f32(x[b].e);
    for (int j = 0; j < 16; ++j) {
      y[j] = static_cast<float>(kMxfp4Values[x[b].qs[j] & 0xF]) * d;
      y[j + 16] = static_cast<float>(kMxfp4Values[x[b].qs[j] >> 4]) * d;
    }
  }
}

// Q2_K / Q3_K: sub-block s = 0 … 15 covers values 16s … 16s + 15; its codes are the 2-bit
// fields at bit 2·((s mod 8) / 2) of qs[32·(s / 8) + 16·(s mod 2) + l], l < 16.

// ---------------------------------------------------------------- quantisation

void quantize_row_q4_1(const float* x, BlockQ4_1* y, int64_t n) {
  const char* fn = "quantize_row_q4_1";
  const int64_t blocks = block_count(n, kQuantBlock, fn);
  for (int64_t b = 0; b < blocks; ++b) {
    const float* v = x + b * kQuantBlock;
    require_finite(v, kQuantBlock, b * kQuantBlock, fn);
    float lo, hi;
    block_min_max(v, lo, hi);
    const float d = (hi - lo) / 15;
    const float id = detail::reciprocal_scale(d);
    y[b].d = scale_f16(d, v, kQuantBlock, b, fn);
    y[b].m = scale_f16(lo, v, kQuantBlock, b, fn);
    // (v − lo)·id lies in [0, 15 + ε]: truncating + 0.5 rounds half up.
    auto q = [&](int j) {
      const int t = static_cast<int>((v[j] - lo) * id + 0.5f);
      return t < 15 ? t : 15;
    };
    for (int j = 0; j < 16; ++j) y[b].qs[j] = static_cast<uint8_t>(q(j) | (q(j + 16) << 4));
  }
}

void quantize_row_q5_0(const float* x, BlockQ5_0* y, int64_t n) {
  const char* fn = "quantize_row_q5_0";
  const int64_t blocks = block_count(n, kQuantBlock, fn);
  for (int64_t b = 0; b < blocks; ++b) {
    const float* v = x + b * kQuantBlock;
    require_finite(v, kQuantBlock, b * kQuantBlock, fn);
    // As Q4_0: the value of largest magnitude maps to code 0, d = max / −16.
    const float max = signed_absmax(v, kQuantBlock);
    const float d = max / -16;
    const float id = detail::reciprocal_scale(d);
    y[b].d = scale_f16(d, v, kQuantBlock, b, fn);
    uint8_t q[32];
    for (int j = 0; j < 32; ++j) {
      const int t = static_cast<int>(v[j] * id + 16.5f);  // v·id + 16.5 ≥ 0.5 − ε
      q[j] = static_cast<uint8_t>(t < 31 ? t : 31);
    }
    for (int j = 0; j < 16; ++j) y[b].qs[j] = static_cast<uint8_t>((q[j] & 0x0F) | ((q[j + 16] & 0x0F) << 4));
    store_high_bits(q, y[b].qh);
  }
}

void quantize_row_q5_1(const float* x, BlockQ5_1* y, int64_t n) {
  const char* fn = "quantize_row_q5_1";
  const int64_t blocks = block_count(n, kQuantBlock, fn);
  for (int64_t b = 0; b < blocks; ++b) {
    const float* v = x + b * kQuantBlock;
    require_finite(v, kQuantBlock, b * kQuantBlock, fn);
    float lo, hi;
    block_min_max(v, lo, hi);
    const float d = (hi - lo) / 31;
    const float id = detail::reciprocal_scale(d);
    y[b].d = scale_f16(d, v, kQuantBlock, b, fn);
    y[b].m = scale_f16(lo, v, kQuantBlock, b, fn);
    uint8_t q[32];  // (v − lo)·id + 0.5 ≤ 31.5 + ε: no clamp needed (ggml has none)
    for (int j = 0; j < 32; ++j) q[j] = static_cast<uint8_t>((v[j] - lo) * id + 0.5f);
    for (int j = 0; j < 16; ++j) y[b].qs[j] = static_cast<uint8_t>((q[j] & 0x0F) | ((q[j + 16] & 0x0F) << 4));
    store_high_bits(q, y[b].qh);
  }
}

// ggml's quantize_row_iq4_nl_ref: per block the x²-weighted least-squares scale of the codes
// that the plain scale max/−127 picks (ntry −1: no further grids tried). A block whose
// largest |x| is below 1e-15 gets d = 0 and — as in ggml, whose code array is reused from
// block to block — the codes of the previous block of the row (zeros for the first).
void quantize_row_iq4_nl(const float* x, BlockIQ4_NL* y, int64_t n) {
  const char* fn = "quantize_row_iq4_nl";
  const int64_t blocks = block_count(n, kQuantBlock, fn);
  uint8_t L[32] = {};
  for (int64_t b = 0; b < blocks; ++b) {
    const float* v = x + b * kQuantBlock;
    require_quantisable(v, kQuantBlock, b, fn);
    const float d = iq4_sub_block_scale(v, L, -1);
    y[b].d = scale_f16(d, v, kQuantBlock, b, fn);
    pack_nibbles_32(L, y[b].qs);
  }
}

// ggml's quantize_row_mxfp4_ref: with d = 2^(e − 128) and e = floor(log2 amax) − 2 + 127
// (amax the block's largest |x|), amax/d lies in [8, 16), at or above the codebook's
// second-largest entry 8 (values beyond 12·d take 12); then each value takes the entry
// of least |kMxfp4Values[i]·d − x|, the first of equals (+0 before −0). amax = 0 gives e = 0.
void quantize_row_mxfp4(const float* x, BlockMXFP4* y, int64_t n) {
  const char* fn = "quantize_row_mxfp4";
  const int64_t blocks = block_count(n, kQuantBlock, fn);
  auto nearest = [](float v, float d) {
    int best = 0;
    float best_err = std::fabs(static_cast<float>(kMxfp4Values[0]) * d - v);
    for (int i = 1; i < 16; ++i) {
      const float err = std::fabs(static_cast<float>(kMxfp4Values[i]) * d - v);
      if (err < best_err) {
        best = i;
        best_err = err;
      }
    }
    return best;
  };
  for (int64_t b = 0; b < blocks; ++b) {
    const float* v = x + b * kQuantBlock;
    require_finite(v, kQuantBlock, b * kQuantBlock, fn);
    const float amax = largest_abs(v, kQuantBlock);
    // floor(log2 amax) ≤ 127 for a finite f32, so e ≤ 252; below 2^−125 ggml's float is
    // negative (see the header): e = 0.
    const float e = amax > 0.0f ? std::floor(std::log2(amax)) - 2 + 127 : 0.0f;
    y[b].e = e > 0.0f ? static_cast<uint8_t>(e) : 0;
    const float d = e8m0_half_to_f32(y[b].e);
    for (int j = 0; j < 16; ++j) y[b].qs[j] = static_cast<uint8_t>(nearest(v[j], d) | nearest(v[16 + j], d) << 4);
  }
}

// ggml's quantize_row_iq4_xs_ref: each sub-block's scale searched over 15 grids (ntry 7),
// the super-block scale d = −max_scale/32 (max_scale: the sub-block scale of largest
// magnitude, sign kept), each sub-block's 6-bit code round(scale/d), and every value
// re-coded against d·code.

FFN_BLOCK_CODEC(q4_1, BlockQ4_1, kQuantBlock)
FFN_BLOCK_CODEC(q5_0, BlockQ5_0, kQuantBlock)
FFN_BLOCK_CODEC(q5_1, BlockQ5_1, kQuantBlock)
FFN_BLOCK_CODEC(iq4_nl, BlockIQ4_NL, kQuantBlock)
FFN_BLOCK_CODEC(mxfp4, BlockMXFP4, kQuantBlock)

}  // namespace ffn
