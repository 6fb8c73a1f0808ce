// Plain C++ f32 GEMMs of backward (NN: C = A·B; TN: C += Aᵀ·B), the scalar references
// among the kernels: each element one chain over k in order, a separate multiply and add
// per step. Compiled for baseline x86-64 with FMA contraction off.
#include <algorithm>

#include "kernels/scalar/scalar_kernels.hpp"

namespace ffn::kernels {

// Row t of C is the running chain: after step k it holds every element's partial sum, so
// the row of B is read contiguously and each element still sums in k order.
void f32_gemm_nn_scalar(int64_t T, int64_t N, int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb,
                        float* C, int64_t ldc, bool accumulate) {
  for (int64_t t = 0; t < T; ++t) {
    float* c = C + t * ldc;
    if (!accumulate) std::fill(c, c + N, 0.0f);
    for (int64_t k = 0; k < K; ++k) {
      const float a = A[t * lda + k];
      const float* b = B + k * ldb;
      for (int64_t n = 0; n < N; ++n) c[n] += a * b[n];
    }
  }
}

// Sums for 64 columns at a time are formed from 0 in a local row, then added to C once.
void f32_gemm_tn_add_scalar(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
                            int64_t ldb, float* C, int64_t ldc) {
  constexpr int64_t kBlock = 64;
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n0 = 0; n0 < N; n0 += kBlock) {
      const int64_t nb = std::min(kBlock, N - n0);
      float sum[kBlock] = {};
      for (int64_t k = 0; k < K; ++k) {
        const float a = A[k * lda + m];
        const float* b = B + k * ldb + n0;
        for (int64_t j = 0; j < nb; ++j) sum[j] += a * b[j];
      }
      float* c = C + m * ldc + n0;
      for (int64_t j = 0; j < nb; ++j) c[j] += sum[j];
    }
}

}  // namespace ffn::kernels
