// The codecs of the element types (codecs.hpp): f32 as it is, bf16 and f16 widened exactly and
// rounded to nearest even (core/quant.hpp's conversions), little-endian as the files store them.
#include <cstring>

#include "core/codecs.hpp"
#include "core/quant.hpp"

namespace ffn {
namespace {

template <uint16_t (*Round)(float)>
void halves_from_f32(const float* x, std::byte* row, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t h = Round(x[i]);
    std::memcpy(row + 2 * i, &h, 2);
  }
}

}  // namespace

template <>
void decode<WeightType::f32>(const std::byte* row, float* out, int64_t n) {
  std::memcpy(out, row, size_t(n) * 4);
}
template <>
void encode<WeightType::f32>(const float* x, std::byte* row, int64_t n) {
  std::memcpy(row, x, size_t(n) * 4);
}
template <>
void decode<WeightType::bf16>(const std::byte* row, float* out, int64_t n) {
  bf16_bytes_to_f32(row, out, n);
}
template <>
void encode<WeightType::bf16>(const float* x, std::byte* row, int64_t n) {
  halves_from_f32<f32_to_bf16>(x, row, n);
}
template <>
void decode<WeightType::f16>(const std::byte* row, float* out, int64_t n) {
  f16_bytes_to_f32(row, out, n);
}
template <>
void encode<WeightType::f16>(const float* x, std::byte* row, int64_t n) {
  halves_from_f32<f32_to_f16>(x, row, n);
}

}  // namespace ffn
