// AVX2+FMA f32 product with a weight panel packed at load (C = A·P). 16 ymm registers
// cannot hold a tile of 6 tokens × the panel's 64 columns, so the tile depends on T:
//   T ≤ 5:  2×64, two tokens × 8 ymm: each row of the panel read once, all 64 columns
//           together, so the panel streams as one linear array (decode). Of its 16
//           accumulators the compiler keeps one on the stack and takes the row's vectors
//           as memory operands of the FMAs;
//   T ≤ 9:  3×32, 3 tokens × 4 ymm = 12 accumulators, the panel in two passes;
//   more:   6×16, 6 tokens × 2 ymm = 12 accumulators (+ 2 vectors of a panel row + 1
//           broadcast), the panel in four passes — the most FMAs per load.
// Measured on the 7B shape (FFN_ISA=avx2), alternating in one process: against 6×16 alone,
// one token × 64 columns was 1.44–1.46× faster at T = 1, 1.11–1.41× at 2, 1.08–1.31× at 3,
// and 3×32 1.10× at T = 4, 1.06× at 5, 1.12× at 6, 1.23–1.25× at 8, level at 10 to 12
// (0.98–1.01×), 0.97× at 256; 2×64 against those two 1.19× at T = 2, 1.09× at 3,
// 1.27–1.52× at 4, 1.14× at 5, 1.01–1.04× at 6 and 7, 0.85× at 8. (4×64, more spilled:
// 1.31× at T = 4, slower than 2×64.)
// Every tile computes each element by the same chain (f32_panel_tiles.hpp), so the choice
// changes no bit: a token gets the same result alone or in any batch.
// Loops in f32_panel_tiles.hpp, vector operations in vec_avx2.hpp.
// Compiled with -mavx2 -mfma (this file only); called only when the CPU has both.
#include "kernels/avx2/vec_avx2.hpp"
#include "kernels/f32_panel_tiles.hpp"
#include "kernels/avx2/avx2_kernels.hpp"

namespace ffn::kernels {

void f32_panel_gemm_avx2_2x64_3x32_6x16(int64_t T, int64_t K, const float* A, int64_t lda, const float* P, float* C,
                                        int64_t ldc) {
  if (T <= 5)
    f32_panel_gemm_tiled<Avx2Store, 2, 8>(T, K, A, lda, P, C, ldc);
  else if (T <= 9)
    f32_panel_gemm_tiled<Avx2Store, 3, 4>(T, K, A, lda, P, C, ldc);
  else
    f32_panel_gemm_tiled<Avx2Store, 6, 2>(T, K, A, lda, P, C, ldc);
}

}  // namespace ffn::kernels
