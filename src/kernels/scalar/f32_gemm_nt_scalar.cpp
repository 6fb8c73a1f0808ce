// Plain C++ f32 GEMM (C = A·Bᵀ), the scalar reference among the kernels: one accumulator,
// k in order. Compiled for baseline x86-64 with FMA contraction off.
#include "kernels/scalar/scalar_kernels.hpp"

namespace ffn::kernels {

void f32_gemm_nt_scalar(int64_t T, int64_t N, int64_t K, const float* A, int64_t lda,
                        const float* B, int64_t ldb, float* C, int64_t ldc) {
  for (int64_t n = 0; n < N; ++n) {
    const float* b = B + n * ldb;
    for (int64_t t = 0; t < T; ++t) {
      const float* a = A + t * lda;
      float acc = 0.0f;
      for (int64_t k = 0; k < K; ++k) acc += a[k] * b[k];
      C[t * ldc + n] = acc;
    }
  }
}

}  // namespace ffn::kernels
