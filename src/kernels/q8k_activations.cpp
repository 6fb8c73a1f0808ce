// Activations quantised to q8_K for the K-quant kernels (layout in kq_panels.hpp). The
// blocks come from quantize_row_q8_K itself (ggml's quantize_row_q8_K_ref), so they are
// ggml's values; the kernels read the codes, scales and sums from arrays of their own.
#include <cstring>

#include "core/ggml_blocks.hpp"
#include "kernels/kernels.hpp"

namespace ffn::kernels {

void quantize_q8k_rows(int64_t T, int64_t K, int64_t c0, int64_t c1, const float* x, int64_t ldx, int8_t* qs, float* d,
                       int16_t* bsums) {
  constexpr int64_t B = kSuperBlockValues;
  for (int64_t t = 0; t < T; ++t)
    for (int64_t c = c0; c < c1; c += B) {
      BlockQ8_K block;
      quantize_row_q8_K(x + t * ldx + c, &block, B);
      d[t * (K / B) + c / B] = block.d;
      std::memcpy(qs + t * K + c, block.qs, B);
      std::memcpy(bsums + t * (K / 16) + c / 16, block.bsums, sizeof block.bsums);
    }
}

}  // namespace ffn::kernels
