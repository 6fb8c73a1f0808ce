// The i8mm level's multi-token qblock tile (Q8_0, Q4_0; layout and arithmetic in
// qblock_panels.hpp) by USMMLA: one instruction multiplies a 2×8 block of unsigned weights (2
// rows × 8 consecutive values) by a 2×8 block of signed activations (2 tokens × the same 8
// values) into the 2×2 int32 sums of those rows and tokens — 32 products, twice an SDOT's.
// The panel's group vectors g and g + 1 of a row vector (4 rows × 4 values each) zipped by 32
// bits, ZIP1 and ZIP2, are rows 4v, 4v + 1 and rows 4v + 2, 4v + 3 × values 4g … 4g + 7: the
// left operand as the panel holds it, one ZIP a product pair (q4_0: the nibble pairs are
// zipped before they are split, low nibbles values 8h …, high nibbles 16 + 8h …). The
// activations of two tokens zipped by 64 bits are the right operand, once a block.
// Sums, chains and scales stay in that 2 rows × 2 tokens lane order ([r t, r t+1, r+1 t,
// r+1 t+1]) for the whole K block — the scales d_w·d_x made in it by ZIP of the rows' d and
// a 64-bit DUP of the tokens' d_x — and are turned back to C's token rows (UZP) at the end.
// Each sum starts from −offset·Σx (the codes enter unsigned), the same exact integer as the
// other kernels'; each element's chain is the contract's acc ← fma(float(S_b), d_w·d_x, acc)
// over the blocks in order, so the bits are the scalar reference's.
// 4 tokens × 2 row vectors (8 rows): 8 chains + 8 sums + 8 activation operands of the 32
// registers, against 64 SDOT a block the 4×8 tile of qblock_tile_neon.hpp does 32 USMMLA and
// 16 ZIP.
// Included only by files compiled with at least the i8mm level's flags.
#pragma once

#include <algorithm>

#include "kernels/dotprod/q_tile_neon.hpp"
#include "kernels/dotprod/qblock_tile_neon.hpp"
#include "kernels/panel_family.hpp"
#include "kernels/qblock_panels.hpp"

namespace ffn::kernels::mmla_qblock {

using namespace neon_q;

inline constexpr int kStripTokens = 4;  // the tile: 4 tokens (2 pairs) × 2 row vectors
inline constexpr int kStripVectors = 2;

// Lanes 2p and 2p + 1 of v in both halves: token pair p's values in the 2×2 lane order.
inline int32x4_t pair_s32(int32x4_t v, int p) {
  const int64x2_t w = vreinterpretq_s64_s32(v);
  return vreinterpretq_s32_s64(p == 0 ? vdupq_laneq_s64(w, 0) : vdupq_laneq_s64(w, 1));
}
inline float32x4_t pair_f32(float32x4_t v, int p) {
  return vreinterpretq_f32_s32(pair_s32(vreinterpretq_s32_f32(v), p));
}

// 4 tokens × RV row vectors from row vector r0, blocks [b0, b1); the chains start from C when
// resume; with prefetch (the first strip over a K block) the blocks kQPanelPrefetchBytes ahead
// are pulled into L2 (the strip reads an eighth of them).
template <WeightType W, int RV>
[[gnu::noinline]] void tile(const ActivationRows& A, const std::byte* P, int r0, int64_t b0, int64_t b1, bool resume,
                            bool prefetch, float* C, int64_t ldc) {
  static constexpr QFormat f = q_format(W);
  static_assert(f.nibbles || f.offset == 128, "byte codes are q8_0's: w + 128");
  constexpr int MT = kStripTokens, TP = MT / 2;
  constexpr int64_t block_bytes = qblock_bytes(f);
  constexpr int64_t ahead = kQPanelPrefetchBytes / block_bytes * block_bytes;
  // acc[v][rp][tp]: rows 4(r0 + v) + 2rp and + 1 × tokens 2tp and 2tp + 1.
  float32x4_t acc[RV][2][TP];
  for (int v = 0; v < RV; ++v)
    for (int tp = 0; tp < TP; ++tp) {
      float32x4_t c0 = vdupq_n_f32(0.0f), c1 = c0;
      if (resume) {
        c0 = vld1q_f32(C + 2 * tp * ldc + 4 * (r0 + v));
        c1 = vld1q_f32(C + (2 * tp + 1) * ldc + 4 * (r0 + v));
      }
      acc[v][0][tp] = vzip1q_f32(c0, c1);
      acc[v][1][tp] = vzip2q_f32(c0, c1);
    }
  for (int64_t b = b0; b < b1; ++b) {
    const auto* blk = reinterpret_cast<const uint8_t*>(P + b * block_bytes);
    if (prefetch)
      for (int64_t line = 0; line < block_bytes; line += 64) __builtin_prefetch(blk + ahead + line, 0, 2);
    // xb[p][tp]: values 8p … 8p + 7 of tokens 2tp and 2tp + 1, the right operand.
    int8x16_t xb[4][TP];
    for (int tp = 0; tp < TP; ++tp) {
      const int8_t* x0 = A.codes() + 2 * tp * A.row_bytes + 32 * b;
      const int8_t* x1 = x0 + A.row_bytes;
      for (int h = 0; h < 2; ++h) {
        const int64x2_t a = vreinterpretq_s64_s8(vld1q_s8(x0 + 16 * h)), c = vreinterpretq_s64_s8(vld1q_s8(x1 + 16 * h));
        xb[2 * h][tp] = vreinterpretq_s8_s64(vzip1q_s64(a, c));
        xb[2 * h + 1][tp] = vreinterpretq_s8_s64(vzip2q_s64(a, c));
      }
    }
    // −offset·Σx and d_x, a token a lane.
    const int32x4_t starts = vmulq_n_s32(q8_block_sums<MT>(A, b), -f.offset);
    const float32x4_t dxs = q8_block_scales<MT>(A, b);
    int32x4_t s[RV][2][TP];
    for (int v = 0; v < RV; ++v)
      for (int tp = 0; tp < TP; ++tp) s[v][0][tp] = s[v][1][tp] = pair_s32(starts, tp);
    for (int v = 0; v < RV; ++v) {
      const uint8_t* q = blk + kQBlockScaleBytes + 16 * (r0 + v);
      // The left operands of values 8p … 8p + 7: rows 4v, 4v + 1 (lo) and 4v + 2, 4v + 3 (hi).
      auto mmla = [&](int p, uint8x16_t lo, uint8x16_t hi) FFN_INLINE {
        for (int tp = 0; tp < TP; ++tp) {
          s[v][0][tp] = vusmmlaq_s32(s[v][0][tp], lo, xb[p][tp]);
          s[v][1][tp] = vusmmlaq_s32(s[v][1][tp], hi, xb[p][tp]);
        }
      };
      auto zip = [](uint8x16_t g0, uint8x16_t g1, int half) FFN_INLINE {
        const uint32x4_t a = vreinterpretq_u32_u8(g0), c = vreinterpretq_u32_u8(g1);
        return vreinterpretq_u8_u32(half == 0 ? vzip1q_u32(a, c) : vzip2q_u32(a, c));
      };
      if constexpr (!f.nibbles) {
        for (int p = 0; p < 4; ++p) {
          const uint8x16_t g0 = vld1q_u8(q + 256 * (2 * p)), g1 = vld1q_u8(q + 256 * (2 * p + 1));
          mmla(p, zip(g0, g1, 0), zip(g0, g1, 1));
        }
      } else {
        // Groups 2h and 2h + 1: low nibbles values 8h …, high nibbles 16 + 8h ….
        for (int h = 0; h < 2; ++h) {
          const uint8x16_t g0 = vld1q_u8(q + 256 * (2 * h)), g1 = vld1q_u8(q + 256 * (2 * h + 1));
          const uint8x16_t z0 = zip(g0, g1, 0), z1 = zip(g0, g1, 1);
          const uint8x16_t nibble = vdupq_n_u8(0x0F);
          mmla(h, vandq_u8(z0, nibble), vandq_u8(z1, nibble));
          mmla(2 + h, vshrq_n_u8(z0, 4), vshrq_n_u8(z1, 4));
        }
      }
    }
    for (int v = 0; v < RV; ++v) {
      const float32x4_t d = f16x4(blk + 8 * (r0 + v));
      const float32x4_t d_rows[2] = {vzip1q_f32(d, d), vzip2q_f32(d, d)};
      for (int rp = 0; rp < 2; ++rp)
        for (int tp = 0; tp < TP; ++tp)
          acc[v][rp][tp] = vfmaq_f32(acc[v][rp][tp], vcvtq_f32_s32(s[v][rp][tp]),
                                     vmulq_f32(d_rows[rp], pair_f32(dxs, tp)));
    }
  }
  for (int v = 0; v < RV; ++v)
    for (int tp = 0; tp < TP; ++tp) {
      vst1q_f32(C + 2 * tp * ldc + 4 * (r0 + v), vuzp1q_f32(acc[v][0][tp], acc[v][1][tp]));
      vst1q_f32(C + (2 * tp + 1) * ldc + 4 * (r0 + v), vuzp2q_f32(acc[v][0][tp], acc[v][1][tp]));
    }
}

// C[t][0..63] for every token t < T (the qblock contract): K in blocks of
// neon_qblock::kKBlocks; strips of 4 tokens by this tile, the tokens left over (and a lone
// token) by the 1×64 tile of qblock_tile_neon.hpp with the dot instruction OneToken.
template <WeightType W, class OneToken>
inline void panel(int64_t T, int64_t K, const ActivationRows& A, const std::byte* P, float* C, int64_t ldc) {
  const int64_t blocks = K / 32;
  // K = 0 still visits one (empty) range, so that C is written (zeros).
  for (int64_t b0 = 0; b0 < blocks || b0 == 0; b0 += neon_qblock::kKBlocks) {
    const int64_t b1 = std::min(blocks, b0 + neon_qblock::kKBlocks);
    int64_t t = 0;
    for (; t + kStripTokens <= T; t += kStripTokens)
      for (int r0 = 0; r0 < kRowVectors; r0 += kStripVectors)
        tile<W, kStripVectors>(A.from_token(t), P, r0, b0, b1, b0 > 0, t == 0 && r0 == 0, C + t * ldc, ldc);
    for (; t < T; ++t)
      neon_qblock::tile<W, OneToken, 1, kRowVectors, 8>(A.from_token(t), P, 0, b0, b1, b0 > 0, t == 0, C + t * ldc,
                                                        ldc);
  }
}

}  // namespace ffn::kernels::mmla_qblock
