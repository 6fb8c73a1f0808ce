// Activations quantised for the K-panel kernels (layout in kq_panels.hpp). The blocks come
// from ggml's own quantisers as ffn restates them (quantize_row_q8_K for blocks of 256,
// quantize_row_q8_0 for blocks of 32), so they are ggml's values; the kernels read the
// codes, scales and sums of 16 from arrays of their own.
#include <cstring>

#include "core/ggml_blocks.hpp"
#include "ffn/error.hpp"
#include "kernels/kernels.hpp"

namespace ffn::kernels {

void quantize_q8k_rows(int64_t block, int64_t T, int64_t K, int64_t c0, int64_t c1, const float* x, int64_t ldx,
                       int8_t* qs, float* d, int16_t* bsums) {
  if (block != kSuperBlockValues && block != kQuantBlock)
    throw Error("quantize_q8k_rows: blocks of " + std::to_string(block) + " values; 256 or 32 expected");
  for (int64_t t = 0; t < T; ++t)
    for (int64_t c = c0; c < c1; c += block) {
      int8_t* q = qs + t * K + c;
      float* scale = d + t * (K / block) + c / block;
      if (block == kSuperBlockValues) {
        BlockQ8_K b;
        quantize_row_q8_K(x + t * ldx + c, &b, block);
        *scale = b.d;
        std::memcpy(q, b.qs, sizeof b.qs);
        std::memcpy(bsums + t * (K / 16) + c / 16, b.bsums, sizeof b.bsums);
      } else {
        BlockQ8_0 b;
        quantize_row_q8_0(x + t * ldx + c, &b, block);
        *scale = f16_to_f32(b.d);
        std::memcpy(q, b.qs, sizeof b.qs);
        for (int i = 0; i < 2; ++i) {
          int s = 0;
          for (int l = 0; l < 16; ++l) s += b.qs[16 * i + l];
          bsums[t * (K / 16) + c / 16 + i] = static_cast<int16_t>(s);
        }
      }
    }
}

}  // namespace ffn::kernels
