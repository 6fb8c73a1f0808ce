// AVX-512F f32 GEMM (C = A·Bᵀ), 4×4 register tile: 16 zmm accumulators of 16 lanes
// (+ 4 weight vectors + 1 activation vector of the 32 registers). Loops in
// f32_gemm_nt_tiles.hpp, vector operations in vec_avx512.hpp.
// Compiled with the avx512 level's flags (ffn/isa_list.hpp); called only when the CPU has the level.
#include "kernels/f32_gemm_nt_tiles.hpp"
#include "kernels/avx512/vec_avx512.hpp"
#include "kernels/avx512/avx512_kernels.hpp"

namespace ffn::kernels {

void f32_gemm_nt_avx512_4x4(int64_t T, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
                            int64_t ldb, float* C, int64_t ldc) {
  f32_gemm_nt_tiled<Avx512, 4, 4, 64>(T, N, K, A, lda, B, ldb, C, ldc);
}

}  // namespace ffn::kernels
