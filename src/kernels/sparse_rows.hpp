// The two loops of activation-sparse decode (contracts: kernels.hpp, rows_dot and
// rows_axpy), written once over a level's vector traits VS (vec_<level>.hpp's store traits:
// load, load_tail, fmadd, add, store, store_tail, reduce) and a reader of a weight type's
// rows: ElementRows over a level's loader (f32 as it is, f16 and bf16 widened exactly in
// registers), Q8_0Rows over its q8_0 loader (d·q, exact in f32; rows_axpy only: q8_0's dot
// is sparse_rows_q8_0.hpp's integer one).
//
// Both read a listed subset of a matrix's rows, each row stored contiguously (up's rows, and
// down transposed: a row per hidden channel), so a skipped hidden channel is bytes never
// read. They read kRows listed rows at once, interleaved a vector of each in turn: scattered
// rows of a few KB read one after another stream at under half the bandwidth of one long
// run, while eight at once recover nearly all of it (docs/performance.md, "Sparse decode").
// A few tokens (up to kTokens) share each vector of weights read and widened, so a row is
// read once for them, not once a token; each (token, row) keeps its own chain, the same
// whether its token is alone or beside others.
//
// Each pass prefetches the rows of the next pass (their first R listed rows after its own),
// a cache line as its own rows cross one: runs of a few KB at scattered addresses give the
// hardware prefetcher too little to lock on to. On one thread this reads q8_0 rows from
// memory about 1.8× faster, f32 rows 1.05–1.23× (docs/performance.md, "Sparse decode").
// The last pass of a group of tokens prefetches the list's first rows for the next group of
// tokens, and the last pass of the call the caller's `ahead` (rows_ahead.hpp).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "ffn/weight_type.hpp"
#include "kernels/q8_0_split_rows.hpp"
#include "kernels/rows_ahead.hpp"

namespace ffn::kernels::sparse_rows {

// Rows read at once (the dot product: kRows / tokens, so that its accumulators, tokens ×
// rows, stay kRows), and tokens at once.
inline constexpr int64_t kRows = 8, kTokens = 4;

template <class VS>
struct LoadF32 {
  using Elem = float;
  static typename VS::Vec load(const float* p) { return VS::load(p); }
  static typename VS::Vec load_tail(const float* p, int64_t count) { return VS::load_tail(p, count); }
};

// A row of an element type: blocks of one vector; the tail (fewer than VS::lanes values) masked.
template <class VS, class Load>
struct ElementRows {
  using Vec = typename VS::Vec;
  using E = typename Load::Elem;
  static constexpr int64_t block = VS::lanes, block_bytes = block * int64_t(sizeof(E));
  using Block = const E*;
  static Block open(const std::byte* row, int64_t k, int64_t /*n*/) { return reinterpret_cast<const E*>(row) + k; }
  static Vec load(Block b, int64_t s) { return Load::load(b + s); }
  static Vec load_tail(const std::byte* row, int64_t k, int64_t count) {
    return Load::load_tail(reinterpret_cast<const E*>(row) + k, count);
  }
  static Vec weigh(const Block&, Vec h) { return h; }  // rows_axpy's coefficient: h itself
};

// A q8_0 row (rows_axpy's) of n values in q8_0_split_rows.hpp's layout: blocks of 32 values,
// each a binary16 d (the row's scales first) and 32 int8 q (then its codes). load widens the
// codes q exactly; the block's d goes into the coefficient
// instead (weigh: h·d, rounded once, a block and row), so a step is fma(h·d, q, y): a
// conversion and an FMA a vector, where d·q before each FMA cost a multiply more — the
// loop's pace (docs/performance.md, "Sparse decode"). Q8 is the level's loader: scale(block)
// broadcasts d, load(q) widens VS::lanes codes. Rows are whole blocks: no tail.
template <class VS, class Q8>
struct Q8_0Rows {
  using Vec = typename VS::Vec;
  static constexpr int64_t block = 32, block_bytes = 2 + block;
  struct Block {
    const int8_t* q;
    Vec d;
  };
  static Block open(const std::byte* row, int64_t k, int64_t n) {
    return {q8_0_split::codes(row, n, k / block), Q8::scale(q8_0_split::scale(row, k / block))};
  }
  static Vec load(const Block& b, int64_t s) { return Q8::load(b.q + s); }
  static Vec load_tail(const std::byte*, int64_t, int64_t) { return VS::zero(); }    // never called
  static Vec weigh(const Block& b, Vec h) { return VS::fmadd(h, b.d, VS::zero()); }  // h·d rounded once
};

// Prefetches the line holding p into L2 (x86's prefetcht1, Arm's PRFM PLDL2KEEP) as an
// instruction the compiler must keep: GCC 12 deleted the __builtin_prefetch loop this had,
// at -O3, from every instantiation whose condition below is not always true — q8_0, f16 and
// bf16 rows, and every row type of the AVX2 and q8_0-dot files — so only f32 rows had
// prefetched (with it, each kernel reads scattered q8_0 rows about 1.8x faster on one
// thread: docs/performance.md, "Sparse decode"). Static: a copy for each level's file.
static inline void prefetch_line_to_l2(const std::byte* p) {
#if defined(__x86_64__) || defined(__i386__)
  asm volatile("prefetcht1 %0" : : "m"(*reinterpret_cast<const char*>(p)));
#elif defined(__aarch64__)
  asm volatile("prfm pldl2keep, [%0]" : : "r"(p));
#else
  __builtin_prefetch(p, 0, 2);
#endif
}

// Prefetches, into L2, the line holding byte `offset` of each of the n next rows when a
// block of Rows starting at `offset` is the first to start in its line (blocks of at most a
// line: each line once).
template <class Rows>
inline void prefetch_next(const std::byte* const* next, int64_t n, int64_t offset) {
  static_assert(Rows::block_bytes <= 64);
  if ((offset & 63) >= Rows::block_bytes) return;
  for (int64_t r = 0; r < n; ++r) prefetch_line_to_l2(next[r] + offset);
}

// The rows of the pass after one over R rows from rows[0] (n_next of them, at most R), or,
// where none follow in the list (n_next = 0), the first R of `ahead`. Level: the level's own
// vector or block-dot type, so that each level's file has its own copy (the levels' files
// are compiled with different flags: none may share an inline function's one copy).
template <int64_t R, class Level>
struct NextRows {
  const std::byte* at[R];
  int64_t n;
  NextRows(const int32_t* next, int64_t n_next, const std::byte* W, int64_t row_bytes, const RowsAhead& ahead) {
    if (n_next <= 0) {
      next = ahead.rows;
      n_next = ahead.n;
      W = ahead.W;
    }
    n = std::min(n_next, R);
    for (int64_t r = 0; r < n; ++r) at[r] = W + int64_t(next[r]) * row_bytes;
  }
};

// out[t·ldo + r] = Σ_k x[t·ldx + k]·W[rows[r]][k] for TT tokens and R rows: per (t, r) one
// chain of VS::lanes lanes over k in steps of a vector (the tail masked into it), then
// reduced in VS's fixed order — the same bits for any list, any T and any split of either.
// rows + R … rows + R + n_next are the next pass's rows (prefetched; none: ahead's).
template <class VS, class Rows, int64_t R, int64_t TT>
void dot_rows(const int32_t* rows, int64_t n_next, int64_t K, const float* x, int64_t ldx, const std::byte* W,
              int64_t row_bytes, float* out, int64_t ldo, const RowsAhead& ahead) {
  using Vec = typename VS::Vec;
  constexpr int64_t L = VS::lanes, B = Rows::block;
  const std::byte* w[R];
  for (int64_t r = 0; r < R; ++r) w[r] = W + int64_t(rows[r]) * row_bytes;
  const NextRows<R, VS> next(rows + R, n_next, W, row_bytes, ahead);
  Vec acc[TT][R];
  for (int64_t t = 0; t < TT; ++t)
    for (int64_t r = 0; r < R; ++r) acc[t][r] = VS::zero();
  int64_t k = 0;
  for (; k + B <= K; k += B) {
    prefetch_next<Rows>(next.at, next.n, k / B * Rows::block_bytes);
    typename Rows::Block block[R];
    for (int64_t r = 0; r < R; ++r) block[r] = Rows::open(w[r], k, K);
    for (int64_t s = 0; s < B; s += L) {
      // A weight vector at a time (the registers: TT·R accumulators, TT inputs, one weight).
      Vec xv[TT];
      for (int64_t t = 0; t < TT; ++t) xv[t] = VS::load(x + t * ldx + k + s);
      for (int64_t r = 0; r < R; ++r) {
        const Vec wv = Rows::load(block[r], s);
        for (int64_t t = 0; t < TT; ++t) acc[t][r] = VS::fmadd(xv[t], wv, acc[t][r]);
      }
    }
  }
  if (k < K) {
    Vec xv[TT];
    for (int64_t t = 0; t < TT; ++t) xv[t] = VS::load_tail(x + t * ldx + k, K - k);
    for (int64_t r = 0; r < R; ++r) {
      const Vec wv = Rows::load_tail(w[r], k, K - k);
      for (int64_t t = 0; t < TT; ++t) acc[t][r] = VS::fmadd(xv[t], wv, acc[t][r]);
    }
  }
  for (int64_t t = 0; t < TT; ++t)
    for (int64_t r = 0; r < R; ++r) out[t * ldo + r] = VS::reduce(acc[t][r]);
}

// y[t·ldy + c] ← fma(h[t·ldh + r], W[rows[r]][c], y[t·ldy + c]) for R listed rows in order,
// c < N, TT tokens (q8_0: fma(h·d, q, y), Q8_0Rows): one rounding a step, R rows a pass (y
// loaded and stored once a pass).
// rows + R … rows + R + n_next are the next pass's rows (prefetched; none: ahead's).
template <class VS, class Rows, int64_t R, int64_t TT>
void axpy_rows(const int32_t* rows, int64_t n_next, const float* h, int64_t ldh, int64_t N, const std::byte* W,
               int64_t row_bytes, float* y, int64_t ldy, const RowsAhead& ahead) {
  using Vec = typename VS::Vec;
  constexpr int64_t L = VS::lanes, B = Rows::block;
  const std::byte* w[R];
  for (int64_t r = 0; r < R; ++r) w[r] = W + int64_t(rows[r]) * row_bytes;
  const NextRows<R, VS> next(rows + R, n_next, W, row_bytes, ahead);
  Vec hv[TT][R];
  for (int64_t t = 0; t < TT; ++t)
    for (int64_t r = 0; r < R; ++r) hv[t][r] = VS::broadcast(h[t * ldh + r]);
  int64_t c = 0;
  for (; c + B <= N; c += B) {
    prefetch_next<Rows>(next.at, next.n, c / B * Rows::block_bytes);
    typename Rows::Block block[R];
    for (int64_t r = 0; r < R; ++r) block[r] = Rows::open(w[r], c, N);
    Vec coefficient[TT][R];
    for (int64_t t = 0; t < TT; ++t)
      for (int64_t r = 0; r < R; ++r) coefficient[t][r] = Rows::weigh(block[r], hv[t][r]);
    for (int64_t s = 0; s < B; s += L) {
      Vec acc[TT];
      for (int64_t t = 0; t < TT; ++t) acc[t] = VS::load(y + t * ldy + c + s);
      for (int64_t r = 0; r < R; ++r) {
        const Vec wv = Rows::load(block[r], s);
        for (int64_t t = 0; t < TT; ++t) acc[t] = VS::fmadd(coefficient[t][r], wv, acc[t]);
      }
      for (int64_t t = 0; t < TT; ++t) VS::store(y + t * ldy + c + s, acc[t]);
    }
  }
  if (c < N) {
    Vec acc[TT];
    for (int64_t t = 0; t < TT; ++t) acc[t] = VS::load_tail(y + t * ldy + c, N - c);
    for (int64_t r = 0; r < R; ++r) {
      const Vec wv = Rows::load_tail(w[r], c, N - c);
      for (int64_t t = 0; t < TT; ++t) acc[t] = VS::fmadd(hv[t][r], wv, acc[t]);
    }
    for (int64_t t = 0; t < TT; ++t) VS::store_tail(y + t * ldy + c, acc[t], N - c);
  }
}

// Passes over n listed rows: R rows a pass, then what is left in at most one pass each of
// R/2, R/4, … 1 rows (its binary digits), so that the few rows a group ends with are still
// read several at once; pass.operator()<r>(i) reads rows i … i + r − 1. (How rows are cut
// into passes changes no bit: each (token, row) dot is its own chain, and each axpy step
// is rounded once whether its y is in a register or stored between passes.)
template <int64_t R, class Pass>
void in_passes(int64_t n, Pass pass, int64_t i = 0) {
  for (; i + R <= n; i += R) pass.template operator()<R>(i);
  if constexpr (R > 1) in_passes<R / 2>(n, pass, i);
}

// TT tokens over the n listed rows, kRows / TT at a time (the dot's accumulators), then the rest.
template <class VS, class Rows, int64_t TT>
void dot_tokens(int64_t n, const int32_t* rows, int64_t K, const float* x, int64_t ldx, const std::byte* W,
                int64_t row_bytes, float* out, int64_t ldo, const RowsAhead& ahead) {
  in_passes<kRows / TT>(n, [&]<int64_t R>(int64_t i) {
    dot_rows<VS, Rows, R, TT>(rows + i, n - i - R, K, x, ldx, W, row_bytes, out + i, ldo, ahead);
  });
}

template <class VS, class Rows, int64_t TT>
void axpy_tokens(int64_t n, const int32_t* rows, const float* h, int64_t ldh, int64_t N, const std::byte* W,
                 int64_t row_bytes, float* y, int64_t ldy, const RowsAhead& ahead) {
  in_passes<kRows>(n, [&]<int64_t R>(int64_t i) {
    axpy_rows<VS, Rows, R, TT>(rows + i, n - i - R, h + i, ldh, N, W, row_bytes, y, ldy, ahead);
  });
}

// Tokens kTokens at a time, then 2, then 1 (each call's tokens share its rows' reads);
// body.operator()<TT>(t, last): last is whether tokens t … t + TT − 1 are the call's last.
template <class Body>
void in_token_groups(int64_t T, Body body) {
  static_assert(kTokens == 4);
  int64_t t = 0;
  for (; t + 4 <= T; t += 4) body.template operator()<4>(t, t + 4 == T);
  if (T - t >= 2) {
    body.template operator()<2>(t, t + 2 == T);
    t += 2;
  }
  if (t < T) body.template operator()<1>(t, true);
}

// What a group of tokens' last pass prefetches: the list's first rows again for the next
// group of tokens, the caller's rows after the last. Static: a copy for each level's file.
static inline RowsAhead ahead_of_tokens(bool last, const int32_t* rows, int64_t n, const std::byte* W,
                                        const RowsAhead& ahead) {
  return last ? ahead : RowsAhead{rows, n, W};
}

template <class VS, class Rows>
void rows_dot(int64_t T, int64_t n, const int32_t* rows, int64_t K, const float* x, int64_t ldx, const std::byte* W,
              int64_t row_bytes, float* out, int64_t ldo, const RowsAhead& ahead) {
  in_token_groups(T, [&]<int64_t TT>(int64_t t, bool last) {
    dot_tokens<VS, Rows, TT>(n, rows, K, x + t * ldx, ldx, W, row_bytes, out + t * ldo, ldo,
                             ahead_of_tokens(last, rows, n, W, ahead));
  });
}

template <class VS, class Rows>
void rows_axpy(int64_t T, int64_t n, const int32_t* rows, const float* h, int64_t ldh, int64_t N, const std::byte* W,
               int64_t row_bytes, float* y, int64_t ldy, const RowsAhead& ahead) {
  in_token_groups(T, [&]<int64_t TT>(int64_t t, bool last) {
    axpy_tokens<VS, Rows, TT>(n, rows, h + t * ldh, ldh, N, W, row_bytes, y + t * ldy, ldy,
                              ahead_of_tokens(last, rows, n, W, ahead));
  });
}

// The kernels.hpp entries of a level: the loops above for the weight's type (rows_dot: f32,
// f16 or bf16, q8_0 rows taking the integer dot of sparse_rows_q8_0.hpp; rows_axpy: those
// or q8_0; the caller never passes another).
template <class VS, class LoadF16, class LoadBf16, class Q8>
struct Entries {
  template <class Body>
  static void by_element_type(WeightType type, Body body) {
    if (type == WeightType::f16)
      body(ElementRows<VS, LoadF16>{});
    else if (type == WeightType::bf16)
      body(ElementRows<VS, LoadBf16>{});
    else
      body(ElementRows<VS, LoadF32<VS>>{});
  }
  static void dot(WeightType type, int64_t T, int64_t n, const int32_t* rows, int64_t K, const float* x, int64_t ldx,
                  const std::byte* W, int64_t row_bytes, float* out, int64_t ldo, const RowsAhead& ahead) {
    by_element_type(
        type, [&]<class Rows>(Rows) { rows_dot<VS, Rows>(T, n, rows, K, x, ldx, W, row_bytes, out, ldo, ahead); });
  }
  static void axpy(WeightType type, int64_t T, int64_t n, const int32_t* rows, const float* h, int64_t ldh, int64_t N,
                   const std::byte* W, int64_t row_bytes, float* y, int64_t ldy, const RowsAhead& ahead) {
    auto body = [&]<class Rows>(Rows) { rows_axpy<VS, Rows>(T, n, rows, h, ldh, N, W, row_bytes, y, ldy, ahead); };
    if (type == WeightType::q8_0)
      body(Q8_0Rows<VS, Q8>{});
    else
      by_element_type(type, body);
  }
};

}  // namespace ffn::kernels::sparse_rows
