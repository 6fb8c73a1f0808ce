// AVX-512 VNNI integer product with a qblock panel (Q8_0, Q4_0) packed at load (layout and
// arithmetic in qblock_panels.hpp), 2×64 tile: 2 tokens × 4 zmm of 16 rows, 8 float accumulators
// and 8 integer block sums. Each group of 4 weights of 16 rows is one vector, dotted by one
// vpdpbusd with the token's 4 activation bytes broadcast — no lane reduction, a 16-row
// scale vector per block — and the panel streams as one linear array, its next blocks
// prefetched (into L1 or L2: prefetch_into_l1). The weights enter as unsigned bytes (q8_0 +
// 128, q4_0 nibbles + 8); each block sum starts from the activations' −offset·Σx, which
// makes it exact.
// Compiled with the avx512_vnni level's flags (ffn/isa_list.hpp); called only when the CPU has the level.
#include <immintrin.h>

#include <algorithm>

#include "kernels/avx512_vnni/avx512_vnni_kernels.hpp"
#include "kernels/qblock_panels.hpp"

namespace ffn::kernels {
namespace {

// The first strip prefetches kQPanelPrefetchBytes ahead (7 q4_0 blocks, 3 q8_0), a group's
// share of the block's lines with each group of 4 weights. Into L1 where the loop reads the
// most bytes per instruction — q8_0 at every T, q4_0 (whose nibbles are unpacked) at one or
// two tokens — into L2 otherwise, where L1 prefetches were slower (docs/performance.md,
// "The kernels' constants").
template <WeightType W>
constexpr bool prefetch_into_l1(int64_t T) {
  return !q_format(W).nibbles || T <= 2;
}

// The exact integer sums S_b of block b (at blk) for MT tokens from A's token 0 × the panel's
// 64 rows: sum[t][v] holds rows 16v … 16v + 15. With prefetch (the first strip of tokens),
// the block kQPanelPrefetchBytes ahead is pulled into L1 (L1) or L2, a group's share of its
// lines with each group of 4 weights.
template <WeightType W, int MT, bool L1, bool prefetch>
inline void block_sums(int64_t K, const ActivationRows& A, const std::byte* blk, int64_t b, __m512i sum[MT][4]) {
  constexpr QFormat f = q_format(W);
  constexpr int64_t block_bytes = qblock_bytes(f), ahead = kQPanelPrefetchBytes / block_bytes * block_bytes;
  const auto* q = reinterpret_cast<const __m512i*>(blk + kQBlockScaleBytes);
  for (int t = 0; t < MT; ++t) {
    const __m512i c = _mm512_set1_epi32(-f.offset * q8_block_sum(A.sums + t * (K / 16), b));
    for (int v = 0; v < 4; ++v) sum[t][v] = c;
  }
  // The 4 activation bytes of group g of token t, broadcast to every lane.
  auto x_group = [&](int t, int g) {
    int32_t bytes;
    __builtin_memcpy(&bytes, A.codes() + t * K + 32 * b + 4 * g, 4);
    return _mm512_set1_epi32(bytes);
  };
  if constexpr (!f.nibbles) {
    for (int g = 0; g < 8; ++g) {
      if constexpr (prefetch) prefetch_share<L1>(blk + ahead, block_bytes, g, 8);
      __m512i xg[MT];
      for (int t = 0; t < MT; ++t) xg[t] = x_group(t, g);
      for (int v = 0; v < 4; ++v) {
        const __m512i w = _mm512_load_si512(q + 4 * g + v);
        for (int t = 0; t < MT; ++t) sum[t][v] = _mm512_dpbusd_epi32(sum[t][v], w, xg[t]);
      }
    }
  } else {
    const __m512i nibble = _mm512_set1_epi8(0x0F);
    for (int g = 0; g < 4; ++g) {
      if constexpr (prefetch) prefetch_share<L1>(blk + ahead, block_bytes, g, 4);
      __m512i lo_x[MT], hi_x[MT];
      for (int t = 0; t < MT; ++t) {
        lo_x[t] = x_group(t, g);
        hi_x[t] = x_group(t, g + 4);
      }
      for (int v = 0; v < 4; ++v) {
        const __m512i raw = _mm512_load_si512(q + 4 * g + v);
        const __m512i lo = _mm512_and_si512(raw, nibble);
        const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(raw, 4), nibble);
        for (int t = 0; t < MT; ++t) {
          sum[t][v] = _mm512_dpbusd_epi32(sum[t][v], lo, lo_x[t]);
          sum[t][v] = _mm512_dpbusd_epi32(sum[t][v], hi, hi_x[t]);
        }
      }
    }
  }
}

// The block's 64 row scales d_w as f32.
inline void row_scales(const std::byte* blk, __m512 dw[4]) {
  const auto* scales = reinterpret_cast<const __m256i*>(blk);
  for (int v = 0; v < 4; ++v) dw[v] = _mm512_cvtph_ps(_mm256_load_si256(scales + v));
}

// One step of the chains: acc ← fma(float(S_b), d_w·d_x, acc), d_x token t's scale of block b.
template <int MT>
inline void chain_step(const __m512i sum[MT][4], const __m512 dw[4], const float* x_scales, int64_t blocks, int64_t b,
                       __m512 acc[MT][4]) {
  for (int t = 0; t < MT; ++t) {
    const __m512 dx = _mm512_set1_ps(x_scales[t * blocks + b]);
    for (int v = 0; v < 4; ++v)
      acc[t][v] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum[t][v]), _mm512_mul_ps(dw[v], dx), acc[t][v]);
  }
}

// MT tokens × 64 rows over blocks [b0, b1), the chains in registers, starting from C when
// resume.
template <WeightType W, int MT, bool L1, bool prefetch>
void tile(int64_t K, const ActivationRows& A, const std::byte* P, int64_t b0, int64_t b1, bool resume, float* C,
          int64_t ldc) {
  constexpr int64_t block_bytes = qblock_bytes(q_format(W));
  const int64_t blocks = K / 32;
  __m512 acc[MT][4];
  for (int t = 0; t < MT; ++t)
    for (int v = 0; v < 4; ++v) acc[t][v] = resume ? _mm512_loadu_ps(C + t * ldc + 16 * v) : _mm512_setzero_ps();
  for (int64_t b = b0; b < b1; ++b) {
    const std::byte* blk = P + b * block_bytes;
    __m512i sum[MT][4];
    block_sums<W, MT, L1, prefetch>(K, A, blk, b, sum);
    __m512 dw[4];
    row_scales(blk, dw);
    chain_step<MT>(sum, dw, A.scales, blocks, b, acc);
  }
  for (int t = 0; t < MT; ++t)
    for (int v = 0; v < 4; ++v) _mm512_storeu_ps(C + t * ldc + 16 * v, acc[t][v]);
}

// MT tokens, their chains in C: one step of the chains over a block's sums.
template <WeightType W, int MT, bool L1, bool prefetch>
inline void strip_step(int64_t K, const ActivationRows& A, const std::byte* blk, int64_t b, const __m512 dw[4],
                       float* C, int64_t ldc) {
  __m512i sum[MT][4];
  block_sums<W, MT, L1, prefetch>(K, A, blk, b, sum);
  __m512 acc[MT][4];
  for (int t = 0; t < MT; ++t)
    for (int v = 0; v < 4; ++v) acc[t][v] = _mm512_loadu_ps(C + t * ldc + 16 * v);
  chain_step<MT>(sum, dw, A.scales, K / 32, b, acc);
  for (int t = 0; t < MT; ++t)
    for (int v = 0; v < 4; ++v) _mm512_storeu_ps(C + t * ldc + 16 * v, acc[t][v]);
}

// Three tokens and more, block by block: every strip of two tokens takes a block while it is
// in L1, so the panel streams from memory once, at the pace of its first strip's prefetch,
// instead of once a strip per K block with the memory idle while the other strips re-read
// it from L2 (docs/performance.md, "Decode: where the time goes"). The chains live in C.
template <WeightType W, bool L1>
void block_major(int64_t T, int64_t K, const ActivationRows& A, const std::byte* P, float* C, int64_t ldc) {
  constexpr int64_t block_bytes = qblock_bytes(q_format(W));
  const int64_t blocks = K / 32;
  zero_panel_rows(C, T, ldc);
  for (int64_t b = 0; b < blocks; ++b) {
    const std::byte* blk = P + b * block_bytes;
    __m512 dw[4];
    row_scales(blk, dw);
    strip_step<W, 2, L1, true>(K, A, blk, b, dw, C, ldc);
    int64_t t = 2;
    for (; t + 2 <= T; t += 2) strip_step<W, 2, L1, false>(K, A.from_token(t), blk, b, dw, C + t * ldc, ldc);
    if (t < T) strip_step<W, 1, L1, false>(K, A.from_token(t), blk, b, dw, C + t * ldc, ldc);
  }
}

// Eight tokens and more of q4_0, whose unpacking a strip repeats, are bound by the core, not
// the memory: there the chains stay in registers over K blocks of kKBlocks, every strip
// re-reading the block from L2, which block_major's chains in C would slow (0.8× at T = 16).
// (K = 0, which writes zeros, goes block by block at every T ≥ 3.)
constexpr int64_t kKBlocks = 64;  // blocks of 32 per K block: 72 KiB of q4_0 panel

template <WeightType W>
constexpr bool by_blocks(int64_t T, int64_t K) {
  return !q_format(W).nibbles || T < 8 || K == 0;
}

template <WeightType W, bool L1>
void panel_tiles(int64_t T, int64_t K, const ActivationRows& A, const std::byte* P, float* C, int64_t ldc) {
  const int64_t blocks = K / 32;
  if (T == 1) {
    tile<W, 1, L1, true>(K, A, P, 0, blocks, false, C, ldc);
  } else if (T == 2) {
    tile<W, 2, L1, true>(K, A, P, 0, blocks, false, C, ldc);
  } else if (T >= 3 && by_blocks<W>(T, K)) {
    block_major<W, L1>(T, K, A, P, C, ldc);
  } else if (T >= 3) {
    for (int64_t b0 = 0; b0 < blocks; b0 += kKBlocks) {
      const int64_t b1 = std::min(blocks, b0 + kKBlocks);
      tile<W, 2, L1, true>(K, A, P, b0, b1, b0 > 0, C, ldc);
      int64_t t = 2;
      for (; t + 2 <= T; t += 2) tile<W, 2, L1, false>(K, A.from_token(t), P, b0, b1, b0 > 0, C + t * ldc, ldc);
      if (t < T) tile<W, 1, L1, false>(K, A.from_token(t), P, b0, b1, b0 > 0, C + t * ldc, ldc);
    }
  }
}

template <WeightType W>
void panel(int64_t T, int64_t K, const ActivationRows& A, const std::byte* P, float* C, int64_t ldc) {
  if (prefetch_into_l1<W>(T))
    panel_tiles<W, true>(T, K, A, P, C, ldc);
  else
    panel_tiles<W, false>(T, K, A, P, C, ldc);
}

}  // namespace

FFN_PANEL_KERNEL_SET(qblock, panel_gemm_avx512_vnni_2x64, panel);

}  // namespace ffn::kernels
