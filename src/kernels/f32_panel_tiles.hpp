// The portable half of f32_panel_gemm (contract in kernels.hpp): C = A·P for one weight
// panel P packed at load, [K][kPanelWidth] floats, so that the k-th values of 64 weight
// rows lie side by side and a whole panel streams from memory as one linear array.
//
// The register tile is an outer product, MR tokens × NV vectors of the panel's row k: lane
// l of accumulator (i, v) is C[i][v·lanes + l] itself. The panel's 64 columns are covered
// in kPanelWidth / (NV·lanes) passes (one on AVX-512, four on AVX2).
//
// Blocking: tokens in blocks of kPanelTokenBlock (their K-block of A stays in L2 while
// every strip of MR tokens reuses the panel's K-block from L1/L2); K in blocks of
// kPanelKBlock rows of the panel (128 KiB; 64 rows for three strips, see kBalancedKBlock;
// for two to five strips of a tile given FewStripsKBlock, see kFewStripsAheadBytes).
// While a block's strips run they prefetch the next block — the next rows of the same
// linear array — into L2, its lines shared out evenly over the strips (in a block of
// three strips over the last two, see kBalancedKBlock), so that memory streams at an even
// pace while the FMAs run (all of it in the first strip would ask for far more than
// memory gives in that time, and stall that strip). A token block of a one-pass tile up to
// its StreamedTokens prefetches nothing: its first strip reads the panel once, in order,
// and the hardware prefetcher alone streams that fastest — the block's FMAs take less time
// than its bytes, so there is nothing for a prefetch to hide them behind, and its
// instructions only cost issue slots (larger blocks: kStreamedTokensPerLineOp). A tile of
// several passes (AVX2's 6×16 and 3×32) reads each row's lines a pass apart and always keeps
// the prefetch. (Measurements: docs/performance.md, "The kernels' constants".)
// Determinism: element C[t][j] is the chain acc ← fma(A[t][k], P[k][j], acc) over k in
// order from 0, resumed through C between K blocks; edge strips instantiate fewer rows of
// the same code. So a value depends on neither T nor the token's place in a tile: a token
// gets the same bits alone or in any batch, on any thread.
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/f32_gemm_nn_tn_tiles.hpp"
#include "kernels/f32_gemm_nt_tiles.hpp"
#include "kernels/kernels.hpp"

namespace ffn::kernels {

inline constexpr int64_t kPanelKBlock = 512;
// Token blocks of exactly kBalancedStrips strips (13–18 tokens with MR = 6) — where the
// panel's bytes and the strips' FMAs take about the same time — step K by this much
// instead: the strips share a 16 KiB piece of the panel from L1 and the next piece is
// prefetched close ahead; with two strips (memory-bound) or four and more (FMA-bound) that
// was level or slower. In such a block the first strip, which reads the piece first, issues
// no prefetch and the other strips share the next piece.
inline constexpr int64_t kBalancedKBlock = 64;
inline constexpr int64_t kBalancedStrips = 3;
// The StreamedTokens of one-pass tiles that dot a 64-byte line with one instruction per
// token: the AVX-512 f32 tile (16 weights of 4 bytes) and the vdpbf16ps tile (32 of 2).
// Up to 10 tokens their FMAs finish before memory delivers the block (the balance of this
// machine's roofs is ≈ 12 f32 tokens). The f16 tile widens each half-line with a
// conversion as well and keeps one strip.
inline constexpr int kStreamedTokensPerLineOp = 10;
// Token blocks of two to kFewStripsMax strips of a tile that reads the panel from memory
// faster than it runs its FMAs (AVX2's 2×64, 1×64 and 3×32, AVX-512's 4×64, given as
// panel_gemm_blocked's FewStripsKBlock) step K by that many rows instead, and prefetch the
// next block this much further ahead:
// in 128 KiB blocks the second strip re-read each block from L2 while the memory stood
// idle, and the forward took about the sum of its bytes' time and its FMAs'; in blocks the
// strips share from L1 the memory streams while they run (docs/performance.md, "The panel
// streamed once").
inline constexpr int64_t kFewStripsAheadBytes = 8192;
inline constexpr int64_t kFewStripsMax = 5;
// The FewStripsKBlock every such tile takes: 32 rows (8 KiB of an f32 panel, 4 KiB of a
// 16-bit one), which the strips share from L1.
inline constexpr int64_t kFewStripsKRows = 32;

// A share of the next block to prefetch: `lines` cache lines from `first`, at most
// `per_k` of them per step of k. In a streamed block (no share), a tile may instead
// prefetch each row of the panel `ahead_bytes` before it reads it, into L1 or, with
// ahead_into_l2, into L2 (0: none; see StreamAhead).
struct PrefetchShare {
  const char* first = nullptr;
  int64_t lines = 0;
  int64_t per_k = 0;
  int64_t ahead_bytes = 0;
  bool ahead_into_l2 = false;

  // Row k's `row_bytes` of a panel at P, ahead_bytes on, into L1 or L2.
  void row_ahead(const void* P, int64_t k, int64_t row_bytes) const {
    const char* row = static_cast<const char*>(P) + ahead_bytes + k * row_bytes;
    if (ahead_into_l2)
      for (int64_t line = 0; line < row_bytes; line += 64) __builtin_prefetch(row + line, 0, 2);
    else
      for (int64_t line = 0; line < row_bytes; line += 64) __builtin_prefetch(row + line, 0, 3);
  }
};

// Which streamed token blocks (at most StreamedTokens, which rely on the hardware
// prefetcher) still prefetch ahead of the row they read: those of at least `min_tokens`,
// `bytes` ahead, into L1 (into L2 with into_l2, which f16 and bf16 widened in registers
// take on Intel's cores): f16, and bf16 widened in registers, 16 KiB at every T (each
// half-line widens by a conversion before its FMA, so the loop does more work per byte than
// f32's and the out-of-order window alone no longer runs far enough ahead of the loads;
// likewise the integer kernels); bf16 with vdpbf16ps 8 KiB from 7 tokens (two strips, the
// second rereading the block); f32 none (on AMD's cores; Intel's take 16 KiB from two
// tokens: f32_panel_gemm_avx512_6x64_4x64).
struct StreamAhead {
  int64_t bytes = 0;
  int64_t min_tokens = 1;
  bool into_l2 = false;
};

// How a tile reads a panel: PanelLoad::at(P, k, c) is the f32 vector of row k's values in
// columns c … c + lanes − 1 (PanelLoad::Elem: the stored element). RowPanel reads [K][64]
// panels (f32, f16) through an element load of f32_gemm_nt_tiles.hpp; the bf16 pair layout
// (kernels.hpp) has loads of its own in each ISA's file.
template <class Load>
struct RowPanel {
  using Elem = typename Load::Elem;
  static auto at(const Elem* P, int64_t k, int64_t c) { return Load::load(P + k * kPanelWidth + c); }
};

// MR tokens × the panel's 64 columns over kc rows of the panel. With Resume, the chains
// start from C; otherwise from 0. The prefetches are issued in the first pass.
// Only C's first `cols` columns (1 … 64) are read and written; the others are computed
// from the panel's (zero) columns and dropped.
template <class V, int MR, int NV, bool Resume, class PanelLoad = RowPanel<LoadF32<V>>>
inline void panel_tile(int64_t kc, const float* A, int64_t lda, const typename PanelLoad::Elem* P, float* C,
                       int64_t ldc, PrefetchShare pf, int64_t cols = kPanelWidth) {
  using Vec = typename V::Vec;
  constexpr int64_t kCols = NV * V::lanes;
  static_assert(kPanelWidth % kCols == 0, "a pass covers a whole part of the panel");
  for (int64_t j0 = 0; j0 < kPanelWidth; j0 += kCols) {
    Vec acc[MR][NV];
    // Lanes of C that exist in each vector of this pass (0 … lanes).
    int64_t valid[NV];
    for (int v = 0; v < NV; ++v) valid[v] = std::clamp<int64_t>(cols - j0 - v * V::lanes, 0, V::lanes);
    for (int i = 0; i < MR; ++i)
      for (int v = 0; v < NV; ++v) {
        const float* c = C + i * ldc + j0 + v * V::lanes;
        acc[i][v] = !Resume || valid[v] == 0 ? V::zero()
                    : valid[v] == V::lanes   ? V::load(c)
                                             : V::load_tail(c, valid[v]);
      }
    int64_t issued = j0 == 0 ? 0 : pf.lines;
    // Row k of the panel starts k·kRowBytes into it (on average, in the bf16 pair layout).
    constexpr int64_t kRowBytes = kPanelWidth * int64_t(sizeof(*P));
    for (int64_t k = 0; k < kc; ++k) {
      for (int64_t n = 0; n < pf.per_k && issued < pf.lines; ++n, ++issued)
        __builtin_prefetch(pf.first + 64 * issued, 0, 2);
      if (pf.ahead_bytes > 0) pf.row_ahead(P, k, kRowBytes);
      Vec b[NV];
      for (int v = 0; v < NV; ++v) b[v] = PanelLoad::at(P, k, j0 + v * V::lanes);
      for (int i = 0; i < MR; ++i) {
        const Vec a = V::broadcast(A[i * lda + k]);
        for (int v = 0; v < NV; ++v) acc[i][v] = V::fmadd(a, b[v], acc[i][v]);
      }
    }
    for (int i = 0; i < MR; ++i)
      for (int v = 0; v < NV; ++v) {
        float* c = C + i * ldc + j0 + v * V::lanes;
        if (valid[v] == V::lanes)
          V::store(c, acc[i][v]);
        else if (valid[v] > 0)
          V::store_tail(c, acc[i][v], valid[v]);
      }
  }
}

// strip.template operator()<R>(t) for the strips of MR of n tokens, the last of the
// n mod MR that remain (R < MR, through with_count).
template <int MR, class Strip>
inline void for_each_strip(int64_t n, Strip&& strip) {
  int64_t t = 0;
  for (; t + MR <= n; t += MR) strip.template operator()<MR>(t);
  if (t < n) with_count<MR - 1>(n - t, [&]<int R>() { strip.template operator()<R>(t); });
}

// Strips of MR tokens over kc rows of an f32 panel laid out on the stack (`piece`, its
// first `cols` columns real): token t from A + t·lda, its chains in C's row t, resumed from
// C when resume; strip s of them prefetching pf(s).
template <class V, int MR, int NV, class Share>
inline void strips_over_piece(int64_t T, int64_t kc, const float* A, int64_t lda, const float* piece, float* C,
                              int64_t ldc, bool resume, Share pf, int64_t cols = kPanelWidth) {
  for_each_strip<MR>(T, [&]<int R>(int64_t t) {
    if (resume)
      panel_tile<V, R, NV, true>(kc, A + t * lda, lda, piece, C + t * ldc, ldc, pf(t / MR), cols);
    else
      panel_tile<V, R, NV, false>(kc, A + t * lda, lda, piece, C + t * ldc, ldc, pf(t / MR), cols);
  });
}

// The blocking of every panel kernel: tokens in blocks of kPanelTokenBlock, K in blocks of
// kPanelKBlock rows (even, so a block starts on a pair of the bf16 layout, whose rows take
// on average the same 64 elements as [K][64] layouts), strips of MR tokens, and the next
// block's prefetch shared over the strips — none for a block of at most StreamedTokens
// tokens, which one-pass tiles (reading each row of the panel once, all 64 columns
// together) set to at least MR and tiles of several passes to 0. The tile computes one
// strip over one K block:
//   tile.template operator()<R, Resume>(kc, a, block, c, pf)
// for R ≤ MR tokens from a = A + t·lda + k0, the panel's rows from `block` = P + k0·64,
// C rows from c (chains resumed from C when Resume).
template <int MR, int StreamedTokens, StreamAhead Ahead, int64_t FewStripsKBlock = 0, class ElemA, class ElemP,
          class Tile>
void panel_gemm_blocked(int64_t T, int64_t K, const ElemA* A, int64_t lda, const ElemP* P, float* C, int64_t ldc,
                        Tile tile) {
  constexpr int64_t kLinesPerRow = kPanelWidth * int64_t(sizeof(ElemP)) / 64;
  if (K == 0) {
    zero_panel_rows(C, T, ldc);
    return;
  }
  for (int64_t m0 = 0; m0 < T; m0 += kPanelTokenBlock) {
    const int64_t mb = std::min(kPanelTokenBlock, T - m0);
    const int64_t strips = (mb + MR - 1) / MR;
    const bool few = FewStripsKBlock > 0 && strips >= 2 && strips <= kFewStripsMax && mb > StreamedTokens;
    const bool balanced = strips == kBalancedStrips && !few;
    const int64_t kblock = few ? FewStripsKBlock : balanced ? kBalancedKBlock : kPanelKBlock;
    // The strips that share the next block's prefetch: [first_sharer, strips).
    const int64_t first_sharer = balanced ? 1 : 0, sharers = strips - first_sharer;
    for (int64_t k0 = 0; k0 < K; k0 += kblock) {
      const int64_t kc = std::min(kblock, K - k0);
      const ElemP* block = P + k0 * kPanelWidth;
      // The next block in memory: this panel's next K block, or the next panel's first
      // (panels are consecutive). Prefetching past the end of the array never faults.
      const ElemP* next = block + kc * kPanelWidth + (few ? kFewStripsAheadBytes / int64_t(sizeof(ElemP)) : 0);
      const ElemA* a = A + m0 * lda + k0;
      float* c = C + m0 * ldc;
      const bool resume = k0 > 0;
      // The next block's lines, shared out over the sharing strips.
      const int64_t lines = mb > StreamedTokens ? kc * kLinesPerRow : 0;
      const int64_t share = (lines + sharers - 1) / sharers, per_k = (share + kc - 1) / kc;
      const int64_t ahead_bytes = lines == 0 && mb >= Ahead.min_tokens ? Ahead.bytes : 0;
      auto strip = [&]<int R>(int64_t t) {
        const int64_t s = t / MR - first_sharer;
        const int64_t first = s < 0 ? lines : std::min(lines, s * share);
        const PrefetchShare pf{reinterpret_cast<const char*>(next) + 64 * first, std::min(share, lines - first), per_k,
                               ahead_bytes, Ahead.into_l2};
        if (resume)
          tile.template operator()<R, true>(kc, a + t * lda, block, c + t * ldc, pf);
        else
          tile.template operator()<R, false>(kc, a + t * lda, block, c + t * ldc, pf);
      };
      for_each_strip<MR>(mb, strip);
    }
  }
}

// Strips of MR tokens × NV vectors over pieces of kFewStripsKRows rows of a 16-bit panel,
// each piece widened once through PanelLoad into an f32 piece on the stack (8 KiB, in L1)
// that every strip then reads as an f32 panel (panel_tile), where tiles over the 16-bit
// panel widen each row again for every strip. The strips share out the prefetch of the
// piece kFewStripsAheadBytes past the next into L2, as the few-strip blocks do. Every
// element takes the same chain as in panel_tile over the 16-bit panel, so the bits are the
// same.
template <class V, int MR, int NV, class PanelLoad>
void widened_strips(int64_t T, int64_t K, const float* A, int64_t lda, const typename PanelLoad::Elem* P, float* C,
                    int64_t ldc) {
  static_assert(NV * V::lanes == kPanelWidth, "a strip reads a row of the piece in one pass");
  constexpr int64_t kRows = kFewStripsKRows;
  constexpr int64_t kRowBytes = kPanelWidth * int64_t(sizeof(*P));
  alignas(64) float piece[kRows * kPanelWidth];
  if (K == 0) {
    zero_panel_rows(C, T, ldc);
    return;
  }
  const int64_t strips = (T + MR - 1) / MR;
  for (int64_t k0 = 0; k0 < K; k0 += kRows) {
    const int64_t kc = std::min(kRows, K - k0);
    const auto* block = P + k0 * kPanelWidth;
    for (int64_t k = 0; k < kc; ++k)
      for (int64_t c = 0; c < kPanelWidth; c += V::lanes)
        V::store(piece + k * kPanelWidth + c, PanelLoad::at(block, k, c));
    // The piece kFewStripsAheadBytes past the next, its lines shared out over the strips.
    const char* ahead = reinterpret_cast<const char*>(block) + kc * kRowBytes + kFewStripsAheadBytes;
    const int64_t lines = kc * kRowBytes / 64, share = (lines + strips - 1) / strips, per_k = (share + kc - 1) / kc;
    strips_over_piece<V, MR, NV>(T, kc, A + k0, lda, piece, C, ldc, k0 > 0, [&](int64_t s) {
      const int64_t first = std::min(lines, s * share);
      return PrefetchShare{ahead + 64 * first, std::min(share, lines - first), per_k};
    });
  }
}

// StreamedTokens, FewStripsKBlock: see panel_gemm_blocked; by default one strip for a
// one-pass tile, and no K blocks of their own for a few strips.
template <class V, int MR, int NV, class PanelLoad = RowPanel<LoadF32<V>>,
          int StreamedTokens = NV* V::lanes == kPanelWidth ? MR : 0, StreamAhead Ahead = StreamAhead{},
          int64_t FewStripsKBlock = 0>
void f32_panel_gemm_tiled(int64_t T, int64_t K, const float* A, int64_t lda, const typename PanelLoad::Elem* P,
                          float* C, int64_t ldc) {
  static_assert(StreamedTokens == 0 || NV * V::lanes == kPanelWidth, "a tile of several passes needs the prefetch");
  panel_gemm_blocked<MR, StreamedTokens, Ahead, FewStripsKBlock>(
      T, K, A, lda, P, C, ldc,
      [&]<int R, bool Resume>(int64_t kc, const float* a, const typename PanelLoad::Elem* block, float* c,
                              PrefetchShare pf) {
        panel_tile<V, R, NV, Resume, PanelLoad>(kc, a, lda, block, c, ldc, pf);
      });
}

// f32_gemm_nt_packed (contract in kernels.hpp) through the panel tile: B's rows [N][K] are
// transposed, KB rows of K at a time, into a zero-padded [KB][64] panel on the stack (L1/L2
// resident) that every strip of MR tokens then reads; the chains resume through C between
// K blocks. The forward of row-major blocks (training) takes this path from
// kPackedMinTokens on: its weights change every step, so they cannot be packed at load.
// Lays nr ≤ 64 weight rows (kc values each, rows ldb apart) into a panel: the portable
// packing routine (each ISA may supply a faster one with the same result).
struct PortablePanelPack {
  static void rows_to_panel(const float* B, int64_t ldb, int64_t nr, int64_t kc, float* panel) {
    for (int64_t j = 0; j < nr; ++j)
      for (int64_t k = 0; k < kc; ++k) panel[k * kPanelWidth + j] = B[j * ldb + k];
    for (int64_t k = 0; k < kc; ++k) std::fill(panel + k * kPanelWidth + nr, panel + (k + 1) * kPanelWidth, 0.0f);
  }
};

template <class V, int MR, int NV, class Pack = PortablePanelPack>
void f32_gemm_nt_through_panels(int64_t T, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
                                int64_t ldb, float* C, int64_t ldc) {
  constexpr int64_t KB = 256;  // 64 KiB of panel
  alignas(64) float panel[KB * kPanelWidth];
  for (int64_t n0 = 0; n0 < N; n0 += kPanelWidth) {
    const int64_t nr = std::min(kPanelWidth, N - n0);
    // K = 0 still visits one (empty) block, so that C is written (zeros).
    for (int64_t k0 = 0; k0 < K || k0 == 0; k0 += KB) {
      const int64_t kc = std::min(KB, K - k0);
      Pack::rows_to_panel(B + n0 * ldb + k0, ldb, nr, kc, panel);
      strips_over_piece<V, MR, NV>(
          T, kc, A + k0, lda, panel, C + n0, ldc, k0 > 0, [](int64_t) { return PrefetchShare{}; }, nr);
    }
  }
}

}  // namespace ffn::kernels
