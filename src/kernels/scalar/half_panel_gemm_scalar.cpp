// The plain C++ panel kernel for 16-bit weights (C = A·widen(P)), the scalar reference: each
// weight widened exactly (ffn/quant.hpp), one accumulator, k in order, as
// f32_panel_gemm_scalar.
// Compiled for baseline x86-64 with FMA contraction off.
#include "ffn/quant.hpp"
#include "kernels/kernels.hpp"

namespace ffn::kernels {

// The panel kernel's reference (f32_panel_gemm_scalar with widened weights).
void half_panel_gemm_scalar(bool bf16, int64_t T, int64_t K, const float* A, int64_t lda, const uint16_t* P, float* C,
                            int64_t ldc) {
  for (int64_t t = 0; t < T; ++t) {
    float* c = C + t * ldc;
    for (int64_t j = 0; j < kPanelWidth; ++j) c[j] = 0.0f;
    for (int64_t k = 0; k < K; ++k) {
      const float a = A[t * lda + k];
      for (int64_t j = 0; j < kPanelWidth; ++j)
        c[j] += a * (bf16 ? bf16_to_f32(P[bf16_panel_index(k, j)]) : f16_to_f32(P[k * kPanelWidth + j]));
    }
  }
}

}  // namespace ffn::kernels
