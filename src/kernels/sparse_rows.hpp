// The two loops of activation-sparse decode (contracts: kernels.hpp, rows_dot and
// rows_axpy), written once over a level's vector traits VS (vec_<level>.hpp's store traits:
// load, load_tail, fmadd, add, store, store_tail, reduce) and its loaders of weights
// (Elem, load, load_tail: f32 as it is, f16 and bf16 widened exactly in registers).
//
// Both read a listed subset of a matrix's rows, each row stored contiguously (up's rows, and
// down transposed: a row per hidden channel), so a skipped hidden channel is bytes never
// read. Rows are visited in the list's order; while one is read, the row two places on in
// the list (rows_dot) or eight on (rows_axpy: two groups of four) is prefetched at the same
// offset, one prefetch a cache line, so that a jump to the next listed row finds it on its
// way — the hardware prefetcher follows a row but cannot guess the next.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "ffn/weight_type.hpp"

namespace ffn::kernels::sparse_rows {

inline constexpr int64_t kLine = 64;

// Prefetches the cache lines of bytes [b0, b1) of `row` (nullptr: none).
inline void prefetch_span(const char* row, int64_t b0, int64_t b1) {
  if (!row) return;
  for (int64_t b = b0 / kLine * kLine; b < b1; b += kLine) __builtin_prefetch(row + b, 0, 3);
}

template <class VS>
struct LoadF32 {
  using Elem = float;
  static typename VS::Vec load(const float* p) { return VS::load(p); }
  static typename VS::Vec load_tail(const float* p, int64_t count) { return VS::load_tail(p, count); }
};

// out[t·ldo + i] = Σ_k x[t·ldx + k]·W[rows[i]][k]: per (t, i) four chains of VS::lanes lanes
// over k (k in steps of 4 vectors, then single vectors into chain 0, the tail masked into
// chain 1), summed (0 + 1) + (2 + 3) and reduced in VS's fixed order — the same for any list,
// any T and any split of either.
template <class VS, class Load>
void rows_dot(int64_t T, int64_t n, const int32_t* rows, int64_t K, const float* x, int64_t ldx, const std::byte* W,
              int64_t row_bytes, float* out, int64_t ldo) {
  using E = typename Load::Elem;
  using Vec = typename VS::Vec;
  constexpr int64_t L = VS::lanes;
  for (int64_t i = 0; i < n; ++i) {
    const E* w = reinterpret_cast<const E*>(W + int64_t(rows[i]) * row_bytes);
    const char* ahead = i + 2 < n ? reinterpret_cast<const char*>(W + int64_t(rows[i + 2]) * row_bytes) : nullptr;
    for (int64_t t = 0; t < T; ++t) {
      const float* xt = x + t * ldx;
      const char* pf = t == 0 ? ahead : nullptr;
      Vec a0 = VS::zero(), a1 = VS::zero(), a2 = VS::zero(), a3 = VS::zero();
      int64_t k = 0;
      for (; k + 4 * L <= K; k += 4 * L) {
        prefetch_span(pf, k * int64_t(sizeof(E)), (k + 4 * L) * int64_t(sizeof(E)));
        a0 = VS::fmadd(VS::load(xt + k), Load::load(w + k), a0);
        a1 = VS::fmadd(VS::load(xt + k + L), Load::load(w + k + L), a1);
        a2 = VS::fmadd(VS::load(xt + k + 2 * L), Load::load(w + k + 2 * L), a2);
        a3 = VS::fmadd(VS::load(xt + k + 3 * L), Load::load(w + k + 3 * L), a3);
      }
      prefetch_span(pf, k * int64_t(sizeof(E)), K * int64_t(sizeof(E)));
      for (; k + L <= K; k += L) a0 = VS::fmadd(VS::load(xt + k), Load::load(w + k), a0);
      if (k < K) a1 = VS::fmadd(VS::load_tail(xt + k, K - k), Load::load_tail(w + k, K - k), a1);
      out[t * ldo + i] = VS::reduce(VS::add(VS::add(a0, a1), VS::add(a2, a3)));
    }
  }
}

// y[t·ldy + c] ← fma(h[t·ldh + i], W[rows[i]][c], y[t·ldy + c]) for i = 0 … n − 1 in order,
// c < N, t < T: one rounding a step, rows four at a time (y loaded and stored once a group).
template <class VS, class Load>
void rows_axpy(int64_t T, int64_t n, const int32_t* rows, const float* h, int64_t ldh, int64_t N, const std::byte* W,
               int64_t row_bytes, float* y, int64_t ldy) {
  using E = typename Load::Elem;
  using Vec = typename VS::Vec;
  constexpr int64_t L = VS::lanes;
  constexpr int64_t kGroup = 4, kAheadRows = 2 * kGroup;
  auto row = [&](int64_t i) { return reinterpret_cast<const E*>(W + int64_t(rows[i]) * row_bytes); };
  int64_t i = 0;
  for (; i + kGroup <= n; i += kGroup) {
    const E* w[kGroup] = {row(i), row(i + 1), row(i + 2), row(i + 3)};
    const char* pf[kGroup] = {};
    for (int64_t j = 0; j < kGroup; ++j)
      if (i + kAheadRows + j < n) pf[j] = reinterpret_cast<const char*>(row(i + kAheadRows + j));
    for (int64_t t = 0; t < T; ++t) {
      const float* ht = h + t * ldh + i;
      const Vec h0 = VS::broadcast(ht[0]), h1 = VS::broadcast(ht[1]), h2 = VS::broadcast(ht[2]),
                h3 = VS::broadcast(ht[3]);
      float* yt = y + t * ldy;
      int64_t c = 0;
      for (; c + L <= N; c += L) {
        if (t == 0)
          for (const char* p : pf) prefetch_span(p, c * int64_t(sizeof(E)), (c + L) * int64_t(sizeof(E)));
        Vec acc = VS::load(yt + c);
        acc = VS::fmadd(h0, Load::load(w[0] + c), acc);
        acc = VS::fmadd(h1, Load::load(w[1] + c), acc);
        acc = VS::fmadd(h2, Load::load(w[2] + c), acc);
        acc = VS::fmadd(h3, Load::load(w[3] + c), acc);
        VS::store(yt + c, acc);
      }
      if (c < N) {
        const int64_t r = N - c;
        Vec acc = VS::load_tail(yt + c, r);
        acc = VS::fmadd(h0, Load::load_tail(w[0] + c, r), acc);
        acc = VS::fmadd(h1, Load::load_tail(w[1] + c, r), acc);
        acc = VS::fmadd(h2, Load::load_tail(w[2] + c, r), acc);
        acc = VS::fmadd(h3, Load::load_tail(w[3] + c, r), acc);
        VS::store_tail(yt + c, acc, r);
      }
    }
  }
  for (; i < n; ++i) {
    const E* w = row(i);
    for (int64_t t = 0; t < T; ++t) {
      const Vec hv = VS::broadcast(h[t * ldh + i]);
      float* yt = y + t * ldy;
      int64_t c = 0;
      for (; c + L <= N; c += L) VS::store(yt + c, VS::fmadd(hv, Load::load(w + c), VS::load(yt + c)));
      if (c < N) VS::store_tail(yt + c, VS::fmadd(hv, Load::load_tail(w + c, N - c), VS::load_tail(yt + c, N - c)), N - c);
    }
  }
}

// The kernels.hpp entries of a level: the loops above for the weight's type (f32, f16 or
// bf16; the caller never passes another).
template <class VS, class LoadF16, class LoadBf16>
struct Entries {
  static void dot(WeightType type, int64_t T, int64_t n, const int32_t* rows, int64_t K, const float* x, int64_t ldx,
                  const std::byte* W, int64_t row_bytes, float* out, int64_t ldo) {
    if (type == WeightType::f16)
      rows_dot<VS, LoadF16>(T, n, rows, K, x, ldx, W, row_bytes, out, ldo);
    else if (type == WeightType::bf16)
      rows_dot<VS, LoadBf16>(T, n, rows, K, x, ldx, W, row_bytes, out, ldo);
    else
      rows_dot<VS, LoadF32<VS>>(T, n, rows, K, x, ldx, W, row_bytes, out, ldo);
  }
  static void axpy(WeightType type, int64_t T, int64_t n, const int32_t* rows, const float* h, int64_t ldh, int64_t N,
                   const std::byte* W, int64_t row_bytes, float* y, int64_t ldy) {
    if (type == WeightType::f16)
      rows_axpy<VS, LoadF16>(T, n, rows, h, ldh, N, W, row_bytes, y, ldy);
    else if (type == WeightType::bf16)
      rows_axpy<VS, LoadBf16>(T, n, rows, h, ldh, N, W, row_bytes, y, ldy);
    else
      rows_axpy<VS, LoadF32<VS>>(T, n, rows, h, ldh, N, W, row_bytes, y, ldy);
  }
};

}  // namespace ffn::kernels::sparse_rows
