// AVX-512F f32 product with a weight panel packed at load (C = A·P), 6×64 register tile:
// 6 tokens × 4 zmm = 24 accumulators (+ 4 vectors of a panel row + 1 broadcast of the 32
// registers): 10 loads per 24 FMAs, the whole 64-column panel in one pass. Blocks of 7 and
// 8 tokens take an 8×64 tile instead, whose 32 accumulators the compiler partly keeps on
// the stack: one strip reads each panel row once, where 6×64 would read the block again
// for a second strip of 1 or 2 tokens (it loses from 9 tokens on, as a 12×64 tile does
// from 10).
// Both tiles give every element the same chain (f32_panel_tiles.hpp), so the same bits.
// Loops in f32_panel_tiles.hpp, vector operations in vec_avx512.hpp.
// Compiled with the avx512 level's flags (ffn/isa_list.hpp); called only when the CPU has the level.
#include "kernels/avx512/vec_avx512.hpp"
#include "kernels/f32_panel_tiles.hpp"
#include "kernels/avx512/avx512_kernels.hpp"

namespace ffn::kernels {

void f32_panel_gemm_avx512_8x64_6x64(int64_t T, int64_t K, const float* A, int64_t lda, const float* P, float* C,
                                     int64_t ldc) {
  using Panel = RowPanel<LoadF32<Avx512Store>>;
  if (T == 7 || T == 8)
    f32_panel_gemm_tiled<Avx512Store, 8, 4, Panel>(T, K, A, lda, P, C, ldc);
  else
    f32_panel_gemm_tiled<Avx512Store, 6, 4, Panel, kStreamedTokensPerLineOp>(T, K, A, lda, P, C, ldc);
}

}  // namespace ffn::kernels
