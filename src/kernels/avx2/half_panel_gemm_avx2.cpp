// AVX2 panel kernel for 16-bit weights (C = A·widen(P)), the tiles of f32_panel_gemm_avx2
// with loads that widen 8 weights to one ymm: bf16 pairs by masking or shifting left 16
// (exact), f16 by F16C's vcvtph2ps (exact).
// Compiled with the avx2 level's flags (ffn/isa_list.hpp); called only when the CPU has the level.
#include <cstring>

#include "kernels/avx2/avx2_kernels.hpp"
#include "kernels/avx2/vec_avx2.hpp"
#include "kernels/avx2/widen16_avx2.hpp"
#include "kernels/cpu_features.hpp"
#include "kernels/f32_panel_tiles.hpp"

namespace ffn::kernels {
namespace {

// A bf16 panel's row k (pair layout, kernels.hpp), columns c … c + 7: one load holds rows
// k and k ^ 1 of those columns, row k's values in the low halves when k is even.
struct PairedBf16Panel {
  using Elem = uint16_t;
  static __m256 at(const uint16_t* P, int64_t k, int64_t c) {
    const __m256i pairs =
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(P + bf16_panel_index(k & ~int64_t(1), c)));
    return _mm256_castsi256_ps((k & 1) ? _mm256_and_si256(pairs, _mm256_set1_epi32(int32_t(0xFFFF0000u)))
                                       : _mm256_slli_epi32(pairs, 16));
  }
};

// R ≤ 2 tokens × a bf16 pair panel's 64 columns over kc rows, one pass, each 32-byte load
// (rows k and k + 1 of 8 columns) read once and widened twice — row k by a shift, row k + 1
// by a mask — where PairedBf16Panel reads it at k and again at k + 1. Every element is the
// same chain acc ← fma(A[t][k], P[k][j], acc) over k in order, so the bits are the 2×64
// tile's. Strips of several in a token block (more than 2 tokens) share out the next K
// block's lines to prefetch (pf), as panel_tile does, a pair of rows at a time; a strip that
// streams the block alone may prefetch each pair of rows pf.ahead_bytes ahead.
// Measured against the 2×64 tile through PairedBf16Panel in docs/performance.md (AVX2).
constexpr int64_t kPairRowBytes = 2 * kPanelWidth * 2;  // weights k, k + 1 of 64 rows

template <int R, bool Resume>
void bf16_pair_tile(int64_t kc, const float* A, int64_t lda, const uint16_t* P, float* C, int64_t ldc,
                    PrefetchShare pf) {
  int64_t issued = 0;
  __m256 acc[R][8];
  for (int i = 0; i < R; ++i)
    for (int v = 0; v < 8; ++v) acc[i][v] = Resume ? _mm256_loadu_ps(C + i * ldc + 8 * v) : _mm256_setzero_ps();
  const __m256i high = _mm256_set1_epi32(int32_t(0xFFFF0000u));
  int64_t k = 0;
  for (; k + 2 <= kc; k += 2) {
    for (int64_t n = 0; n < 2 * pf.per_k && issued < pf.lines; ++n, ++issued)
      __builtin_prefetch(pf.first + 64 * issued, 0, 2);
    if (pf.ahead_bytes > 0) pf.row_ahead(P, k / 2, kPairRowBytes);
    const uint16_t* pair = P + bf16_panel_index(k, 0);
    __m256 a0[R], a1[R];
    for (int i = 0; i < R; ++i) {
      a0[i] = _mm256_set1_ps(A[i * lda + k]);
      a1[i] = _mm256_set1_ps(A[i * lda + k + 1]);
    }
    for (int v = 0; v < 8; ++v) {
      const __m256i pairs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(pair + 16 * v));
      const __m256 w0 = _mm256_castsi256_ps(_mm256_slli_epi32(pairs, 16));
      const __m256 w1 = _mm256_castsi256_ps(_mm256_and_si256(pairs, high));
      for (int i = 0; i < R; ++i) {
        acc[i][v] = _mm256_fmadd_ps(a0[i], w0, acc[i][v]);
        acc[i][v] = _mm256_fmadd_ps(a1[i], w1, acc[i][v]);
      }
    }
  }
  if (k < kc) {  // an odd last row: the low halves of its pair
    const uint16_t* pair = P + bf16_panel_index(k, 0);
    for (int v = 0; v < 8; ++v) {
      const __m256i pairs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(pair + 16 * v));
      const __m256 w0 = _mm256_castsi256_ps(_mm256_slli_epi32(pairs, 16));
      for (int i = 0; i < R; ++i) acc[i][v] = _mm256_fmadd_ps(_mm256_set1_ps(A[i * lda + k]), w0, acc[i][v]);
    }
  }
  for (int i = 0; i < R; ++i)
    for (int v = 0; v < 8; ++v) _mm256_storeu_ps(C + i * ldc + 8 * v, acc[i][v]);
}

// bf16 takes the pair tile, in strips of two tokens, up to this many tokens: alternated in
// one process on 7B's up matrix (Zen 4, 2 threads) against the 6×16 tile it was 1.43× at
// T = 3, 1.49× at 4 and 8, 1.41× at 16, while pairs of calls were level with it from 64
// (docs/performance.md, "The kernels' constants").
constexpr int64_t kBf16PairTileMaxTokens = 16;

// One or two tokens, whose strip streams the panel alone, prefetch each row 16 KiB ahead
// into L2 on Intel's cores: without it the widening loop, two to three times f32's
// instructions a byte, kept too few of the panel's lines in flight, and bf16 and f16
// decode read 0.55–0.68 of the memory roof (Emerald Rapids: 1.3–1.6× faster with it into
// L1, and 1.09–1.13× faster again into L2; docs/performance.md, "An Intel CPU: Emerald
// Rapids"). AMD's cores keep the hardware prefetcher alone (not measured there with AVX2).
constexpr StreamAhead kIntelAhead{.bytes = 16384, .into_l2 = true};

// The pair tile's strips of two tokens over the panel's K blocks (panel_gemm_blocked), one
// strip streaming a block alone prefetching as Ahead says.
template <StreamAhead Ahead>
void bf16_pair_tiles(int64_t T, int64_t K, const float* A, int64_t lda, const uint16_t* P, float* C, int64_t ldc) {
  panel_gemm_blocked<2, 2, Ahead>(
      T, K, A, lda, P, C, ldc,
      [&]<int R, bool Resume>(int64_t kc, const float* a, const uint16_t* block, float* c, PrefetchShare pf) {
        bf16_pair_tile<R, Resume>(kc, a, lda, block, c, ldc, pf);
      });
}

// Strips of one token (1×64) over 32-row pieces of the panel widened once
// (widened_strips, f32_panel_tiles.hpp), which read them with their FMAs' memory operands —
// where the strips or the 6×16 tile over the 16-bit panel widen each row again for every
// strip. Taken on Intel's cores from kWidenedMinTokens to kWidenedMaxTokens tokens, where
// it was faster than each tile it replaces (Emerald Rapids: f16 1.05–1.26× at 5 tokens,
// 1.22–1.52× at 6–8, 1.07–1.22× at 12–64; bf16 1.01–1.16× at 5–8, 1.08–1.35× at 12–32,
// 1.01–1.14× at 64; slower at 256 and, against the pair tile and the one-token strips, at
// 3–4; docs/performance.md, "An Intel CPU: Emerald Rapids"). Not measured on AMD's cores.
constexpr int64_t kWidenedMinTokens = 5;
constexpr int64_t kWidenedMaxTokens = 64;

// On AMD's cores f16 takes the 2×64 tile up to 4 tokens and the widened pieces at 5: on Zen 3
// (the AMD cores that run the avx2 level by default; Zen 4 and 5 run avx512) both were faster
// than the 1×64 strips, over 7B's gate and up from memory, 2 threads, alternated in one
// process: the 2×64 tile 1.11–1.20× at 3 tokens and 1.35–1.41× at 4, the widened pieces
// 1.24–1.37× at 5 (the 2×64 tile 1.16–1.18× there). (FFN_ISA=avx2 on a Zen 5 had measured the
// strips 1.18–1.25× faster than the 2×64 tile at 3 and 4 tokens; docs/performance.md, "A CPU
// without AVX-512: Zen 3".)
constexpr int64_t kAmdF16TwoRowTileMaxTokens = 4;
constexpr int64_t kAmdF16WidenedMaxTokens = 5;

}  // namespace

// The panel kernel (f32_panel_tiles.hpp) with the same widening loads: 16-bit panels laid
// out at load (InferenceBlock). Few tokens take the one-pass 2×64 tile (two tokens × 8 ymm,
// each row of the panel read once, see f32_panel_gemm_avx2_2x64_1x64_3x32_6x16) — f16 up to 4
// tokens on AMD's cores (kAmdF16TwoRowTileMaxTokens) and 5 over pieces widened once
// (kAmdF16WidenedMaxTokens), bf16 up to kBf16PairTileMaxTokens in strips of two (as
// bf16_pair_tile, which widens both rows of a pair load) — and the rest the four-pass 6×16
// tile; the bounds are where the one-pass tile stopped winning (docs/performance.md, "The
// kernels' constants"). On Intel's cores f16 takes the 2×64 tile up to 2 tokens, prefetching
// 16 KiB ahead (kIntelAhead), and strips of one (1×64, nothing spilled) sharing 32-row pieces
// of the panel from L1 (FewStripsKBlock) at 3 and 4; 5 to 64 tokens of either type take
// strips of one over pieces widened once (widened_strips). Every tile gives every element the
// same bits.
void f16_panel_gemm_avx2_2x64_1x64_6x16(int64_t T, int64_t K, const ActivationRows& A, const std::byte* panel, float* C,
                                        int64_t ldc) {
  const auto* P = reinterpret_cast<const uint16_t*>(panel);
  const bool intel = cpu_is_intel();
  if (T <= 2 && intel)
    f32_panel_gemm_tiled<Avx2Store, 2, 8, RowPanel<F16x8>, 2, kIntelAhead>(T, K, A.f32(), A.f32_stride(), P, C, ldc);
  else if (!intel && T <= kAmdF16TwoRowTileMaxTokens)
    f32_panel_gemm_tiled<Avx2Store, 2, 8, RowPanel<F16x8>>(T, K, A.f32(), A.f32_stride(), P, C, ldc);
  else if (T >= kWidenedMinTokens && T <= (intel ? kWidenedMaxTokens : kAmdF16WidenedMaxTokens))
    widened_strips<Avx2Store, 1, 8, RowPanel<F16x8>>(T, K, A.f32(), A.f32_stride(), P, C, ldc);
  else if (T <= 5)
    f32_panel_gemm_tiled<Avx2Store, 1, 8, RowPanel<F16x8>, 1, StreamAhead{}, kFewStripsKRows>(
        T, K, A.f32(), A.f32_stride(), P, C, ldc);
  else
    f32_panel_gemm_tiled<Avx2Store, 6, 2, RowPanel<F16x8>>(T, K, A.f32(), A.f32_stride(), P, C, ldc);
}

void bf16_panel_gemm_avx2_2x64_6x16(int64_t T, int64_t K, const ActivationRows& A, const std::byte* panel, float* C,
                                    int64_t ldc) {
  const auto* P = reinterpret_cast<const uint16_t*>(panel);
  const int64_t lda = A.f32_stride();
  const bool intel = cpu_is_intel();
  if (intel && T >= kWidenedMinTokens && T <= kWidenedMaxTokens)
    widened_strips<Avx2Store, 1, 8, PairedBf16Panel>(T, K, A.f32(), lda, P, C, ldc);
  else if (T <= kBf16PairTileMaxTokens && intel)
    bf16_pair_tiles<kIntelAhead>(T, K, A.f32(), lda, P, C, ldc);
  else if (T <= kBf16PairTileMaxTokens)
    bf16_pair_tiles<StreamAhead{}>(T, K, A.f32(), lda, P, C, ldc);
  else
    f32_panel_gemm_tiled<Avx2Store, 6, 2, PairedBf16Panel>(T, K, A.f32(), lda, P, C, ldc);
}

}  // namespace ffn::kernels
