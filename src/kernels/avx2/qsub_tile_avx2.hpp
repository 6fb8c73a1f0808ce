// What the two 256-bit qsub panel kernels share (avx2/qsub_panel_gemm_avx2.cpp, vpmaddubsw;
// avx2_vnni/qsub_panel_gemm_avx2_vnni.cpp, AVX-VNNI's vpdpbusd): the panel driver over K
// blocks and its order of tiles, the widening of 8 rows' block scales d, and the float terms
// of a block. The two differ only in how a block's exact integer sums I are formed; the
// float arithmetic after them is the contract's (qsub_panels.hpp), so both agree with the
// scalar reference bit for bit.
// Included only by files compiled with at least the avx2 level's flags.
#pragma once

#include <immintrin.h>

#include <algorithm>

#include "kernels/every_call_inlined.hpp"
#include "kernels/kernels.hpp"
#include "kernels/panel_family.hpp"
#include "kernels/qsub_panels.hpp"

namespace ffn::kernels::avx2_qsub {

inline constexpr int64_t kKValues = 2048;  // values of K per K block (8 super-blocks, 64 blocks of 32)

// 8 bytes at p widened to int32 lanes, signed or unsigned.
inline __m256i i8x8(const uint8_t* p) {
  return _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
}
inline __m256i u8x8(const uint8_t* p) {
  return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
}

// 8 rows' bytes at p and at p + 64 (two sub-blocks' scales or mins of the same rows), each
// row's two widened to int16 in its 32-bit lane, the first in the low half: Signed (scales)
// or unsigned (mins) — a vpmaddwd operand for two sub-blocks at once.
template <bool Signed>
inline __m256i pairs_of_two(const uint8_t* p) {
  const __m128i pairs = _mm_unpacklo_epi8(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)),
                                          _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 64)));
  return Signed ? _mm256_cvtepi8_epi16(pairs) : _mm256_cvtepu8_epi16(pairs);
}

// Z[v] = Σ_u c_u·B_u for V row vectors from v0: c_u the rows' bytes of sub-block u at
// p + 64·u (its scales, Signed; or its mins), B_u the token's sum of sub-block u (bs: its
// sums of 16), exact in int32 (|c| ≤ 255, |B| ≤ 32·127). Two sub-blocks a vpmaddwd where
// they pair up — each row's c_u and c_{u+1} against (B_u, B_{u+1}): for sub-blocks of 16 two
// adjacent sums of 16; for 32 each B_u the sum of two, added by a vpmaddwd by ones, narrowed
// to int16 (vpackssdw: no value saturates) and the pairs broadcast — else a vpmulld a
// sub-block.
template <WeightType W, bool Signed, int V>
inline void sub_block_sums(const uint8_t* p, const int16_t* bs, int v0, __m256i Z[V]) {
  constexpr QFormat f = q_format(W);
  for (int v = 0; v < V; ++v) Z[v] = _mm256_setzero_si256();
  if constexpr ((f.sub == 16 && f.subs() % 2 == 0) || (f.sub == 32 && f.subs() == 8)) {
    [[maybe_unused]] __m256i B16;
    if constexpr (f.sub == 32) {  // the super-block's 16 sums of 16 are one vector
      const __m256i B = _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(bs)),
                                          _mm256_set1_epi16(1));  // B_0 … B_7
      B16 = _mm256_packs_epi32(B, B);  // 32-bit lanes (B0,B1) (B2,B3) (B0,B1) (B2,B3) | (B4,B5) (B6,B7) …
    }
    for (int u = 0; u < f.subs(); u += 2) {
      __m256i B;
      if constexpr (f.sub == 16) {
        int32_t sums;
        __builtin_memcpy(&sums, bs + u, 4);
        B = _mm256_set1_epi32(sums);
      } else {
        constexpr int lane_of_pair[4] = {0, 1, 4, 5};
        B = _mm256_permutevar8x32_epi32(B16, _mm256_set1_epi32(lane_of_pair[u / 2]));
      }
      for (int v = 0; v < V; ++v)
        Z[v] = _mm256_add_epi32(Z[v], _mm256_madd_epi16(pairs_of_two<Signed>(p + u * 64 + 8 * (v0 + v)), B));
    }
  } else {
    for (int u = 0; u < f.subs(); ++u) {
      const __m256i B = _mm256_set1_epi32(qsub_sum(bs, f.sub, u));
      for (int v = 0; v < V; ++v) {
        const uint8_t* c = p + u * 64 + 8 * (v0 + v);
        Z[v] = _mm256_add_epi32(Z[v], _mm256_mullo_epi32(Signed ? i8x8(c) : u8x8(c), B));
      }
    }
  }
}

// The d of rows 8v … 8v + 7 of a block as f32: binary16 widened, or MXFP4's e8m0 byte e as
// 2^(e − 128), whose bits are (e − 1) << 23 for e ≥ 2 and the subnormals 0x00200000 << e below.
template <WeightType W>
inline __m256 scale_d(const uint8_t* blk, int v) {
  if constexpr (q_format(W).e8m0) {
    const __m256i e = u8x8(blk + 8 * v);
    const __m256i normal = _mm256_slli_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(1)), 23);
    const __m256i tiny = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), e);
    return _mm256_castsi256_ps(_mm256_blendv_epi8(tiny, normal, _mm256_cmpgt_epi32(e, _mm256_set1_epi32(1))));
  } else {
    return _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(blk + 16 * v)));
  }
}

// Pair vector `raw` of a sub-block's row vector (h: the row vector's high bits) as the codes
// of its groups g and g + sub/8 (lo, hi): the two nibbles, the two crumbs at pair_shift, or
// for the codes of 4 + high_bits bits the first code whole and its partner's low bits (the
// byte's bits above the code, shifted down) with the rest from h (qsub_panels.hpp), then for
// the codebook types looked up in `codebook` (16 bytes in each lane). The 16-bit shifts carry
// a byte's neighbour's bits in, outside the masks.
template <WeightType W>
inline void nibble_codes(__m256i raw, __m256i h, int g, __m256i codebook, __m256i& lo, __m256i& hi) {
  constexpr QFormat f = q_format(W);
  auto bytes_of = [](int bits) { return _mm256_set1_epi8(char(bits)); };
  if constexpr (f.crumbs) {
    // Odd pairs sit 2 bits up; a shift by a constant, as g is not one where GCC keeps the
    // loop over pairs rolled (a shift by g's bits took a count register and ran slower).
    static_assert(pair_shift(f, 1) == 2);
    const __m256i pair = g % 2 ? _mm256_srli_epi16(raw, 2) : raw;
    lo = _mm256_and_si256(pair, bytes_of(0x03));
    hi = _mm256_and_si256(_mm256_srli_epi16(pair, 4), bytes_of(0x03));
  } else if constexpr (f.high_bits == 0) {
    lo = _mm256_and_si256(raw, bytes_of(0x0F));
    hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), bytes_of(0x0F));
  } else {
    const __m256i first = bytes_of(code_mask(f));
    lo = _mm256_and_si256(raw, first);
    const int move = partner_h_move(f, g);
    const __m256i moved = move >= 0 ? _mm256_slli_epi16(h, move) : _mm256_srli_epi16(h, -move);
    hi = _mm256_or_si256(_mm256_srli_epi16(_mm256_andnot_si256(first, raw), code_bits(f)),
                         _mm256_and_si256(moved, bytes_of(partner_h_mask(f))));
  }
  if constexpr (f.has_codebook()) {
    lo = _mm256_shuffle_epi8(codebook, lo);
    hi = _mm256_shuffle_epi8(codebook, hi);
  }
}

// One block's terms added to the chains of V row vectors from v0 (rows 8·v0 … 8·(v0 + V) − 1):
// acc ← fma(float(I), d·d_x, acc), then for the types with mins acc ← fma(float(M),
// −(dmin·d_x), acc), M = Σ_u m_u·B_u (bs: the block's sums of 16).
template <WeightType W, int V = 8>
inline void accumulate_block(const __m256i I[V], const uint8_t* blk, const int16_t* bs, float d_x, __m256 acc[V],
                             int v0 = 0) {
  constexpr QFormat f = q_format(W);
  constexpr QSubLayout L = qsub_layout(f);
  const __m256 dx = _mm256_set1_ps(d_x);
  for (int v = 0; v < V; ++v)
    acc[v] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(I[v]), _mm256_mul_ps(scale_d<W>(blk, v0 + v), dx), acc[v]);
  if constexpr (f.has_min) {
    __m256i M[V];
    if constexpr (f.stores_mins()) {
      sub_block_sums<W, false, V>(blk + L.m, bs, v0, M);
    } else {  // every min 1 (qsub_panels.hpp): M = Σ_u B_u
      for (int v = 0; v < V; ++v) M[v] = _mm256_set1_epi32(qsub_block_sum(bs, f));
    }
    for (int v = 0; v < V; ++v) {
      const __m256 dmin =
          _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(blk + L.dmin + 16 * (v0 + v))));
      acc[v] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(M[v]), _mm256_mul_ps(dmin, dx), acc[v]);  // fma(M, −ms, acc)
    }
  }
}

// The panel driver: C[t][0..63] for every token t < T (the qsub contract). pass(rows, b0, b1,
// shared) runs every token over super-blocks [b0, b1), rows(t) being token t's q8_K rows.
// One token: K in blocks of kKValues, the chains resuming from C after the first (b0 > 0),
// the first tile prefetching the panel kQPanelPrefetchBytes ahead (shared false). Two tokens
// and more: super-block by super-block, the chains in C (zeroed here), the tiles of a
// super-block each prefetching their share of the one ahead (shared true) — so the panel
// streams from memory once while the tokens' products run, instead of once a pass per K
// block with the memory idle while the other passes re-read it from L2
// (docs/performance.md, "Decode: where the time goes").
// Formats of 32-value blocks run the super-block loop with every tile inlined into it
// (every_call_inlined): a tile call a token and block is otherwise a large share of the
// block's work; the formats of 256-value blocks measured level either way and keep the
// compiler's choice (docs/performance.md, "Four-token strips").
template <WeightType W, class Pass>
inline void panel_in_k_blocks(int64_t T, int64_t K, const ActivationRows& A, float* C, int64_t ldc, Pass pass) {
  constexpr int64_t block = q_format(W).block;
  const int64_t blocks = K / block;
  auto rows = [&](int64_t t) { return Q8Rows{A.codes() + t * K, A.scales + t * blocks, A.sums + t * (K / 16)}; };
  if (T >= 2 && blocks > 0) {
    zero_panel_rows(C, T, ldc);
    auto by_blocks = [&] {
      for (int64_t b = 0; b < blocks; ++b) pass(rows, b, b + 1, true);
    };
    if constexpr (block == 32)
      every_call_inlined(by_blocks);
    else
      by_blocks();
    return;
  }
  // K = 0 still visits one (empty) range, so that C is written (zeros).
  for (int64_t b0 = 0; b0 < blocks || b0 == 0; b0 += kKValues / block)
    pass(rows, b0, std::min(blocks, b0 + kKValues / block), false);
}

// The tiles' order over each pass of panel_in_k_blocks, the same in the two kernels: with
// FourTokenStrips, in the passes of two tokens and more (shared), four tokens at a time as
// 4 × 8-row tiles; then two at a time as 2 × 32-row tiles; an odd token by the 1 × 64 tile,
// before the others: it reads the super-block's lines in their order, where
// a 2 × 32 tile reads half of each 256-byte group, and from memory the others then find them
// in cache (docs/performance.md, "AVX-VNNI: the AVX2 kernel's tiles"). Every tile computes
// a (token, row) by the same integer sums and float chain, so neither grouping nor order
// changes a bit.
// tile.template operator()<TT, V, Shared>(rows, P, v0, b0, b1, resume, prefetch, C, ldc,
// part, parts) runs TT tokens × V row vectors from v0 over super-blocks [b0, b1); in a shared
// pass tile i of a super-block prefetches share i of `parts` of the one ahead, otherwise the
// pass's first tile all of it.
template <WeightType W, bool FourTokenStrips, class Tile>
inline void panel_in_tiles(int64_t T, int64_t K, const ActivationRows& A, const std::byte* P, float* C, int64_t ldc,
                           Tile tile) {
  panel_in_k_blocks<W>(T, K, A, C, ldc, [&](const auto& rows, int64_t b0, int64_t b1, bool shared) {
    const int64_t strips_of_four = FourTokenStrips && shared ? T / 4 : 0;
    const int parts = int(8 * strips_of_four + (T - 4 * strips_of_four));
    int part = 0;
    // An odd token (T = 1 included) first; in a pass that is not shared only the first tile
    // prefetches (only T = 1 has such passes with work in them: K = 0 has none).
    const bool odd = (T - 4 * strips_of_four) % 2 == 1;
    const int64_t end = odd ? T - 1 : T;
    if (odd) {
      const Q8Rows one = rows(end);
      if (shared)
        tile.template operator()<1, 8, true>(&one, P, 0, b0, b1, true, true, C + end * ldc, ldc, part++, parts);
      else
        tile.template operator()<1, 8, false>(&one, P, 0, b0, b1, b0 > 0, true, C + end * ldc, ldc, 0, 1);
    }
    int64_t t = 0;
    for (; t < 4 * strips_of_four; t += 4) {
      const Q8Rows four[4] = {rows(t), rows(t + 1), rows(t + 2), rows(t + 3)};
      for (int v0 = 0; v0 < 8; ++v0)
        tile.template operator()<4, 1, true>(four, P, v0, b0, b1, true, true, C + t * ldc, ldc, part++, parts);
    }
    for (; t < end; t += 2) {
      const Q8Rows two[2] = {rows(t), rows(t + 1)};
      for (int v0 : {0, 4})
        if (shared)
          tile.template operator()<2, 4, true>(two, P, v0, b0, b1, true, true, C + t * ldc, ldc, part++, parts);
        else
          tile.template operator()<2, 4, false>(two, P, v0, b0, b1, b0 > 0, !odd && t == 0 && v0 == 0, C + t * ldc, ldc,
                                                0, 1);
    }
  });
}

}  // namespace ffn::kernels::avx2_qsub
