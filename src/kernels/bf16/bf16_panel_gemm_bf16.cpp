// The bf16 panel product with activations rounded to bf16, by BFDOT (FEAT_BF16; contract in
// kernels.hpp, "bf16 dotted").
// Compiled with the bf16 level's flags (ffn/isa_list.hpp); called only when the CPU has the level.
//
// The panel's pair layout (kernels.hpp) puts weights k and k + 1 of one row in a 32-bit lane,
// so a q register loaded from a pair row holds 4 columns × one pair, and
// vbfdotq_laneq_f32(acc, panel, act, L) adds, to each column's f32 accumulator, that pair
// dotted with pair L of `act` — the token's activations k … k + 7 (four pairs), one q load.
// So a token's activations are loaded once every four pairs and broadcast by the lane index.
//   1×64 (one token, decode): 16 accumulators cover the panel's 64 columns in one pass, and
//     each pair row (256 bytes, 16 q loads) is read once, in order: the panel streams.
//   8×8 (more tokens): 8 tokens × 2 vectors = 16 accumulators, 8 activation registers and
//     the 8 panel vectors of four pair rows — the 32 q registers; eight passes of 8 columns
//     over the K block (the later passes read it from cache), each panel vector feeding 8
//     BFDOTs. (6 tokens × 16 columns needs 24 + 6 + its panel vectors: GCC 12 spills 4
//     accumulators to the stack in its loop; 8×8 compiles without a spill.)
// Every element is one chain acc ← BFDOT(acc, pair q) over the pairs in order from 0
// (resumed through C between K blocks, an exact f32 store and load), whichever tile runs it,
// so a token's result is the same alone or in any batch.
#include <arm_neon.h>

#include <cstring>

#include "kernels/bf16/bf16_kernels.hpp"
#include "kernels/f32_panel_tiles.hpp"

namespace ffn::kernels {
namespace {

constexpr int kPanelVectors = int(kPanelWidth) / 4;  // q registers of 4 columns across a panel
constexpr int kPairsPerLoad = 4;                     // activation pairs in one q register
constexpr int kOneTokenTile = 1;

// Activations k … k + 7 of a token (a = its row at k, k even): four pairs.
bfloat16x8_t load_pairs(const uint16_t* a) { return vreinterpretq_bf16_u16(vld1q_u16(a)); }
// One pair, in lane 0 (the K tail, fewer than four pairs left in the block).
bfloat16x8_t load_pair(const uint16_t* a) {
  uint32_t v;
  std::memcpy(&v, a, sizeof v);
  return vreinterpretq_bf16_u32(vdupq_n_u32(v));
}

// Pair L of every token's activation register dotted with pair row `row` of the panel
// (already offset to this pass's first column): NV panel vectors, MR·NV BFDOTs.
template <int MR, int NV, int L>
inline void dot_pair(float32x4_t (&acc)[MR][NV], const bfloat16x8_t (&a)[MR], const uint16_t* row) {
  for (int v = 0; v < NV; ++v) {
    const bfloat16x8_t b = vreinterpretq_bf16_u16(vld1q_u16(row + 8 * v));
    for (int i = 0; i < MR; ++i) acc[i][v] = vbfdotq_laneq_f32(acc[i][v], b, a[i], L);
  }
}

// MR tokens × the panel's 64 columns over kc rows (kc / 2 pairs, rounded up) of a bf16
// panel block, in passes of NV vectors. The prefetch share of f32_panel_tiles.hpp is issued
// in the first pass, counted per row of k (two per pair); these tiles take no ahead prefetch
// (StreamAhead{}: the one-token tile's few BFDOTs a row leave nothing to hide it behind).
template <int MR, int NV, bool Resume>
void dot_tile(int64_t kc, const uint16_t* A, int64_t lda, const uint16_t* P, float* C, int64_t ldc, PrefetchShare pf) {
  static_assert(kPanelVectors % NV == 0, "a pass covers a whole part of the panel");
  const int64_t pairs = (kc + 1) / 2;
  for (int c0 = 0; c0 < int(kPanelWidth); c0 += 4 * NV) {
    float32x4_t acc[MR][NV];
    for (int i = 0; i < MR; ++i)
      for (int v = 0; v < NV; ++v) acc[i][v] = Resume ? vld1q_f32(C + i * ldc + c0 + 4 * v) : vdupq_n_f32(0.0f);
    int64_t issued = c0 == 0 ? 0 : pf.lines;
    // Pair row q of this pass's columns: bf16_panel_index(2q, c0).
    const uint16_t* row = P + bf16_panel_index(0, c0);
    constexpr int64_t kPairRow = 2 * kPanelWidth;  // values in a pair row
    int64_t q = 0;
    for (; q + kPairsPerLoad <= pairs; q += kPairsPerLoad, row += kPairsPerLoad * kPairRow) {
      for (int64_t n = 0; n < 2 * kPairsPerLoad * pf.per_k && issued < pf.lines; ++n, ++issued)
        __builtin_prefetch(pf.first + 64 * issued, 0, 2);
      bfloat16x8_t a[MR];
      for (int i = 0; i < MR; ++i) a[i] = load_pairs(A + i * lda + 2 * q);
      dot_pair<MR, NV, 0>(acc, a, row);
      dot_pair<MR, NV, 1>(acc, a, row + kPairRow);
      dot_pair<MR, NV, 2>(acc, a, row + 2 * kPairRow);
      dot_pair<MR, NV, 3>(acc, a, row + 3 * kPairRow);
    }
    for (; q < pairs; ++q, row += kPairRow) {
      for (int64_t n = 0; n < 2 * pf.per_k && issued < pf.lines; ++n, ++issued)
        __builtin_prefetch(pf.first + 64 * issued, 0, 2);
      bfloat16x8_t a[MR];
      for (int i = 0; i < MR; ++i) a[i] = load_pair(A + i * lda + 2 * q);
      dot_pair<MR, NV, 0>(acc, a, row);
    }
    for (int i = 0; i < MR; ++i)
      for (int v = 0; v < NV; ++v) vst1q_f32(C + i * ldc + c0 + 4 * v, acc[i][v]);
  }
}

// The blocking of f32_panel_tiles.hpp with an MR × (4·NV) tile; a one-pass tile's block of
// up to MR tokens streams (no prefetch share), a tile of several passes always shares.
template <int MR, int NV>
void panel_gemm(int64_t T, int64_t K, const uint16_t* A, int64_t lda, const uint16_t* P, float* C, int64_t ldc) {
  constexpr int kStreamedTokens = NV == kPanelVectors ? MR : 0;
  panel_gemm_blocked<MR, kStreamedTokens, StreamAhead{}>(
      T, K, A, lda, P, C, ldc,
      [&]<int R, bool Resume>(int64_t kc, const uint16_t* a, const uint16_t* block, float* c, PrefetchShare pf) {
        dot_tile<R, NV, Resume>(kc, a, lda, block, c, ldc, pf);
      });
}

}  // namespace

void bf16_panel_gemm_bf16_1x64_8x8(int64_t T, int64_t K, const ActivationRows& A, const std::byte* panel, float* C,
                                   int64_t ldc) {
  const auto* P = reinterpret_cast<const uint16_t*>(panel);
  if (T <= kOneTokenTile)
    panel_gemm<1, kPanelVectors>(T, K, A.bf16(), A.bf16_stride(), P, C, ldc);
  else
    panel_gemm<8, 2>(T, K, A.bf16(), A.bf16_stride(), P, C, ldc);
}

}  // namespace ffn::kernels
