// AVX2+FMA f32 product with a weight panel packed at load (C = A·P), 6×16 register tile:
// 6 tokens × 2 ymm = 12 accumulators (+ 2 vectors of a panel row + 1 broadcast of the 16
// registers), the 64-column panel in four passes.
// Loops in f32_panel_tiles.hpp, vector operations in vec_avx2.hpp.
// Compiled with -mavx2 -mfma (this file only); called only when the CPU has both.
#include "kernels/avx2/vec_avx2.hpp"
#include "kernels/f32_panel_tiles.hpp"

namespace ffn::kernels {

void f32_panel_gemm_avx2_6x16(int64_t T, int64_t K, const float* A, int64_t lda, const float* P, float* C,
                              int64_t ldc) {
  f32_panel_gemm_tiled<Avx2Store, 6, 2>(T, K, A, lda, P, C, ldc);
}

}  // namespace ffn::kernels
