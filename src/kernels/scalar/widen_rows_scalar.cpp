// Weight rows of any stored type widened to their exact f32 values, in plain C++ through
// the codecs of ffn/quant.hpp (the reference the AVX2 version must equal).
#include <cstring>

#include "ffn/quant.hpp"
#include "kernels/kernels.hpp"

namespace ffn::kernels {

void widen_rows_scalar(WeightType type, int64_t rows, int64_t K, const std::byte* B, int64_t ldb, float* out) {
  for (int64_t r = 0; r < rows; ++r) {
    const std::byte* src = B + r * ldb;
    float* dst = out + r * K;
    switch (type) {
      case WeightType::f32:
        std::memcpy(dst, src, static_cast<size_t>(K) * sizeof(float));
        break;
      case WeightType::bf16:
        bf16_bytes_to_f32(src, dst, K);
        break;
      case WeightType::f16:
        f16_bytes_to_f32(src, dst, K);
        break;
      case WeightType::q8_0:
        dequantize_row_q8_0(reinterpret_cast<const BlockQ8_0*>(src), dst, K);
        break;
      case WeightType::q4_0:
        dequantize_row_q4_0(reinterpret_cast<const BlockQ4_0*>(src), dst, K);
        break;
    }
  }
}

}  // namespace ffn::kernels
