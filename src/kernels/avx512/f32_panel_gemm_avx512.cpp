// AVX-512F f32 product with a weight panel packed at load (C = A·P), the whole 64-column
// panel in one pass:
//   T ≤ 6 and T > 16: 6×64, 6 tokens × 4 zmm = 24 accumulators (+ 4 vectors of a panel row
//     + 1 broadcast of the 32 registers): 10 loads per 24 FMAs; up to 6 tokens one strip
//     reads each panel row once;
//   7 ≤ T ≤ 16: 4×64, 4 tokens × 4 zmm, in two to four strips that share each 32-row piece
//     of the panel from L1 while the next piece is prefetched (FewStripsKBlock,
//     f32_panel_tiles.hpp), where an 8×64 tile for 7 and 8 tokens kept part of its 32
//     accumulators on the stack and 6×64 strips read long K blocks the later strips
//     re-read from L2 (docs/performance.md, "The kernels' constants").
// Up to 6 tokens the strip relies on the hardware prefetcher alone on AMD's cores (a
// prefetch ahead was slower there at one and four tokens); on Intel's it prefetches each row
// 16 KiB ahead into L1 from two tokens, without which two to six tokens read the memory at
// 0.6–0.8 of the roof (docs/performance.md, "An Intel CPU: Emerald Rapids").
// Every tile gives every element the same chain (f32_panel_tiles.hpp), so the same bits.
// Loops in f32_panel_tiles.hpp, vector operations in vec_avx512.hpp.
// Compiled with the avx512 level's flags (ffn/isa_list.hpp); called only when the CPU has the level.
#include "kernels/avx512/avx512_kernels.hpp"
#include "kernels/avx512/vec_avx512.hpp"
#include "kernels/cpu_features.hpp"
#include "kernels/f32_panel_tiles.hpp"

namespace ffn::kernels {

void f32_panel_gemm_avx512_6x64_4x64(int64_t T, int64_t K, const float* A, int64_t lda, const float* P, float* C,
                                     int64_t ldc) {
  using Panel = RowPanel<LoadF32<Avx512Store>>;
  if (T >= 7 && T <= 16)
    f32_panel_gemm_tiled<Avx512Store, 4, 4, Panel, 4, StreamAhead{}, kFewStripsKRows>(T, K, A, lda, P, C, ldc);
  else if (T >= 2 && T <= 6 && cpu_is_intel())
    f32_panel_gemm_tiled<Avx512Store, 6, 4, Panel, kStreamedTokensPerLineOp, StreamAhead{16384, 2}>(T, K, A, lda, P, C,
                                                                                                    ldc);
  else
    f32_panel_gemm_tiled<Avx512Store, 6, 4, Panel, kStreamedTokensPerLineOp>(T, K, A, lda, P, C, ldc);
}

}  // namespace ffn::kernels
