// Activation-sparse decode's up products on q8_0 rows (kernels.hpp: rows_dot_q8_0; the rows
// in q8_0_split_rows.hpp's layout), written once over a level's integer block dot I8: each
// listed row's blocks dotted in int8 with the activations quantised to q8_0
// (activation_rows.hpp), the arithmetic of the qblock panels (qblock_panels.hpp) — per
// (token, row) one chain acc ← fma(float(S_b), d_w·d_x, acc) over the blocks b in order from
// 0, S_b the exact integer Σ of the block's 32 products. So a row's result is the same bits
// on every ISA, and the same as the dense q8_0 panel product gives that row: the sparse and
// the dense path of a q8_0 block agree on u bit for bit.
//
// Why integers: widening each weight to f32 (rows_dot's way) costs a conversion, a multiply
// by d and an FMA a lane, which paced q8_0 rows on one thread at about half the speed the
// same bytes of f32 rows stream at; the integer dot is a few instructions per 32 weights.
//
// A pass reads R listed rows (R·TT ≤ 8: the (token, row) pairs of a pass are the 8 lanes of
// one float accumulator) and, per block, reduces the pairs' 8 integer vectors to one vector
// of 8 block sums, which the level converts (exactly: |S_b| ≤ 32·128·127 < 2²⁴) and adds
// with one FMA. The 8 scales d_w·d_x of a block come from a table filled 8 blocks at a time
// (fill_scale_table: on x86 a row's 8 binary16 scales widened in one instruction, then a
// transpose), where one scalar conversion and multiply a block and pair had been a large
// share of the loop (docs/performance.md, "Sparse decode"). Like rows_dot, a pass
// prefetches the next pass's rows into L2 (the last pass: the next group of tokens' rows, or
// the caller's `ahead`).
//
// I8 (a level's integer block dot):
//   Weights, weights(q)   a block's 32 weight codes, prepared once for every token
//   Codes, codes(q)       a block's 32 activation codes
//   Sums, zero(), dot(w, x)  int32 lanes summing to Σ of the 32 products (exact)
//   Acc, acc_zero(), accumulate(s[8], scale, acc): acc[l] ← fma(float(Σ lanes of s[l]),
//                         scale[l], acc[l]) for l < 8; store(acc, out[8])
//   half(p)               the binary16 at p as f32
//   scale_table8<R, TT>(w, scales, stride, b0, table)  optional: fill_scale_table's 8 blocks at once
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "kernels/activation_rows.hpp"
#include "kernels/q8_0_split_rows.hpp"
#include "kernels/sparse_rows.hpp"

namespace ffn::kernels::sparse_rows {

// A q8_0 block's share of a row's bytes, for prefetch_next, which prefetches a row's lines in
// order as the pass reads its blocks (by block b, the first 34·(b + 1) bytes, scales and codes
// alike). A type of each level's own, as every function here: the levels' files are compiled
// with different flags, so no inline function they share may be instantiated for them alike.
template <class I8>
struct Q8_0Block {
  static constexpr int64_t block_bytes = 34;
};

// table[j·8 + l] = d_w·d_x of block b0 + j for lane l = t·R + r (row r's scale times token
// t's), j < count ≤ 8; lanes no pair uses 0. Exact: the product of two binary16 values. A
// level whose I8 has scale_table8 converts a whole chunk's 8 scales of a row at once and
// transposes; otherwise (and for a short last chunk) one at a time.
template <class I8, int64_t R, int64_t TT>
void fill_scale_table(const std::byte* const (&w)[R], const ActivationRows& x, int64_t b0, int64_t count,
                      float* table) {
  if constexpr (requires { I8::template scale_table8<R, TT>(w, x.scales, x.scale_stride, b0, table); }) {
    if (count == 8) {
      I8::template scale_table8<R, TT>(w, x.scales, x.scale_stride, b0, table);
      return;
    }
  }
  for (int64_t j = 0; j < count; ++j)
    for (int64_t l = 0; l < 8; ++l) {
      const int64_t t = l / R, r = l % R;
      table[j * 8 + l] =
          l < R * TT ? I8::half(q8_0_split::scale(w[r], b0 + j)) * x.scales[t * x.scale_stride + b0 + j] : 0.0f;
    }
}

// out[t·ldo + r] for TT tokens and R rows from rows[0]; rows + R … rows + R + n_next are the
// next pass's rows (prefetched; none: ahead's).
template <class I8, int64_t R, int64_t TT>
void dot_rows_q8_0(const int32_t* rows, int64_t n_next, int64_t K, const ActivationRows& x, const std::byte* W,
                   int64_t row_bytes, float* out, int64_t ldo, const RowsAhead& ahead) {
  static_assert(R * TT <= 8);
  constexpr int64_t B = q8_0_split::kBlock, BB = Q8_0Block<I8>::block_bytes, kChunk = 8;
  const int64_t blocks = K / B;
  const std::byte* w[R];
  for (int64_t r = 0; r < R; ++r) w[r] = W + int64_t(rows[r]) * row_bytes;
  const NextRows<R, I8> next(rows + R, n_next, W, row_bytes, ahead);
  typename I8::Sums s[8];
  alignas(32) float table[kChunk * 8];
  for (int64_t l = R * TT; l < 8; ++l) s[l] = I8::zero();  // lanes no pair uses: 0 · 0
  typename I8::Acc acc = I8::acc_zero();
  for (int64_t b0 = 0; b0 < blocks; b0 += kChunk) {
    const int64_t count = std::min(kChunk, blocks - b0);
    fill_scale_table<I8, R, TT>(w, x, b0, count, table);
    for (int64_t b = b0; b < b0 + count; ++b) {
      prefetch_next<Q8_0Block<I8>>(next.at, next.n, b * BB);
      typename I8::Codes xc[TT];
      for (int64_t t = 0; t < TT; ++t) xc[t] = I8::codes(x.codes() + t * x.row_bytes + b * B);
      for (int64_t r = 0; r < R; ++r) {
        const typename I8::Weights wq = I8::weights(q8_0_split::codes(w[r], K, b));
        for (int64_t t = 0; t < TT; ++t) s[t * R + r] = I8::dot(wq, xc[t]);
      }
      I8::accumulate(s, table + (b - b0) * 8, acc);
    }
  }
  alignas(32) float result[8];
  I8::store(acc, result);
  for (int64_t t = 0; t < TT; ++t)
    for (int64_t r = 0; r < R; ++r) out[t * ldo + r] = result[t * R + r];
}

template <class I8, int64_t TT>
void dot_q8_0_tokens(int64_t n, const int32_t* rows, int64_t K, const ActivationRows& x, const std::byte* W,
                     int64_t row_bytes, float* out, int64_t ldo, const RowsAhead& ahead) {
  in_passes<kRows / TT>(n, [&]<int64_t R>(int64_t i) {
    dot_rows_q8_0<I8, R, TT>(rows + i, n - i - R, K, x, W, row_bytes, out + i, ldo, ahead);
  });
}

// The kernels.hpp entry of a level.
template <class I8>
void rows_dot_q8_0(int64_t T, int64_t n, const int32_t* rows, int64_t K, const ActivationRows& x, const std::byte* W,
                   int64_t row_bytes, float* out, int64_t ldo, const RowsAhead& ahead) {
  static_assert(kRows == 8);
  in_token_groups(T, [&]<int64_t TT>(int64_t t, bool last) {
    dot_q8_0_tokens<I8, TT>(n, rows, K, x.from_token(t), W, row_bytes, out + t * ldo, ldo,
                            ahead_of_tokens(last, rows, n, W, ahead));
  });
}

}  // namespace ffn::kernels::sparse_rows
