// The 1×64 tile of the 256-bit qblock panel kernels (avx2/qblock_panel_gemm_avx2.cpp,
// vpmaddubsw; avx2_vnni/qblock_panel_gemm_avx2_vnni.cpp, AVX-VNNI's vpdpbusd): one token × 8
// ymm of 8 rows, block after block in one pass, so the panel streams from memory as the
// linear array it is, with no software prefetch (the hardware prefetcher alone streams it
// fastest on AMD's cores: docs/performance.md, AVX2; on Intel's, panel() below). The two
// differ only in how a block's exact integer sums S_b are formed, which each file gives as
// BlockSums::sums<W>(q, x_group, x_sum, sum):
//   q        the block's groups (qblock_panels.hpp: group g's 4 weights of rows 8v … 8v + 7
//            are the 32 bytes at q + 256g + 32v, unsigned codes);
//   x_group  x_group(g): the token's 4 activation bytes of group g broadcast to every lane;
//   x_sum    the activations' Σx of the block, for the sums that start from −offset·Σx;
//   sum[v]   out: S_b of rows 8v … 8v + 7, int32;
// and BlockSums::kPreparedFromTokens<W>: from how many tokens (0: never) block_major makes
// each block ready once for all of them as a BlockSums::Block<W>:
//   load(q)                         the block's groups, in the form its sums read fastest;
//   sums(x_group, x_sum, sum)       S_b of the loaded block, as sums<W> gives it.
// The float arithmetic after S_b is the contract's (qblock_panels.hpp), so both agree with
// the scalar reference bit for bit.
// Included only by files compiled with at least -mavx2 -mfma -mf16c.
#pragma once

#include <immintrin.h>

#include <algorithm>

#include "kernels/cpu_features.hpp"
#include "kernels/kernels.hpp"
#include "kernels/panel_family.hpp"
#include "kernels/qblock_panels.hpp"

namespace ffn::kernels::avx2_qblock {

inline constexpr int64_t kKBlocks = 64;  // blocks of 32 per K block

// A BlockSums::Block<W> whose sums read the panel's groups in place through sums<W>.
template <class BlockSums, WeightType W>
struct InPlaceBlock {
  const std::byte* q = nullptr;
  void load(const std::byte* groups) { q = groups; }
  template <class XGroup, class XSum>
  void sums(const XGroup& x_group, const XSum& x_sum, __m256i sum[8]) const {
    BlockSums::template sums<W>(q, x_group, x_sum, sum);
  }
};

// One token × the panel's 64 rows over blocks [b0, b1); the chains start from C when
// resume. 8 integer sums and 8 float accumulators: the accumulators, touched once a block,
// are what the compiler may keep in memory.
template <WeightType W, class BlockSums>
inline void tile(const Q8Rows& A, const std::byte* P, int64_t b0, int64_t b1, bool resume, float* C) {
  constexpr int64_t block_bytes = qblock_bytes(q_format(W));
  __m256 acc[8];
  for (int v = 0; v < 8; ++v) acc[v] = resume ? _mm256_loadu_ps(C + 8 * v) : _mm256_setzero_ps();
  for (int64_t b = b0; b < b1; ++b) {
    const std::byte* blk = P + b * block_bytes;
    auto x_group = [&](int g) {
      int32_t bytes;
      __builtin_memcpy(&bytes, A.codes + 32 * b + 4 * g, 4);
      return _mm256_set1_epi32(bytes);
    };
    __m256i sum[8];
    BlockSums::template sums<W>(
        blk + kQBlockScaleBytes, x_group, [&] { return q8_block_sum(A.sums, b); }, sum);
    const __m256 dx = _mm256_set1_ps(A.scales[b]);
    for (int v = 0; v < 8; ++v) {
      const __m128i h = _mm_load_si128(reinterpret_cast<const __m128i*>(blk + 2 * 8 * v));
      const __m256 s = _mm256_mul_ps(_mm256_cvtph_ps(h), dx);
      acc[v] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum[v]), s, acc[v]);
    }
  }
  for (int v = 0; v < 8; ++v) _mm256_storeu_ps(C + 8 * v, acc[v]);
}

// Two tokens and more, block by block: every token takes a block while it is in L1, its
// chains in C, so the panel streams from memory once, while the tokens' products run,
// instead of once a token per K block with the memory idle while the other tokens re-read it
// from L2 (docs/performance.md, "Decode: where the time goes"). The block's weights are read
// through Weights (InPlaceBlock, or a BlockSums::Block made ready once for all the tokens).
// The tokens share the prefetch of the block kQPanelPrefetchBytes ahead, into L1 (IntoL1) or
// L2.
template <WeightType W, class Weights, bool IntoL1>
inline void block_major_with(int64_t T, int64_t K, const ActivationRows& A, const std::byte* P, float* C, int64_t ldc) {
  constexpr int64_t block_bytes = qblock_bytes(q_format(W));
  constexpr int64_t ahead = kQPanelPrefetchBytes / block_bytes * block_bytes;
  const int64_t blocks = K / 32;
  if (T <= 0) return;  // no rows to write, and no tokens to deal the prefetch to
  zero_panel_rows(C, T, ldc);
  Weights weights;
  const LineShares token_shares(block_bytes, T);  // a share of the block ahead a token
  for (int64_t b = 0; b < blocks; ++b) {
    const std::byte* blk = P + b * block_bytes;
    weights.load(blk + kQBlockScaleBytes);
    LineShares ahead_shares = token_shares;
    for (int64_t t = 0; t < T; ++t) {
      ahead_shares.prefetch_next<IntoL1>(blk + ahead);
      const int8_t* codes = A.codes() + t * K;
      const int16_t* sums = A.sums + t * (K / 16);
      auto x_group = [&](int g) {
        int32_t bytes;
        __builtin_memcpy(&bytes, codes + 32 * b + 4 * g, 4);
        return _mm256_set1_epi32(bytes);
      };
      __m256i sum[8];
      weights.sums(
          x_group, [&] { return q8_block_sum(sums, b); }, sum);
      const __m256 dx = _mm256_set1_ps(A.scales[t * blocks + b]);
      float* c = C + t * ldc;
      for (int v = 0; v < 8; ++v) {
        const __m128i h = _mm_load_si128(reinterpret_cast<const __m128i*>(blk + 2 * 8 * v));
        const __m256 s = _mm256_mul_ps(_mm256_cvtph_ps(h), dx);
        _mm256_storeu_ps(c + 8 * v, _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum[v]), s, _mm256_loadu_ps(c + 8 * v)));
      }
    }
  }
}

// Each token reads the blocks in place, or from BlockSums::kPreparedFromTokens<W> tokens
// the blocks are made ready once for all of them (BlockSums::Block).
template <WeightType W, class BlockSums, bool IntoL1>
inline void block_major(int64_t T, int64_t K, const ActivationRows& A, const std::byte* P, float* C, int64_t ldc) {
  constexpr int64_t prepared_from = BlockSums::template kPreparedFromTokens<W>;
  if constexpr (prepared_from > 0) {
    if (T >= prepared_from) {
      block_major_with<W, typename BlockSums::template Block<W>, IntoL1>(T, K, A, P, C, ldc);
      return;
    }
  }
  block_major_with<W, InPlaceBlock<BlockSums, W>, IntoL1>(T, K, A, P, C, ldc);
}

// C[t][0..63] for every token t < T (the qblock contract, qblock_panels.hpp): one token in
// one pass (K in blocks of kKBlocks, the chains in registers), more by block_major — and on
// Intel's cores one token too, whose prefetch made it 1.15–1.3× faster there than the
// hardware prefetcher alone. block_major prefetches into L1 for q8_0 on AMD's cores, whose
// loop reads the most bytes per instruction, into L2 otherwise: on Intel's, q8_0's into L2
// was 1.01–1.14× faster at one and two tokens (docs/performance.md, "An Intel CPU: Emerald
// Rapids"). The chains are the same either way, so are the bits.
template <WeightType W, class BlockSums>
inline void panel(int64_t T, int64_t K, const ActivationRows& A, const std::byte* P, float* C, int64_t ldc) {
  if (cpu_is_intel()) {
    block_major<W, BlockSums, false>(T, K, A, P, C, ldc);
    return;
  }
  if (T >= 2) {
    block_major<W, BlockSums, !q_format(W).nibbles>(T, K, A, P, C, ldc);
    return;
  }
  const int64_t blocks = K / 32;
  // K = 0 still visits one (empty) range, so that C is written (zeros).
  for (int64_t b0 = 0; b0 < blocks || b0 == 0; b0 += kKBlocks) {
    const int64_t b1 = std::min(blocks, b0 + kKBlocks);
    for (int64_t t = 0; t < T; ++t) {
      const Q8Rows row{A.codes() + t * K, A.scales + t * blocks, A.sums + t * (K / 16)};
      tile<W, BlockSums>(row, P, b0, b1, b0 > 0, C + t * ldc);
    }
  }
}

}  // namespace ffn::kernels::avx2_qblock
