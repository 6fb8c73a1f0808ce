// AVX-512F panel kernel for 16-bit weights (C = A·widen(P)), the 6×64 tile of
// f32_panel_gemm_avx512 with loads that widen 16 weights to one zmm: bf16 pairs by masking
// or shifting left 16 (exact: bf16 is an f32's upper half), f16 by vcvtph2ps (exact).
// Compiled with the avx512 level's flags (ffn/isa_list.hpp); called only when the CPU has the level.
#include "kernels/avx512/avx512_kernels.hpp"
#include "kernels/avx512/vec_avx512.hpp"
#include "kernels/avx512/widen16_avx512.hpp"
#include "kernels/cpu_features.hpp"
#include "kernels/f32_panel_tiles.hpp"

namespace ffn::kernels {
namespace {

// A bf16 panel's row k (pair layout, kernels.hpp), columns c … c + 15: one load holds
// rows k and k ^ 1 of those columns, row k's values in the low halves when k is even.
struct PairedBf16Panel {
  using Elem = uint16_t;
  static __m512 at(const uint16_t* P, int64_t k, int64_t c) {
    const __m512i pairs = _mm512_loadu_si512(P + bf16_panel_index(k & ~int64_t(1), c));
    return _mm512_castsi512_ps((k & 1) ? _mm512_and_si512(pairs, _mm512_set1_epi32(int32_t(0xFFFF0000u)))
                                       : _mm512_slli_epi32(pairs, 16));
  }
};

// One strip streams a block (the default StreamedTokens), prefetching 16 KiB ahead: into
// L1 on AMD's cores, into L2 on Intel's, where that was 1.03–1.04× faster at one token and
// 1.07–1.13× at two and four (Emerald Rapids, docs/performance.md, "An Intel CPU: Emerald
// Rapids").
constexpr StreamAhead kAhead{16384};
constexpr StreamAhead kAheadIntoL2{.bytes = 16384, .into_l2 = true};

// The 6×64 tile over a panel read through PanelLoad, streamed strips prefetching into L2 on
// Intel's cores and into L1 on others (kAhead, kAheadIntoL2).
template <class PanelLoad>
void tiles_6x64(int64_t T, int64_t K, const ActivationRows& A, const uint16_t* P, float* C, int64_t ldc) {
  if (cpu_is_intel())
    f32_panel_gemm_tiled<Avx512Store, 6, 4, PanelLoad, 6, kAheadIntoL2>(T, K, A.f32(), A.f32_stride(), P, C, ldc);
  else
    f32_panel_gemm_tiled<Avx512Store, 6, 4, PanelLoad, 6, kAhead>(T, K, A.f32(), A.f32_stride(), P, C, ldc);
}

// On Intel's cores 16 to 64 tokens take strips of 6×64 over 32-row pieces of the panel
// widened once (widened_strips, f32_panel_tiles.hpp) instead of strips widening each row
// again: f16 1.03–1.31× faster at 16 tokens, 1.18–1.27× at 32 and 64, bf16 1.02–1.13×, but
// 1.06–1.26× slower at 4 and 8 tokens and level at 256 (Emerald Rapids, docs/performance.md,
// "An Intel CPU: Emerald Rapids"). Not measured on AMD's cores.
constexpr int64_t kWidenedMinTokens = 16;
constexpr int64_t kWidenedMaxTokens = 64;

}  // namespace

// The panel kernel (f32_panel_tiles.hpp) with widening loads: 16-bit panels laid out at
// load (InferenceBlock). f16 blocks of 7 and 8 tokens take two strips of 4×64 sharing 32-row
// pieces of the panel from L1 (FewStripsKBlock), where 6×64 ran a strip of 6 and one of 1
// or 2 over long K blocks; from 10 tokens, where each strip's widening counts, and for bf16
// widened here (CPUs without AVX512_BF16) 4×64 was slower (docs/performance.md, "The
// kernels' constants"). On Intel's cores 16 to 64 tokens of either type read pieces widened
// once (kWidenedMinTokens).
void f16_panel_gemm_avx512_6x64(int64_t T, int64_t K, const ActivationRows& A, const std::byte* panel, float* C,
                                int64_t ldc) {
  const auto* P = reinterpret_cast<const uint16_t*>(panel);
  if (cpu_is_intel() && T >= kWidenedMinTokens && T <= kWidenedMaxTokens)
    widened_strips<Avx512Store, 6, 4, RowPanel<F16x16>>(T, K, A.f32(), A.f32_stride(), P, C, ldc);
  else if (T == 7 || T == 8)
    f32_panel_gemm_tiled<Avx512Store, 4, 4, RowPanel<F16x16>, 4, StreamAhead{}, kFewStripsKRows>(
        T, K, A.f32(), A.f32_stride(), P, C, ldc);
  else
    tiles_6x64<RowPanel<F16x16>>(T, K, A, P, C, ldc);
}

void bf16_panel_gemm_avx512_6x64(int64_t T, int64_t K, const ActivationRows& A, const std::byte* panel, float* C,
                                 int64_t ldc) {
  const auto* P = reinterpret_cast<const uint16_t*>(panel);
  if (cpu_is_intel() && T >= kWidenedMinTokens && T <= kWidenedMaxTokens)
    widened_strips<Avx512Store, 6, 4, PairedBf16Panel>(T, K, A.f32(), A.f32_stride(), P, C, ldc);
  else
    tiles_6x64<PairedBf16Panel>(T, K, A, P, C, ldc);
}

}  // namespace ffn::kernels
