// ggml's ternary types TQ1_0 and TQ2_0 (BitNet b1.58's weights, d·{−1, 0, 1}; layouts in
// ggml_blocks.hpp): ggml's dequantisers and reference quantisers, bit for bit (the rules of
// ggml_blocks_32.cpp's opening comment: ggml's f32 expressions in its order, lround where ggml
// calls lroundf), their codecs, and their unpacking into the qsub panels' integers: one
// sub-block of scale 1 per 32 values, q = t in {0, 1, 2}, offset 1, no min.
//
// Where this differs from ggml on purpose: a non-finite x, or a block whose scale (its largest
// |x|) does not fit binary16, is an ffn::Error — ggml stores ±Inf / NaN scales there.
#include <cmath>
#include <cstring>

#include "core/codecs.hpp"
#include "core/ggml_blocks.hpp"
#include "core/quant.hpp"
#include "core/quant_checks.hpp"

namespace ffn {
namespace {

using detail::block_count;
using detail::reciprocal_scale;
using detail::require_finite;
using detail::scale_f16;

// A block's scale as both types take it: d = max |x| (ggml's MAX over fabsf), stored in
// binary16, and the reciprocal its codes are rounded with (of the f32 d, as ggml).
float ternary_scale(const float* v, int64_t b, uint16_t& d_bits, const char* fn) {
  require_finite(v, kSuperBlock, b * kSuperBlock, fn);
  float amax = 0.0f;
  for (int j = 0; j < kSuperBlock; ++j) amax = std::fmax(amax, std::fabs(v[j]));
  d_bits = scale_f16(amax, v, kSuperBlock, b, fn);
  return reciprocal_scale(amax);
}

// The code t = round(x / d) + 1 in {0, 1, 2} (lroundf: ties away from zero).
int trit(float x, float id) { return static_cast<int>(std::lround(x * id)) + 1; }

// n base-3 digits (most significant first) in one byte, scaled into 0 … 255 as ggml stores
// them: ⌈v·256/243⌉ for the digits' value v, after `pad` more ×3 (the 4-digit bytes are
// shifted up one digit).
uint8_t pack_trits(const int* t, int n, int pad) {
  uint8_t q = 0;
  for (int i = 0; i < n; ++i) q = static_cast<uint8_t>(q * 3 + t[i]);
  for (int i = 0; i < pad; ++i) q = static_cast<uint8_t>(q * 3);
  return static_cast<uint8_t>((static_cast<uint16_t>(q) * 256 + (243 - 1)) / 243);
}

// Digit n (0: most significant) of a byte so packed.
int unpack_trit(uint8_t byte, int n) {
  static constexpr uint8_t kPow3[5] = {1, 3, 9, 27, 81};
  const auto q = static_cast<uint8_t>(byte * kPow3[n]);
  return (static_cast<uint16_t>(q) * 3) >> 8;
}

// The trits of a TQ1_0 block in value order.
void tq1_0_trits(const BlockTQ1_0& b, uint8_t* t) {
  for (int n = 0; n < 5; ++n)
    for (int m = 0; m < 32; ++m) t[32 * n + m] = static_cast<uint8_t>(unpack_trit(b.qs[m], n));
  for (int n = 0; n < 5; ++n)
    for (int m = 0; m < 16; ++m) t[160 + 16 * n + m] = static_cast<uint8_t>(unpack_trit(b.qs[32 + m], n));
  for (int n = 0; n < 4; ++n)
    for (int j = 0; j < 4; ++j) t[240 + 4 * n + j] = static_cast<uint8_t>(unpack_trit(b.qh[j], n));
}

// The trits of a TQ2_0 block in value order.
void tq2_0_trits(const BlockTQ2_0& b, uint8_t* t) {
  for (int h = 0; h < 2; ++h)
    for (int l = 0; l < 4; ++l)
      for (int m = 0; m < 32; ++m) t[128 * h + 32 * l + m] = static_cast<uint8_t>((b.qs[32 * h + m] >> (2 * l)) & 3);
}

template <class Block, void (*Trits)(const Block&, uint8_t*)>
void dequantize_ternary(const Block* x, float* y, int64_t n, const char* fn) {
  const int64_t blocks = block_count(n, kSuperBlock, fn);
  uint8_t t[kSuperBlock];
  for (int64_t b = 0; b < blocks; ++b) {
    const float d = f16_to_f32(x[b].d);
    Trits(x[b], t);
    for (int j = 0; j < kSuperBlock; ++j) y[b * kSuperBlock + j] = static_cast<float>(t[j] - 1) * d;
  }
}

template <class Block, void (*Trits)(const Block&, uint8_t*)>
void unpack_ternary(const std::byte* block, SubBlockInts& out) {
  out = {};
  const auto b = codec_detail::read_block<Block>(block);
  out.d = b.d;
  for (int u = 0; u < kSuperBlock / 32; ++u) out.sc[u] = 1;
  Trits(b, out.q);
}

}  // namespace

void quantize_row_tq1_0(const float* x, BlockTQ1_0* y, int64_t n) {
  const char* fn = "quantize_row_tq1_0";
  const int64_t blocks = block_count(n, kSuperBlock, fn);
  for (int64_t b = 0; b < blocks; ++b) {
    const float* v = x + b * kSuperBlock;
    const float id = ternary_scale(v, b, y[b].d, fn);
    int t[5];
    for (int m = 0; m < 32; ++m) {  // values m + 32n
      for (int i = 0; i < 5; ++i) t[i] = trit(v[m + 32 * i], id);
      y[b].qs[m] = pack_trits(t, 5, 0);
    }
    for (int m = 0; m < 16; ++m) {  // values 160 + m + 16n
      for (int i = 0; i < 5; ++i) t[i] = trit(v[160 + m + 16 * i], id);
      y[b].qs[32 + m] = pack_trits(t, 5, 0);
    }
    for (int j = 0; j < 4; ++j) {  // values 240 + j + 4n
      for (int i = 0; i < 4; ++i) t[i] = trit(v[240 + j + 4 * i], id);
      y[b].qh[j] = pack_trits(t, 4, 1);
    }
  }
}

void quantize_row_tq2_0(const float* x, BlockTQ2_0* y, int64_t n) {
  const char* fn = "quantize_row_tq2_0";
  const int64_t blocks = block_count(n, kSuperBlock, fn);
  for (int64_t b = 0; b < blocks; ++b) {
    const float* v = x + b * kSuperBlock;
    const float id = ternary_scale(v, b, y[b].d, fn);
    for (int h = 0; h < 2; ++h)
      for (int m = 0; m < 32; ++m) {
        uint8_t q = 0;
        for (int l = 0; l < 4; ++l) q = static_cast<uint8_t>(q | (trit(v[128 * h + 32 * l + m], id) & 3) << (2 * l));
        y[b].qs[32 * h + m] = q;
      }
  }
}

void dequantize_row_tq1_0(const BlockTQ1_0* x, float* y, int64_t n) {
  dequantize_ternary<BlockTQ1_0, tq1_0_trits>(x, y, n, "dequantize_row_tq1_0");
}
void dequantize_row_tq2_0(const BlockTQ2_0* x, float* y, int64_t n) {
  dequantize_ternary<BlockTQ2_0, tq2_0_trits>(x, y, n, "dequantize_row_tq2_0");
}

FFN_BLOCK_CODEC(tq1_0, BlockTQ1_0, kSuperBlock)
FFN_BLOCK_CODEC(tq2_0, BlockTQ2_0, kSuperBlock)

template <>
void unpack<WeightType::tq1_0>(const std::byte* block, SubBlockInts& out) {
  unpack_ternary<BlockTQ1_0, tq1_0_trits>(block, out);
}
template <>
void unpack<WeightType::tq2_0>(const std::byte* block, SubBlockInts& out) {
  unpack_ternary<BlockTQ2_0, tq2_0_trits>(block, out);
}

}  // namespace ffn
