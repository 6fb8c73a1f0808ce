// The Arm qsub panel kernels (the K-quants, Q4_1 / Q5_0 / Q5_1, IQ4_NL / IQ4_XS / MXFP4,
// TQ1_0 / TQ2_0; layout, integers and arithmetic in qsub_panels.hpp) by SDOT. Every qsub
// type's panel values are nibbles or crumbs: with their high bits at most 63, through a
// codebook signed int8 — both SDOT's signed operand as they are, so USDOT (i8mm) would run
// the same instructions and the i8mm level inherits these kernels. The dot instruction is a policy
// (q_tile_neon.hpp): SDOT on dotprod, its widening-multiply form on plain neon.
// A sub-block u's sum S_u = Σ q·x − offset·B_u starts from −offset·B_u and takes one SDOT a
// group and row vector; I = Σ_u sc_u·S_u by one MLA a sub-block and row vector against the
// sub-block's scales widened to int32 lanes (skipped by the 32-value types, whose panels hold
// sc = 1); M = Σ_u m_u·B_u by one MLA a sub-block and row vector. Then per block the
// contract's two fused steps, acc ← fma(float(I), d·d_x, acc) and, with mins,
// acc ← fma(float(M), −(dmin·d_x), acc) (FMLA, FMLS), so every tile gives the scalar
// reference's bits. Values: the low nibble AND 0x0F, the high USHR 4 (crumbs: each moved
// down and under 0x03); the high bits of group g moved to bits 4 … by one shift and inserted
// by one BSL; a codebook looked up by one TBL.
// Two tiles over the whole 64 rows, so that the panel streams as the linear array it is; the
// f32 chains live in C, touched once a block and row vector (a super-block is 256 values), so
// that the registers hold the integers of a chunk of row vectors:
//   1×64  one token (decode), chunks of 4 row vectors (2 for the types with high bits, whose
//         high-bit vectors stay loaded across the sub-block's groups): 4 I + 4 S + the
//         sub-block's 2 activation vectors, the values being made and the constants;
//   4×64  4 tokens, chunks of 2 row vectors (1 with high bits), each panel vector's values
//         made once and dotted with the 4 tokens' activations (8 vectors).
// Included by the dotprod level's files, and by the neon level's with the widening-multiply dot.
#pragma once

#include <algorithm>

#include "kernels/dotprod/q_tile_neon.hpp"
#include "kernels/panel_family.hpp"
#include "kernels/qsub_panels.hpp"

namespace ffn::kernels::neon_qsub {

using namespace neon_q;

inline constexpr int64_t kKValues = 2048;  // values of K per K block (8 super-blocks, 64 blocks of 32)
inline constexpr int kStripTokens = 4;     // the multi-token tile: 4 tokens × 64 rows

// The codes of pair G of a sub-block's row vector from its byte `raw` and the row vector's
// high bits h (qsub_panels.hpp): the two nibbles, the two crumbs at pair_shift, or for the
// codes of 4 + high_bits bits the first code whole (one AND) and its partner's low bits (one
// shift) with the rest of its bits moved from h and inserted by one BSL.
template <QFormat f, int G>
inline void pair_codes(uint8x16_t raw, uint8x16_t h, uint8x16_t& lo, uint8x16_t& hi) {
  if constexpr (f.crumbs) {
    constexpr int shift = pair_shift(f, G);
    uint8x16_t first = raw;
    if constexpr (shift > 0) first = vshrq_n_u8(raw, shift);
    lo = vandq_u8(first, vdupq_n_u8(0x03));
    hi = vandq_u8(vshrq_n_u8(raw, 4 + shift), vdupq_n_u8(0x03));
  } else if constexpr (f.high_bits == 0) {
    lo = vandq_u8(raw, vdupq_n_u8(0x0F));
    hi = vshrq_n_u8(raw, 4);
  } else {
    constexpr int move = partner_h_move(f, G);
    lo = vandq_u8(raw, vdupq_n_u8(uint8_t(code_mask(f))));
    uint8x16_t moved = h;
    if constexpr (move > 0) moved = vshlq_n_u8(h, move);
    if constexpr (move < 0) moved = vshrq_n_u8(h, -move);
    hi = vbslq_u8(vdupq_n_u8(uint8_t(partner_h_mask(f))), moved, vshrq_n_u8(raw, code_bits(f)));
  }
}

// MT tokens × the panel's 64 rows over super-blocks [b0, b1), the integers CV row vectors at
// a time; the chains start from C when resume (else from zeros written there) and live in C,
// touched once a block and row vector. With prefetch (the first strip of tokens), the panel
// kQPanelPrefetchBytes ahead is pulled into L1, a sub-block's share of its lines at a time: a
// burst of all its lines at once would overrun the core's outstanding-miss buffers.
template <WeightType W, class Dot, int MT, int CV>
[[gnu::noinline]] void tile(const ActivationRows& A, const std::byte* P, int64_t b0, int64_t b1, bool resume,
                            bool prefetch, float* C, int64_t ldc) {
  static constexpr QFormat f = q_format(W);
  static_assert(f.nibbles, "every qsub type's values are nibbles (qsub_panels.hpp); bytes would need USDOT");
  static_assert(kRowVectors % CV == 0);
  static constexpr QSubLayout L = qsub_layout(f);
  constexpr int64_t ahead = (kQPanelPrefetchBytes + L.bytes - 1) / L.bytes * L.bytes;
  constexpr bool unit_scale = !f.stores_scales();  // every sc is 1, none stored (qsub_panels.hpp)
  constexpr int pairs = f.sub / 8;                 // group pairs a sub-block
  constexpr int xv = f.sub / 16;                   // activation vectors a sub-block
  int8x16_t codebook = vdupq_n_s8(0);
  if constexpr (f.has_codebook()) codebook = vld1q_s8(f.codebook_values());
  if (!resume)
    for (int t = 0; t < MT; ++t)
      for (int v = 0; v < kRowVectors; ++v) vst1q_f32(C + t * ldc + 4 * v, vdupq_n_f32(0.0f));
  for (int64_t b = b0; b < b1; ++b) {
    const auto* blk = reinterpret_cast<const uint8_t*>(P + b * L.bytes);
    const int8_t* x[MT];
    const int16_t* bs[MT];
    float dx[MT];
    for (int t = 0; t < MT; ++t) {
      x[t] = A.codes() + t * A.row_bytes + b * f.block;
      bs[t] = A.sums + t * A.sum_stride + b * (f.block / 16);
      dx[t] = A.scales[t * A.scale_stride + b];
    }
    for (int rv = 0; rv < kRowVectors; rv += CV) {  // the chunk's first row vector
      int32x4_t I[MT][CV];
      for (int t = 0; t < MT; ++t)
        for (int v = 0; v < CV; ++v) I[t][v] = vdupq_n_s32(0);
      for (int u = 0; u < f.subs(); ++u) {
        if (prefetch && rv == 0)
          for (int64_t line = u * L.bytes / f.subs() / 64 * 64; line < (u + 1) * L.bytes / f.subs(); line += 64)
            __builtin_prefetch(blk + ahead + line, 0, 3);
        int8x16_t xs[MT][xv];
        int32x4_t s[MT][CV];
        for (int t = 0; t < MT; ++t) {
          for (int i = 0; i < xv; ++i) xs[t][i] = vld1q_s8(x[t] + u * f.sub + 16 * i);
          const int32x4_t start = vdupq_n_s32(-f.offset * qsub_sum(bs[t], f.sub, u));
          for (int v = 0; v < CV; ++v) s[t][v] = start;
        }
        const uint8_t* q = blk + L.q_of(f, u) + 16 * rv;
        uint8x16_t high[CV] = {};  // zeros where the type has no high bits (unread)
        if constexpr (f.high_bits != 0)
          for (int v = 0; v < CV; ++v) high[v] = vld1q_u8(blk + L.h_of(u) + 16 * (rv + v));
        // Pair g: values 4g + l and their partners 4(g + pairs) + l (qsub_panels.hpp); value
        // 4G + l is lane G % 4 of activation vector G / 4.
        static_for<pairs>([&](auto g) FFN_INLINE {
          constexpr int G = decltype(g)::value, H = G + pairs;
          for (int v = 0; v < CV; ++v) {
            uint8x16_t lo, hi;
            pair_codes<f, G>(vld1q_u8(q + pair_offset(f, G) + 16 * v), high[v], lo, hi);
            if constexpr (f.has_codebook()) {
              lo = vreinterpretq_u8_s8(vqtbl1q_s8(codebook, lo));
              hi = vreinterpretq_u8_s8(vqtbl1q_s8(codebook, hi));
            }
            for (int t = 0; t < MT; ++t) {
              s[t][v] = Dot::template dot<G % 4>(s[t][v], lo, xs[t][G / 4]);
              s[t][v] = Dot::template dot<H % 4>(s[t][v], hi, xs[t][H / 4]);
            }
          }
        });
        if constexpr (f.subs() == 1) {
          for (int t = 0; t < MT; ++t)
            for (int v = 0; v < CV; ++v) I[t][v] = s[t][v];
        } else if constexpr (unit_scale) {
          for (int t = 0; t < MT; ++t)
            for (int v = 0; v < CV; ++v) I[t][v] = vaddq_s32(I[t][v], s[t][v]);
        } else {
          int32x4_t sc[CV];
          widen<CV, true>(blk + L.sc + u * 64 + 4 * rv, sc);
          for (int t = 0; t < MT; ++t)
            for (int v = 0; v < CV; ++v) I[t][v] = vmlaq_s32(I[t][v], s[t][v], sc[v]);
        }
      }
      float32x4_t acc[MT][CV];
      for (int v = 0; v < CV; ++v) {
        const float32x4_t d = f.e8m0 ? e8m0x4(blk + 4 * (rv + v)) : f16x4(blk + 8 * (rv + v));
        for (int t = 0; t < MT; ++t)
          acc[t][v] = vfmaq_f32(vld1q_f32(C + t * ldc + 4 * (rv + v)), vcvtq_f32_s32(I[t][v]), vmulq_n_f32(d, dx[t]));
      }
      if constexpr (f.has_min) {
        int32x4_t M[MT][CV];
        for (int t = 0; t < MT; ++t)
          for (int v = 0; v < CV; ++v) M[t][v] = vdupq_n_s32(0);
        for (int u = 0; u < f.subs(); ++u) {
          int32x4_t m[CV];
          if constexpr (f.stores_mins()) widen<CV, false>(blk + L.m + u * 64 + 4 * rv, m);
          for (int t = 0; t < MT; ++t) {
            const int32_t B = qsub_sum(bs[t], f.sub, u);
            for (int v = 0; v < CV; ++v) {
              if constexpr (f.stores_mins())
                M[t][v] = vmlaq_n_s32(M[t][v], m[v], B);
              else  // the min is 1 (qsub_panels.hpp)
                M[t][v] = vaddq_s32(M[t][v], vdupq_n_s32(B));
            }
          }
        }
        for (int v = 0; v < CV; ++v) {
          const float32x4_t dmin = f16x4(blk + L.dmin + 8 * (rv + v));
          for (int t = 0; t < MT; ++t)  // fma(M, −(dmin·d_x), acc)
            acc[t][v] = vfmsq_f32(acc[t][v], vcvtq_f32_s32(M[t][v]), vmulq_n_f32(dmin, dx[t]));
        }
      }
      for (int t = 0; t < MT; ++t)
        for (int v = 0; v < CV; ++v) vst1q_f32(C + t * ldc + 4 * (rv + v), acc[t][v]);
    }
  }
}

// C[t][0..63] for every token t < T (the qsub contract): K in blocks of kKValues, so that a
// strip's pass re-reads the panel block from L2; strips of kStripTokens tokens by the 4×64
// tile, the tokens left over (and a lone token) by the 1×64. The types with high bits hold
// them for each row vector of a chunk, so take half the chunk.
template <WeightType W, class Dot>
inline void panel(int64_t T, int64_t K, const ActivationRows& A, const std::byte* P, float* C, int64_t ldc) {
  constexpr QFormat f = q_format(W);
  constexpr int high = f.high_bits != 0;
  const int64_t blocks = K / f.block;
  // K = 0 still visits one (empty) range, so that C is written (zeros).
  for (int64_t b0 = 0; b0 < blocks || b0 == 0; b0 += kKValues / f.block) {
    const int64_t b1 = std::min(blocks, b0 + kKValues / f.block);
    int64_t t = 0;
    for (; t + kStripTokens <= T; t += kStripTokens)
      tile<W, Dot, kStripTokens, (2 >> high)>(A.from_token(t), P, b0, b1, b0 > 0, t == 0, C + t * ldc, ldc);
    for (; t < T; ++t) tile<W, Dot, 1, (4 >> high)>(A.from_token(t), P, b0, b1, b0 > 0, t == 0, C + t * ldc, ldc);
  }
}

}  // namespace ffn::kernels::neon_qsub
