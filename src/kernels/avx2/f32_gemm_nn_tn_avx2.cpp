// AVX2+FMA f32 GEMMs of backward (NN: C = A·B; TN: C += Aᵀ·B), 6×16 register tile: 6 rows
// × 2 ymm = 12 accumulators (+ 2 vectors of a row of B + 1 broadcast of the 16 registers).
// Loops and packing in f32_gemm_nn_tn_tiles.hpp, vector operations in vec_avx2.hpp.
// Compiled with the avx2 level's flags (ffn/isa_list.hpp); called only when the CPU has the level.
#include "kernels/avx2/vec_avx2.hpp"
#include "kernels/f32_gemm_nn_tn_tiles.hpp"
#include "kernels/f32_panel_tiles.hpp"
#include "kernels/avx2/transpose_avx2.hpp"
#include "kernels/avx2/avx2_kernels.hpp"

namespace ffn::kernels {
namespace {

// 256 rows of a 16-column panel: 16 KiB, within the L1 data cache beside the A strip.
constexpr int64_t kKBlock = 256;

}  // namespace

void f32_gemm_nn_avx2_6x16(int64_t T, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
                           int64_t ldb, float* C, int64_t ldc, bool accumulate) {
  f32_gemm_nn_tiled<Avx2Store, 6, 2, kKBlock>(T, N, K, A, lda, B, ldb, C, ldc, accumulate);
}

void f32_gemm_tn_add_avx2_6x16(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
                               int64_t ldb, float* C, int64_t ldc) {
  f32_gemm_tn_add_tiled<Avx2Store, 6, 2>(M, N, K, A, lda, B, ldb, C, ldc);
}

void f32_gemm_nt_packed_avx2_6x16(int64_t T, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
                             int64_t ldb, float* C, int64_t ldc) {
  f32_gemm_nt_through_panels<Avx2Store, 6, 2, AvxPanelPack>(T, N, K, A, lda, B, ldb, C, ldc);
}

}  // namespace ffn::kernels
