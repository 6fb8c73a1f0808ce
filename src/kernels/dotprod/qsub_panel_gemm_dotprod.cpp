// SDOT product with a qsub panel packed at load (layout, integers and arithmetic in
// qsub_panels.hpp): the 1×64 and 4×64 tiles of qsub_tile_neon.hpp for every qsub type.
// Compiled with the dotprod level's flags (ffn/isa_list.hpp); called only when the CPU has the level.
#include "kernels/dotprod/dotprod_kernels.hpp"
#include "kernels/dotprod/qsub_tile_neon.hpp"

namespace ffn::kernels {
namespace {

template <WeightType W>
void panel(int64_t T, int64_t K, const ActivationRows& A, const std::byte* P, float* C, int64_t ldc) {
  neon_qsub::panel<W, neon_q::Sdot>(T, K, A, P, C, ldc);
}

}  // namespace

FFN_PANEL_KERNEL_SET(qsub, panel_gemm_dotprod_1x64_4x64, panel);

}  // namespace ffn::kernels
