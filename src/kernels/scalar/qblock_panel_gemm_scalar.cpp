// Plain C++ integer product with a qblock panel packed at load, the reference of the qblock
// panel kernels (layout and arithmetic in qblock_panels.hpp): exact integer block sums, then
// one std::fma per block (rounded once, as vfmadd), blocks in order.
#include <cmath>
#include <cstring>

#include "core/quant.hpp"
#include "kernels/qblock_panels.hpp"
#include "kernels/scalar/scalar_kernels.hpp"

namespace ffn::kernels {
namespace {

template <WeightType W>
void panel(int64_t T, int64_t K, const ActivationRows& A, const std::byte* P, float* C, int64_t ldc) {
  constexpr QFormat f = q_format(W);
  constexpr int64_t block_bytes = qblock_bytes(f);
  const int64_t blocks = K / 32;
  for (int64_t t = 0; t < T; ++t) {
    const int8_t* x = A.codes() + t * K;
    for (int64_t j = 0; j < kPanelWidth; ++j) {
      float acc = 0.0f;
      for (int64_t b = 0; b < blocks; ++b) {
        const auto* blk = reinterpret_cast<const uint8_t*>(P + b * block_bytes);
        uint16_t d = 0;
        std::memcpy(&d, blk + 2 * j, 2);
        const uint8_t* q = blk + kQBlockScaleBytes;
        int32_t sum = 0;
        for (int64_t i = 0; i < 32; ++i) {
          const int64_t g = i / 4, lane = i % 4;
          int32_t code = 0;
          if constexpr (f.nibbles) {
            const uint8_t byte = q[(g % 4) * 256 + 4 * j + lane];
            code = g < 4 ? byte & 0x0F : byte >> 4;
          } else {
            code = q[g * 256 + 4 * j + lane];
          }
          sum += (code - f.offset) * x[32 * b + i];
        }
        acc = std::fma(static_cast<float>(sum), f16_to_f32(d) * A.scales[t * blocks + b], acc);
      }
      C[t * ldc + j] = acc;
    }
  }
}

}  // namespace

FFN_PANEL_KERNEL_SET(qblock, panel_gemm_scalar, panel);

}  // namespace ffn::kernels
