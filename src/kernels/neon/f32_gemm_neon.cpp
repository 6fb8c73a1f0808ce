// Advanced SIMD f32 GEMMs: the forward's C = A·Bᵀ (4×4 register tile of lane-parallel dot
// products: 16 accumulators + 4 weight vectors + 1 activation vector of the 32 registers), its
// packed form through a panel on the stack, and backward's C = A·B and C += Aᵀ·B (6 tokens ×
// 16 columns: 24 accumulators + 4 vectors of a row of B + 1 broadcast). Loops in the portable
// tile headers, vector operations in vec_neon.hpp.
// Compiled with the neon level's flags (ffn/isa_list.hpp); called only when the CPU has the level.
#include "kernels/f32_gemm_nn_tn_tiles.hpp"
#include "kernels/f32_gemm_nt_tiles.hpp"
#include "kernels/f32_panel_tiles.hpp"
#include "kernels/neon/neon_kernels.hpp"
#include "kernels/neon/vec_neon.hpp"

namespace ffn::kernels {
namespace {

// 256 rows of a 16-column panel: 16 KiB, within the L1 data cache beside the A strip.
constexpr int64_t kKBlock = 256;

}  // namespace

void f32_gemm_nt_neon_4x4(int64_t T, int64_t N, int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb,
                          float* C, int64_t ldc) {
  f32_gemm_nt_tiled<Neon, 4, 4, 64>(T, N, K, A, lda, B, ldb, C, ldc);
}

void f32_gemm_nt_packed_neon_6x16(int64_t T, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
                                  int64_t ldb, float* C, int64_t ldc) {
  f32_gemm_nt_through_panels<NeonStore, 6, 4>(T, N, K, A, lda, B, ldb, C, ldc);
}

void f32_gemm_nn_neon_6x16(int64_t T, int64_t N, int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb,
                           float* C, int64_t ldc, bool accumulate) {
  f32_gemm_nn_tiled<NeonStore, 6, 4, kKBlock>(T, N, K, A, lda, B, ldb, C, ldc, accumulate);
}

void f32_gemm_tn_add_neon_6x16(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
                               int64_t ldb, float* C, int64_t ldc) {
  f32_gemm_tn_add_tiled<NeonStore, 6, 4>(M, N, K, A, lda, B, ldb, C, ldc);
}

}  // namespace ffn::kernels
