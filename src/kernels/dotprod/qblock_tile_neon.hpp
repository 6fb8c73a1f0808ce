// The Arm qblock panel kernels (Q8_0, Q4_0; layout and arithmetic in qblock_panels.hpp) as a
// template over the dot instruction (q_tile_neon.hpp), one for each tile:
// dotprod/qblock_panel_gemm_dotprod.cpp takes SDOT for both, i8mm/qblock_panel_gemm_i8mm.cpp
// USDOT for q8_0's one-token tile. Two tiles, both keeping their f32 chains in registers for
// the whole K block, each compiled on its own (noinline) so that their registers do not mix:
//   1×64  one token × the panel's 16 row vectors, block after block, so the panel streams as
//         the linear array it is (decode); the block's 16 integer sums in two halves of 8
//         (16 f32 chains + 8 sums + the block's 2 activation vectors of the 32 registers);
//   4×8   4 tokens × 2 row vectors (8 rows), each loaded (and flipped) panel vector dotted
//         with the 4 tokens: 8 chains + 8 sums + 4 × 2 activation vectors; the tokens' −offset·Σx
//         and d_x a token a lane, taken by lane. The panel's 8 strips
//         of rows each read 32 bytes of every 256-byte group, a K block (kKBlocks) at a time,
//         so that the strips after the first read it from cache.
// Integer sums: q4_0's nibbles (≤ 15) enter either instruction as they are (low nibble: AND
// 0x0F, high: USHR 4) and the sums start from −8·Σx; q8_0's codes q = w + 128 enter USDOT as
// they are (sums from −128·Σx) and SDOT flipped back to w (EOR 0x80, sums from 0) — the same
// exact integer either way. Then the contract's chain, acc ← fma(float(S_b), d_w·d_x, acc),
// by FMLA (fused, as std::fma), so every tile and level gives the scalar reference's bits.
// Included by the dotprod and i8mm levels' files, and by the neon level's with WideningDot.
#pragma once

#include <algorithm>

#include "kernels/dotprod/q_tile_neon.hpp"
#include "kernels/panel_family.hpp"
#include "kernels/qblock_panels.hpp"

namespace ffn::kernels::neon_qblock {

using namespace neon_q;

inline constexpr int64_t kKBlocks = 64;  // blocks of 32 per K block: 136 KiB of q8_0 panel
inline constexpr int kStripTokens = 4;   // the multi-token tile: 4 tokens × 2 row vectors
inline constexpr int kStripVectors = 2;

// MT tokens × RV row vectors from row vector r0, blocks [b0, b1), integer sums CV row vectors
// at a time; the chains start from C when resume. With prefetch (the first tile over a K
// block), the blocks kQPanelPrefetchBytes ahead are pulled in: into L1 by the one-pass tile,
// which reads every byte of them next, into L2 by a strip tile, which reads an eighth.
template <WeightType W, class Dot, int MT, int RV, int CV>
[[gnu::noinline]] void tile(const ActivationRows& A, const std::byte* P, int r0, int64_t b0, int64_t b1, bool resume,
                 bool prefetch, float* C, int64_t ldc) {
  static constexpr QFormat f = q_format(W);
  static_assert(f.nibbles || f.offset == 128, "byte codes are q8_0's: w + 128");
  static_assert(RV % CV == 0);
  constexpr int64_t block_bytes = qblock_bytes(f);
  constexpr int64_t ahead = kQPanelPrefetchBytes / block_bytes * block_bytes;
  constexpr bool flip = !f.nibbles && !Dot::kUnsignedBytes;  // q8_0 into SDOT: back to signed w
  constexpr int offset = flip ? 0 : f.offset;
  constexpr int locality = RV == kRowVectors ? 3 : 2;
  float32x4_t acc[MT][RV];
  for (int t = 0; t < MT; ++t)
    for (int v = 0; v < RV; ++v) acc[t][v] = resume ? vld1q_f32(C + t * ldc + 4 * (r0 + v)) : vdupq_n_f32(0.0f);
  for (int64_t b = b0; b < b1; ++b) {
    const auto* blk = reinterpret_cast<const uint8_t*>(P + b * block_bytes);
    if (prefetch)
      for (int64_t line = 0; line < block_bytes; line += 64) __builtin_prefetch(blk + ahead + line, 0, locality);
    int8x16_t x[MT][2];  // the block's 32 activations of each token
    for (int t = 0; t < MT; ++t) {
      const int8_t* xt = A.codes() + t * A.row_bytes + 32 * b;
      x[t][0] = vld1q_s8(xt);
      x[t][1] = vld1q_s8(xt + 16);
    }
    // −offset·Σx and d_x, a token a lane.
    const int32x4_t start = offset ? vmulq_n_s32(q8_block_sums<MT>(A, b), -offset) : vdupq_n_s32(0);
    const float32x4_t dx = q8_block_scales<MT>(A, b);
    static_for<RV / CV>([&](auto chunk) FFN_INLINE {
      constexpr int c0 = decltype(chunk)::value * CV;
      const uint8_t* q = blk + kQBlockScaleBytes + 16 * (r0 + c0);
      int32x4_t s[MT][CV];
      for (int t = 0; t < MT; ++t)
        for (int v = 0; v < CV; ++v) s[t][v] = lane_s32(start, t);
      if constexpr (!f.nibbles) {
        static_for<8>([&](auto g) FFN_INLINE {
          constexpr int G = decltype(g)::value;
          for (int v = 0; v < CV; ++v) {
            uint8x16_t w = vld1q_u8(q + 256 * G + 16 * v);
            if constexpr (flip) w = veorq_u8(w, vdupq_n_u8(0x80));
            for (int t = 0; t < MT; ++t) s[t][v] = Dot::template dot<G % 4>(s[t][v], w, x[t][G / 4]);
          }
        });
      } else {
        // Group g's low nibbles are values 4g + l (activations 0 … 15), its high nibbles
        // values 4(g + 4) + l (activations 16 … 31): lane g of each activation vector.
        static_for<4>([&](auto g) FFN_INLINE {
          constexpr int G = decltype(g)::value;
          for (int v = 0; v < CV; ++v) {
            const uint8x16_t raw = vld1q_u8(q + 256 * G + 16 * v);
            const uint8x16_t lo = vandq_u8(raw, vdupq_n_u8(0x0F)), hi = vshrq_n_u8(raw, 4);
            for (int t = 0; t < MT; ++t) {
              s[t][v] = Dot::template dot<G>(s[t][v], lo, x[t][0]);
              s[t][v] = Dot::template dot<G>(s[t][v], hi, x[t][1]);
            }
          }
        });
      }
      for (int v = 0; v < CV; ++v) {
        const float32x4_t d = f16x4(blk + 8 * (r0 + c0 + v));
        for (int t = 0; t < MT; ++t)
          acc[t][c0 + v] = vfmaq_f32(acc[t][c0 + v], vcvtq_f32_s32(s[t][v]), mul_lane(d, dx, t));
      }
    });
  }
  for (int t = 0; t < MT; ++t)
    for (int v = 0; v < RV; ++v) vst1q_f32(C + t * ldc + 4 * (r0 + v), acc[t][v]);
}

// C[t][0..63] for every token t < T (the qblock contract): K in blocks of kKBlocks; strips of
// kStripTokens tokens by the 4×8 tile with the dot instruction StripDot, the tokens left over
// (and a lone token) by the 1×64 with Dot.
template <WeightType W, class Dot, class StripDot = Dot>
inline void panel(int64_t T, int64_t K, const ActivationRows& A, const std::byte* P, float* C, int64_t ldc) {
  const int64_t blocks = K / 32;
  // K = 0 still visits one (empty) range, so that C is written (zeros).
  for (int64_t b0 = 0; b0 < blocks || b0 == 0; b0 += kKBlocks) {
    const int64_t b1 = std::min(blocks, b0 + kKBlocks);
    int64_t t = 0;
    for (; t + kStripTokens <= T; t += kStripTokens)
      for (int r0 = 0; r0 < kRowVectors; r0 += kStripVectors)
        tile<W, StripDot, kStripTokens, kStripVectors, kStripVectors>(A.from_token(t), P, r0, b0, b1, b0 > 0,
                                                                 t == 0 && r0 == 0, C + t * ldc, ldc);
    for (; t < T; ++t) tile<W, Dot, 1, kRowVectors, 8>(A.from_token(t), P, 0, b0, b1, b0 > 0, t == 0, C + t * ldc, ldc);
  }
}

}  // namespace ffn::kernels::neon_qblock
