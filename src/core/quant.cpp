// Half-precision conversions and the Q8_0 / Q4_0 block codecs. The quantisers follow
// ggml's reference quantisers operation for operation (f32 arithmetic, unfused: the scale
// d, its reciprocal id computed from the unrounded d, then a rounding of x·id), so a row
// quantised here is byte-identical to one quantised by ggml built without FMA contraction.
#include "core/quant.hpp"

#include "core/codecs.hpp"

#include <cmath>
#include <cstring>
#include <string>

#include "core/quant_checks.hpp"
#include "ffn/error.hpp"

namespace ffn {
namespace {

uint32_t f32_bits(float x) {
  uint32_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

float bits_f32(uint32_t b) {
  float x;
  std::memcpy(&x, &b, sizeof x);
  return x;
}

// Shifts m right by `shift` (1..31) bits, rounding to nearest, ties to even.
uint32_t shift_round_even(uint32_t m, int shift) {
  const uint32_t q = m >> shift;
  const uint32_t rest = m & ((1u << shift) - 1);
  const uint32_t half = 1u << (shift - 1);
  return q + ((rest > half || (rest == half && (q & 1))) ? 1 : 0);
}

}  // namespace

namespace detail {

int64_t block_count(int64_t n, int64_t block, const char* fn) {
  if (n < 0 || n % block != 0)
    throw Error(std::string(fn) + ": n = " + std::to_string(n) + " is not a non-negative multiple of " +
                std::to_string(block));
  return n / block;
}

uint16_t scale_f16(float d, const float* v, int64_t len, int64_t b, const char* fn) {
  const uint16_t h = f32_to_f16(d);
  if ((h & 0x7C00u) == 0x7C00u) {
    float amax = 0.0f;
    for (int64_t j = 0; j < len; ++j) amax = std::fmax(amax, std::fabs(v[j]));
    throw Error(std::string(fn) + ": block " + std::to_string(b) + " (largest |x| " + std::to_string(amax) +
                ") needs scale " + std::to_string(d) + ", beyond binary16's 65504");
  }
  return h;
}

void require_finite(const float* v, int64_t len, int64_t first, const char* fn) {
  for (int64_t j = 0; j < len; ++j)
    if (!std::isfinite(v[j]))
      throw Error(std::string(fn) + ": element " + std::to_string(first + j) + " is " + std::to_string(v[j]) +
                  "; only finite values can be quantised");
}

// The block's reciprocal scale as ggml computes it: 1/d, or 0 for an all-zero block. Where
// 1/d overflows (|d| < 2⁻¹²⁸, every |x| below ~1e-37) ggml's x·id is Inf or NaN and its
// conversion to an integer undefined; we take 0, which encodes the block as all zeros —
// what its binary16 scale, 0, decodes to anyway.
float reciprocal_scale(float d) {
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  return std::isfinite(id) ? id : 0.0f;
}

}  // namespace detail

uint16_t f32_to_f16(float x) {
  const uint32_t b = f32_bits(x);
  const uint32_t sign = (b >> 16) & 0x8000u;
  const uint32_t a = b & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return static_cast<uint16_t>(sign | 0x7E00u | ((a >> 13) & 0x3FFu));  // NaN
  // 65520 = 0x477FF000 lies halfway between 65504 (odd mantissa) and 2¹⁶: it and all above round to Inf.
  if (a >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);
  if (a >= 0x38800000u)  // ≥ 2⁻¹⁴: normal. Rebias the exponent (127 → 15); a carry out of the
                         // mantissa correctly bumps the exponent.
    return static_cast<uint16_t>(sign | shift_round_even(a - (112u << 23), 13));
  // Subnormal result: count units of 2⁻²⁴. With the implicit bit, x = m · 2^(e−150), that is
  // m · 2^(e−126) units; e ≤ 112 so the shift is ≥ 14, and from 25 on the result is 0.
  const int e = static_cast<int>(a >> 23);
  const int shift = 126 - e;
  if (shift >= 25) return static_cast<uint16_t>(sign);
  const uint32_t m = (a & 0x7FFFFFu) | 0x800000u;
  return static_cast<uint16_t>(sign | shift_round_even(m, shift));  // 0x400 = 2⁻¹⁴ if it rounds up
}

float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1Fu;
  const uint32_t mantissa = h & 0x3FFu;
  if (exponent == 0x1F) return bits_f32(sign | 0x7F800000u | (mantissa << 13));  // Inf, NaN
  if (exponent != 0) return bits_f32(sign | ((exponent + 112) << 23) | (mantissa << 13));
  // Zero or subnormal: mantissa · 2⁻²⁴, exact in f32.
  const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
  return sign ? -magnitude : magnitude;
}

uint16_t f32_to_bf16(float x) {
  const uint32_t b = f32_bits(x);
  if ((b & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((b >> 16) | 0x40u);  // NaN: set the quiet bit
  return static_cast<uint16_t>(shift_round_even(b, 16));  // may carry into the exponent: up to Inf
}

float bf16_to_f32(uint16_t h) { return bits_f32(static_cast<uint32_t>(h) << 16); }

void quantize_row_q8_0(const float* x, BlockQ8_0* y, int64_t n) {
  const int64_t blocks = detail::block_count(n, kQuantBlock, "quantize_row_q8_0");
  for (int64_t b = 0; b < blocks; ++b) {
    const float* v = x + b * kQuantBlock;
    detail::require_finite(v, kQuantBlock, b * kQuantBlock, "quantize_row_q8_0");
    float amax = 0.0f;
    for (int64_t j = 0; j < kQuantBlock; ++j) amax = std::fmax(amax, std::fabs(v[j]));
    const float d = amax / 127.0f;
    const float id = detail::reciprocal_scale(d);
    y[b].d = detail::scale_f16(d, v, kQuantBlock, b, "quantize_row_q8_0");
    // |v·id| ≤ 127·(1 + 2⁻²²), so roundf (ties away from zero) stays within int8.
    for (int64_t j = 0; j < kQuantBlock; ++j) y[b].qs[j] = static_cast<int8_t>(std::round(v[j] * id));
  }
}

void quantize_row_q4_0(const float* x, BlockQ4_0* y, int64_t n) {
  const int64_t blocks = detail::block_count(n, kQuantBlock, "quantize_row_q4_0");
  for (int64_t b = 0; b < blocks; ++b) {
    const float* v = x + b * kQuantBlock;
    detail::require_finite(v, kQuantBlock, b * kQuantBlock, "quantize_row_q4_0");
    // The value of largest magnitude, sign kept (the first one on a tie), is mapped to q = 0:
    // d = max/−8, so the grid is (q − 8)·d for q in 0..15 and the other sign reaches only 7|d|.
    float amax = 0.0f, max = 0.0f;
    for (int64_t j = 0; j < kQuantBlock; ++j)
      if (amax < std::fabs(v[j])) {
        amax = std::fabs(v[j]);
        max = v[j];
      }
    const float d = max / -8.0f;
    const float id = detail::reciprocal_scale(d);
    y[b].d = detail::scale_f16(d, v, kQuantBlock, b, "quantize_row_q4_0");
    // v·id + 8.5 lies in [0.5 − ε, 16.5 + ε]: truncation is round-half-up of v·id, then + 8;
    // 16 (v·id ≥ 7.5) is clamped to 15.
    auto q = [&](int64_t j) {
      const int t = static_cast<int>(v[j] * id + 8.5f);
      return static_cast<uint8_t>(t < 15 ? t : 15);
    };
    for (int64_t j = 0; j < kQuantBlock / 2; ++j)
      y[b].qs[j] = static_cast<uint8_t>(q(j) | (q(j + kQuantBlock / 2) << 4));
  }
}

void dequantize_row_q8_0(const BlockQ8_0* x, float* y, int64_t n) {
  const int64_t blocks = detail::block_count(n, kQuantBlock, "dequantize_row_q8_0");
  for (int64_t b = 0; b < blocks; ++b) {
    const float d = f16_to_f32(x[b].d);
    for (int64_t j = 0; j < kQuantBlock; ++j) y[b * kQuantBlock + j] = static_cast<float>(x[b].qs[j]) * d;
  }
}

void dequantize_row_q4_0(const BlockQ4_0* x, float* y, int64_t n) {
  const int64_t blocks = detail::block_count(n, kQuantBlock, "dequantize_row_q4_0");
  for (int64_t b = 0; b < blocks; ++b) {
    const float d = f16_to_f32(x[b].d);
    float* out = y + b * kQuantBlock;
    for (int64_t j = 0; j < kQuantBlock / 2; ++j) {
      out[j] = static_cast<float>((x[b].qs[j] & 0x0F) - 8) * d;
      out[j + kQuantBlock / 2] = static_cast<float>((x[b].qs[j] >> 4) - 8) * d;
    }
  }
}

void f16_bytes_to_f32(const std::byte* src, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, src + 2 * i, 2);  // x86-64 is little-endian, as the formats are
    out[i] = f16_to_f32(h);
  }
}

void bf16_bytes_to_f32(const std::byte* src, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, src + 2 * i, 2);
    out[i] = bf16_to_f32(h);
  }
}

FFN_BLOCK_CODEC(q8_0, BlockQ8_0, kQuantBlock)
FFN_BLOCK_CODEC(q4_0, BlockQ4_0, kQuantBlock)

}  // namespace ffn
