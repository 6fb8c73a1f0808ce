// Bit-exact conversions of IEEE binary16 (f16) and bfloat16 to f32, for file readers.
// Every f16 and bf16 value (subnormals, ±Inf, NaN payloads) is exactly representable in f32.
#pragma once

#include <cstdint>
#include <cstring>

namespace ffn {

inline float bits_to_f32(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

inline float bf16_to_f32(uint16_t h) { return bits_to_f32(static_cast<uint32_t>(h) << 16); }

inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1Fu;
  uint32_t mantissa = h & 0x3FFu;
  if (exponent == 0x1F) return bits_to_f32(sign | 0x7F800000u | (mantissa << 13));  // Inf, NaN
  if (exponent != 0) return bits_to_f32(sign | ((exponent + 112) << 23) | (mantissa << 13));
  if (mantissa == 0) return bits_to_f32(sign);  // ±0
  // Subnormal: value = mantissa · 2⁻²⁴; normalise it for f32.
  int shift = 0;
  while ((mantissa & 0x400u) == 0) {
    mantissa <<= 1;
    ++shift;
  }
  mantissa &= 0x3FFu;
  return bits_to_f32(sign | (static_cast<uint32_t>(113 - shift) << 23) | (mantissa << 13));
}

}  // namespace ffn
