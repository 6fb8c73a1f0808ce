// AVX2+FMA f32 GEMM (C = A·Bᵀ), 3×3 register tile: 9 ymm accumulators of 8 lanes
// (+ 3 weight vectors + 1 activation vector of the 16 registers). Loops in
// f32_gemm_nt_tiles.hpp, vector operations in vec_avx2.hpp.
// Compiled with the avx2 level's flags (ffn/isa_list.hpp); called only when the CPU has the level.
#include "kernels/f32_gemm_nt_tiles.hpp"
#include "kernels/avx2/vec_avx2.hpp"
#include "kernels/avx2/avx2_kernels.hpp"

namespace ffn::kernels {

void f32_gemm_nt_avx2_3x3(int64_t T, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
                          int64_t ldb, float* C, int64_t ldc) {
  f32_gemm_nt_tiled<Avx2, 3, 3, 48>(T, N, K, A, lda, B, ldb, C, ldc);
}

}  // namespace ffn::kernels
