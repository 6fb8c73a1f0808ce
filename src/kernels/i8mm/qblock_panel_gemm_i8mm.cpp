// USDOT product with a q8_0 panel packed at load (layout and arithmetic in qblock_panels.hpp):
// the tiles of dotprod/qblock_tile_neon.hpp, the 1×64 with USDOT, which multiplies the
// unsigned codes q = w + 128 by the signed activations as they are — no EOR a panel vector —
// each block sum starting from −128·Σx (the same exact integer as SDOT's of w, so the same
// bits); the 4×8 keeps SDOT, whose EOR its 4 tokens share, cheaper than 4 tokens' −128·Σx.
// Only q8_0 is in the set (i8mm_kernels.hpp).
// Compiled with the i8mm level's flags (ffn/isa_list.hpp); called only when the CPU has the level.
#include "kernels/dotprod/qblock_tile_neon.hpp"
#include "kernels/i8mm/i8mm_kernels.hpp"

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
  neon_qblock::panel<W, Usdot, neon_q::Sdot>(T, K, A, P, C, ldc);
}

}  // namespace

// q8_0 alone: the byte codes, the only ones SDOT cannot take as they are.
const PanelGemmSet qblock_panel_gemm_i8mm_1x64_4x8 =
    panel_gemm_set<PanelFamily::qblock>([]<WeightType W>() -> PanelGemm {
      if constexpr (q_format(W).nibbles)
        return nullptr;
      else
        return &panel<W>;
    });

}  // namespace ffn::kernels
