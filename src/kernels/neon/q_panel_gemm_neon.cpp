// The integer panel kernels of CPUs without dotprod (Cortex-A72, A53): the qblock and qsub
// tiles of the dotprod level (dotprod/qblock_tile_neon.hpp, qsub_tile_neon.hpp) with SDOT's
// arithmetic in Armv8.0 instructions (neon_q::WideningDot: SMULL, ADDP, SADALP), so the same
// exact integer sums and the same bits as the scalar reference; q8_0's codes flipped back to
// signed weights as for SDOT.
// Compiled with the neon level's flags (ffn/isa_list.hpp); called only when the CPU has the level.
#include "kernels/dotprod/qblock_tile_neon.hpp"
#include "kernels/dotprod/qsub_tile_neon.hpp"
#include "kernels/neon/neon_kernels.hpp"

namespace ffn::kernels {
namespace {

template <WeightType W>
void qblock_panel(int64_t T, int64_t K, const ActivationRows& A, const std::byte* P, float* C, int64_t ldc) {
  neon_qblock::panel<W, neon_q::WideningDot>(T, K, A, P, C, ldc);
}

template <WeightType W>
void qsub_panel(int64_t T, int64_t K, const ActivationRows& A, const std::byte* P, float* C, int64_t ldc) {
  neon_qsub::panel<W, neon_q::WideningDot>(T, K, A, P, C, ldc);
}

}  // namespace

FFN_PANEL_KERNEL_SET(qblock, panel_gemm_neon_1x64_4x8, qblock_panel);
FFN_PANEL_KERNEL_SET(qsub, panel_gemm_neon_1x64_4x64, qsub_panel);

}  // namespace ffn::kernels
