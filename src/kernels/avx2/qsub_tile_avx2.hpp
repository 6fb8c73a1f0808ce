// What the two 256-bit qsub panel kernels share (avx2/qsub_panel_gemm_avx2.cpp, vpmaddubsw;
// avx2_vnni/qsub_panel_gemm_avx2_vnni.cpp, AVX-VNNI's vpdpbusd): the panel driver over K blocks,
// the widening of 8 rows' block scales d, and the float terms of a block. The two differ only in how a
// block's exact integer sums I are formed; the float arithmetic after them is the contract's
// (qsub_panels.hpp), so both agree with the scalar reference bit for bit.
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
    for (int v = 0; v < V; ++v) M[v] = _mm256_setzero_si256();
    for (int u = 0; u < f.subs(); ++u) {
      const __m256i B = _mm256_set1_epi32(qsub_sum(bs, f.sub, u));
      for (int v = 0; v < V; ++v)
        M[v] = _mm256_add_epi32(M[v], _mm256_mullo_epi32(u8x8(blk + L.m + u * 64 + 8 * (v0 + v)), B));
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

}  // namespace ffn::kernels::avx2_qsub
