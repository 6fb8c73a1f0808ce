// Activations quantised to q8_0 for the integer kernels (layout in kernels.hpp). The
// blocks come from quantize_row_q8_0 itself, so they are ggml's bytes; the scale is kept
// widened to f32 and the groups-of-4 sums precomputed for the vector kernels.
#include <cstring>

#include "ffn/error.hpp"
#include "ffn/quant.hpp"
#include "kernels/kernels.hpp"

namespace ffn::kernels {

void quantize_q8_rows(WeightType wtype, int64_t T, int64_t K, int64_t c0, int64_t c1, const float* x, int64_t ldx,
                      int8_t* qs, float* d, int32_t* corr) {
  if (wtype != WeightType::q8_0 && wtype != WeightType::q4_0)
    throw Error("quantize_q8_rows: weights of type " + std::string(weight_type_info(wtype).name) +
                " take f32 activations");
  const int32_t offset = wtype == WeightType::q8_0 ? 128 : 8;
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t c = c0; c < c1; c += kQuantBlock) {
      BlockQ8_0 block;
      quantize_row_q8_0(x + t * ldx + c, &block, kQuantBlock);
      d[t * (K / kQuantBlock) + c / kQuantBlock] = f16_to_f32(block.d);
      std::memcpy(qs + t * K + c, block.qs, kQuantBlock);
      int32_t* g = corr + t * (K / 4) + c / 4;
      for (int i = 0; i < kQuantBlock / 4; ++i)
        g[i] = -offset * (block.qs[4 * i] + block.qs[4 * i + 1] + block.qs[4 * i + 2] + block.qs[4 * i + 3]);
    }
  }
}

}  // namespace ffn::kernels
