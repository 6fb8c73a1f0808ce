// Internal kernel interface: single-thread kernels with written contracts, one per ISA,
// and the table runtime dispatch picks from. Threaded drivers live in src/block/.
#pragma once

#include <cstdint>

#include "ffn/config.hpp"
#include "ffn/isa.hpp"

namespace ffn::kernels {

// f32_gemm_nt_<isa>_<tile>: C[t][n] = Σ_k A[t][k] · B[n][k]   for t < T, n < N.
//   A: [T][K], row stride lda (activations);  B: [N][K], row stride ldb (nn.Linear
//   weight rows);  C: [T][N], row stride ldc. No alignment required; T, N, K ≥ 0; C must
//   not overlap A or B. K = 0 writes zeros.
//   Determinism: every C element is computed by the same sequence of operations whatever
//   T and N are and wherever the element falls in a tile (edge tiles use masked loads, not
//   a different loop), so splitting T or N across threads never changes a result bit.
//   Accuracy: each element is a sum of K products in f32 with error ≤ K·u·Σ|A·B|.
using F32GemmNt = void (*)(int64_t T, int64_t N, int64_t K, const float* A, int64_t lda,
                           const float* B, int64_t ldb, float* C, int64_t ldc);

void f32_gemm_nt_scalar(int64_t T, int64_t N, int64_t K, const float* A, int64_t lda,
                        const float* B, int64_t ldb, float* C, int64_t ldc);
void f32_gemm_nt_avx2_3x3(int64_t T, int64_t N, int64_t K, const float* A, int64_t lda,
                          const float* B, int64_t ldb, float* C, int64_t ldc);
void f32_gemm_nt_avx512_4x4(int64_t T, int64_t N, int64_t K, const float* A, int64_t lda,
                            const float* B, int64_t ldb, float* C, int64_t ldc);

struct KernelTable {
  Isa isa;
  const char* f32_gemm_nt_name;
  F32GemmNt f32_gemm_nt;
};

// The kernels of one ISA (which must be supported), and those of the active ISA.
const KernelTable& kernel_table(Isa isa);
const KernelTable& active_kernels();

// Activations, in f32 with the C library's erfcf / tanhf / expf (each within a few ulps):
//   f32_activation:       v[i] = act(v[i])                 (2-matrix blocks)
//   f32_gated_activation: u[i] = act(g[i]) · u[i]          (gated blocks)
// NaN propagates; ±Inf give what IEEE arithmetic of the formula gives (as PyTorch).
void f32_activation(Activation a, float* v, int64_t n);
void f32_gated_activation(Activation a, const float* g, float* u, int64_t n);

}  // namespace ffn::kernels
