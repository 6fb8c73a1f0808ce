// Activation-sparse decode's up products on q8_0 rows (kernels.hpp: rows_dot_q8_0; the rows
// in q8_0_split_rows.hpp's layout), written once over a level's integer block dot I8 (the
// AVX-512 VNNI level has a kernel of its own: sparse_rows_q8_0_avx512_vnni.cpp, the same
// bits): each listed row's blocks dotted in int8 with the
// activations quantised to q8_0 (activation_rows.hpp), the arithmetic of the qblock panels
// (qblock_panels.hpp) — per (token, row) one chain acc ← fma(float(S_b), d_w·d_x, acc) over
// the blocks b in order from 0, S_b the exact integer Σ of the block's 32 products. So a
// row's result is the same bits on every ISA, and the same as the dense q8_0 panel product
// gives that row: the sparse and the dense path of a q8_0 block agree on u bit for bit.
//
// Why integers: widening each weight to f32 (rows_dot's way) costs a conversion, a multiply
// by d and an FMA a lane, which paced q8_0 rows on one thread at about half the speed the
// same bytes of f32 rows stream at; the integer dot is a few instructions per 32 weights.
//
// A pass reads R listed rows (R·TT ≤ 8: the (token, row) pairs of a pass are the 8 lanes of
// one float accumulator) and, per block, reduces the pairs' 8 integer vectors to one vector
// of 8 block sums, which the level converts (exactly: |S_b| ≤ 32·128·127 < 2²⁴) and adds
// with one FMA. Like rows_dot, a pass prefetches the next pass's rows into L2 (the last
// pass: the next group of tokens' rows, or the caller's `ahead`).
//
// I8 (a level's integer block dot):
//   Weights, weights(q)   a block's 32 weight codes, prepared once for every token
//   Codes, codes(q)       a block's 32 activation codes
//   Sums, zero(), dot(w, x)  int32 lanes summing to Σ of the 32 products (exact)
//   Acc, acc_zero(), accumulate(s[8], scale[8], acc): acc[l] ← fma(float(Σ lanes of s[l]),
//                         scale[l], acc[l]) for l < 8; store(acc, out[8])
//   half(p)               the binary16 at p as f32
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/activation_rows.hpp"
#include "kernels/q8_0_split_rows.hpp"
#include "kernels/sparse_rows.hpp"

namespace ffn::kernels::sparse_rows {

// A q8_0 block's bytes, for prefetch_next (which prefetches a row's lines in order as the
// pass reads its blocks: by block b, the first 34·(b + 1) bytes) (a type of each level's own, as every function
// here: the levels' files are compiled with different flags, so no inline function they
// share may be instantiated for them alike).
template <class I8>
struct Q8_0Block {
  static constexpr int64_t block_bytes = 34;
};

// out[t·ldo + r] for TT tokens and R rows from rows[0]; rows + R … rows + R + n_next are the
// next pass's rows (prefetched; none: ahead's).
template <class I8, int64_t R, int64_t TT>
void dot_rows_q8_0(const int32_t* rows, int64_t n_next, int64_t K, const ActivationRows& x, const std::byte* W,
                   int64_t row_bytes, float* out, int64_t ldo, const RowsAhead& ahead) {
  static_assert(R * TT <= 8);
  constexpr int64_t B = q8_0_split::kBlock, BB = Q8_0Block<I8>::block_bytes;
  const std::byte* w[R];
  for (int64_t r = 0; r < R; ++r) w[r] = W + int64_t(rows[r]) * row_bytes;
  const NextRows<R, I8> next(rows + R, n_next, W, row_bytes, ahead);
  typename I8::Sums s[8];
  alignas(32) float scale[8] = {};
  for (int64_t l = R * TT; l < 8; ++l) s[l] = I8::zero();  // lanes no pair uses: 0 · 0
  typename I8::Acc acc = I8::acc_zero();
  for (int64_t b = 0; b < K / B; ++b) {
    prefetch_next<Q8_0Block<I8>>(next.at, next.n, b * BB);
    typename I8::Codes xc[TT];
    for (int64_t t = 0; t < TT; ++t) xc[t] = I8::codes(x.codes() + t * x.row_bytes + b * B);
    for (int64_t r = 0; r < R; ++r) {
      const typename I8::Weights wq = I8::weights(q8_0_split::codes(w[r], K, b));
      const float d = I8::half(q8_0_split::scale(w[r], b));
      for (int64_t t = 0; t < TT; ++t) {
        s[t * R + r] = I8::dot(wq, xc[t]);
        scale[t * R + r] = d * x.scales[t * x.scale_stride + b];  // exact: two binary16 values
      }
    }
    I8::accumulate(s, scale, acc);
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
