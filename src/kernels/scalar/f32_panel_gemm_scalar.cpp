// Plain C++ product with a weight panel packed at load (C = A·P), the scalar reference of
// f32_panel_gemm: each element one chain over k in order, a separate multiply and add per
// step. Compiled for baseline x86-64 with FMA contraction off.
#include <algorithm>

#include "kernels/scalar/scalar_kernels.hpp"

namespace ffn::kernels {

// Row t of C is the running chain: after step k it holds every element's partial sum.
void f32_panel_gemm_scalar(int64_t T, int64_t K, const float* A, int64_t lda, const float* P, float* C,
                           int64_t ldc) {
  for (int64_t t = 0; t < T; ++t) {
    float* c = C + t * ldc;
    std::fill(c, c + kPanelWidth, 0.0f);
    for (int64_t k = 0; k < K; ++k) {
      const float a = A[t * lda + k];
      const float* p = P + k * kPanelWidth;
      for (int64_t j = 0; j < kPanelWidth; ++j) c[j] += a * p[j];
    }
  }
}

}  // namespace ffn::kernels
