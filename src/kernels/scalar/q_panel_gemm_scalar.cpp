// Plain C++ integer product with a q8_0 / q4_0 panel packed at load, the reference of
// q_panel_gemm (layout and arithmetic in kernels.hpp): exact integer block sums, then one
// std::fma per block (rounded once, as vfmadd), blocks in order.
#include <cmath>
#include <cstring>

#include "ffn/quant.hpp"
#include "kernels/kernels.hpp"

namespace ffn::kernels {

void q_panel_gemm_scalar(WeightType type, int64_t T, int64_t K, Q8Rows A, const std::byte* P, float* C, int64_t ldc) {
  const int64_t blocks = K / 32, block_bytes = q_panel_block_bytes(type);
  for (int64_t t = 0; t < T; ++t) {
    const int8_t* x = A.qs + t * K;
    for (int64_t j = 0; j < kPanelWidth; ++j) {
      float acc = 0.0f;
      for (int64_t b = 0; b < blocks; ++b) {
        const auto* blk = reinterpret_cast<const uint8_t*>(P + b * block_bytes);
        uint16_t d = 0;
        std::memcpy(&d, blk + 2 * j, 2);
        const uint8_t* q = blk + kQPanelScaleBytes;
        int32_t sum = 0;
        for (int64_t i = 0; i < 32; ++i) {
          const int64_t g = i / 4, lane = i % 4;
          int32_t w = 0;
          if (type == WeightType::q8_0) {
            w = int32_t(q[g * 256 + 4 * j + lane]) - 128;
          } else {
            const uint8_t byte = q[(g % 4) * 256 + 4 * j + lane];
            w = int32_t(g < 4 ? byte & 0x0F : byte >> 4) - 8;
          }
          sum += w * x[32 * b + i];
        }
        acc = std::fma(static_cast<float>(sum), f16_to_f32(d) * A.d[t * blocks + b], acc);
      }
      C[t * ldc + j] = acc;
    }
  }
}

}  // namespace ffn::kernels
