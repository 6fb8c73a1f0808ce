// SDOT product with a qblock panel (Q8_0, Q4_0) packed at load (layout and arithmetic in
// qblock_panels.hpp): the 1×64 and 4×8 tiles of qblock_tile_neon.hpp with SDOT, q8_0's codes
// flipped back to signed weights by one EOR a panel vector (shared by a tile's tokens).
// Compiled with the dotprod level's flags (ffn/isa_list.hpp); called only when the CPU has the level.
#include "kernels/dotprod/dotprod_kernels.hpp"
#include "kernels/dotprod/qblock_tile_neon.hpp"

namespace ffn::kernels {
namespace {

template <WeightType W>
void panel(int64_t T, int64_t K, const ActivationRows& A, const std::byte* P, float* C, int64_t ldc) {
  neon_qblock::panel<W, neon_q::Sdot>(T, K, A, P, C, ldc);
}

}  // namespace

FFN_PANEL_KERNEL_SET(qblock, panel_gemm_dotprod_1x64_4x8, panel);

}  // namespace ffn::kernels
