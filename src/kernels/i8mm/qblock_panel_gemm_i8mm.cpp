// USDOT and USMMLA product with a qblock panel (Q8_0, Q4_0) packed at load (layout and
// arithmetic in qblock_panels.hpp): a lone token (and the tokens a strip leaves) by the 1×64
// tile of dotprod/qblock_tile_neon.hpp with USDOT — the unsigned codes as they are, each block
// sum starting from −offset·Σx, no EOR for q8_0 — and strips of 4 tokens by the 4×8 USMMLA
// tile of qblock_tile_mmla.hpp. Both the same exact integers as SDOT's, so the same bits.
// Compiled with the i8mm level's flags (ffn/isa_list.hpp); called only when the CPU has the level.
#include "kernels/i8mm/i8mm_kernels.hpp"
#include "kernels/i8mm/qblock_tile_mmla.hpp"

namespace ffn::kernels {
namespace {

// USDOT (Armv8.6 i8mm): unsigned weights × signed activations.
struct Usdot {
  static constexpr bool kUnsignedBytes = true;
  template <int lane>
  static inline FFN_INLINE int32x4_t dot(int32x4_t s, uint8x16_t w, int8x16_t x) {
    return vusdotq_laneq_s32(s, w, x, lane);
  }
};

template <WeightType W>
void panel(int64_t T, int64_t K, const ActivationRows& A, const std::byte* P, float* C, int64_t ldc) {
  mmla_qblock::panel<W, Usdot>(T, K, A, P, C, ldc);
}

}  // namespace

FFN_PANEL_KERNEL_SET(qblock, panel_gemm_i8mm_1x64_4x8, panel);

}  // namespace ffn::kernels
