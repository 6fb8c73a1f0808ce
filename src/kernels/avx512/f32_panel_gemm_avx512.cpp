// AVX-512F f32 product with a weight panel packed at load (C = A·P), 6×64 register tile:
// 6 tokens × 4 zmm = 24 accumulators (+ 4 vectors of a panel row + 1 broadcast of the 32
// registers): 10 loads per 24 FMAs, the whole 64-column panel in one pass.
// Loops in f32_panel_tiles.hpp, vector operations in vec_avx512.hpp.
// Compiled with -mavx512f -mfma (this file only); called only when the CPU has AVX-512F.
#include "kernels/avx512/vec_avx512.hpp"
#include "kernels/f32_panel_tiles.hpp"

namespace ffn::kernels {

void f32_panel_gemm_avx512_6x64(int64_t T, int64_t K, const float* A, int64_t lda, const float* P, float* C,
                                int64_t ldc) {
  using Panel = RowPanel<LoadF32<Avx512Store>>;
  f32_panel_gemm_tiled<Avx512Store, 6, 4, Panel, kStreamedTokensPerLineOp>(T, K, A, lda, P, C, ldc);
}

}  // namespace ffn::kernels
