// AVX2+FMA f32 product with a weight panel packed at load (C = A·P). 16 ymm registers
// cannot hold a tile of 6 tokens × the panel's 64 columns, so the tile depends on T:
//   T ≤ 4:  2×64, two tokens × 8 ymm: each row of the panel read once, all 64 columns
//           together, so the panel streams as one linear array (decode). Of its 16
//           accumulators the compiler keeps one on the stack and takes the row's vectors
//           as memory operands of the FMAs;
//   T = 5:  1×64, one token × 8 ymm, nothing spilled: five strips share each 32-row piece
//           of the panel from L1 (FewStripsKBlock), where strips of 2×64 ran their spilled
//           accumulator's load, FMA and store once a row (at 4 tokens too on the Zen 5 under
//           FFN_ISA=avx2; on Zen 3, the AMD cores that run this level by default, the 2×64
//           tile read 7B's up matrix 1.12–1.14× faster at 4 tokens: docs/performance.md,
//           "A CPU without AVX-512: Zen 3");
//   T ≤ 9:  3×32, 3 tokens × 4 ymm = 12 accumulators, the panel in two passes;
//   more:   6×16, 6 tokens × 2 ymm = 12 accumulators (+ 2 vectors of a panel row + 1
//           broadcast), the panel in four passes — the most FMAs per load.
// The bounds are where each tile stopped winning (docs/performance.md, "The kernels'
// constants"); a 4×64 tile, more spilled, was slower than 2×64. Those were measured on AMD's
// cores. On Intel's (Emerald Rapids, docs/performance.md, "An Intel CPU: Emerald Rapids")
// one token prefetches each row 16 KiB ahead into L1 (1.13–1.17× faster), and two and three
// tokens take the 1×64 strips (1.23–1.31× and 1.02–1.05×), where two tokens' 2×64 tile, its
// accumulator spilled, read the memory at 0.6–0.75 of the roof.
// Every tile computes each element by the same chain (f32_panel_tiles.hpp), so the choice
// changes no bit: a token gets the same result alone or in any batch.
// Loops in f32_panel_tiles.hpp, vector operations in vec_avx2.hpp.
// Compiled with the avx2 level's flags (ffn/isa_list.hpp); called only when the CPU has the level.
#include "kernels/avx2/avx2_kernels.hpp"
#include "kernels/avx2/vec_avx2.hpp"
#include "kernels/cpu_features.hpp"
#include "kernels/f32_panel_tiles.hpp"

namespace ffn::kernels {

void f32_panel_gemm_avx2_2x64_1x64_3x32_6x16(int64_t T, int64_t K, const float* A, int64_t lda, const float* P,
                                             float* C, int64_t ldc) {
  // Token blocks of two to five strips read K kFewStripsKRows rows at a time
  // (FewStripsKBlock, f32_panel_tiles.hpp).
  using Panel = RowPanel<LoadF32<Avx2Store>>;
  if (T == 1 && cpu_is_intel())
    f32_panel_gemm_tiled<Avx2Store, 1, 8, Panel, 1, StreamAhead{16384}>(T, K, A, lda, P, C, ldc);
  else if (T <= 4 && !cpu_is_intel())
    f32_panel_gemm_tiled<Avx2Store, 2, 8, Panel, 2, StreamAhead{}, kFewStripsKRows>(T, K, A, lda, P, C, ldc);
  else if (T <= 5)
    f32_panel_gemm_tiled<Avx2Store, 1, 8, Panel, 1, StreamAhead{}, kFewStripsKRows>(T, K, A, lda, P, C, ldc);
  else if (T <= 9)
    f32_panel_gemm_tiled<Avx2Store, 3, 4, Panel, 0, StreamAhead{}, kFewStripsKRows>(T, K, A, lda, P, C, ldc);
  else
    f32_panel_gemm_tiled<Avx2Store, 6, 2>(T, K, A, lda, P, C, ldc);
}

}  // namespace ffn::kernels
