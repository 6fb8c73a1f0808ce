// The two loops of activation-sparse decode (contracts: kernels.hpp, rows_dot and
// rows_axpy), written once over a level's vector traits VS (vec_<level>.hpp's store traits:
// load, load_tail, fmadd, add, store, store_tail, reduce) and its loaders of weights
// (Elem, load, load_tail: f32 as it is, f16 and bf16 widened exactly in registers).
//
// Both read a listed subset of a matrix's rows, each row stored contiguously (up's rows, and
// down transposed: a row per hidden channel), so a skipped hidden channel is bytes never
// read. They read kRows listed rows at once, interleaved a vector of each in turn: scattered
// rows of a few KB read one after another stream at under half the bandwidth of one long
// run, while eight at once recover nearly all of it (docs/performance.md, "Sparse decode").
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "ffn/weight_type.hpp"

namespace ffn::kernels::sparse_rows {

// Rows read at once.
inline constexpr int64_t kRows = 8;

template <class VS>
struct LoadF32 {
  using Elem = float;
  static typename VS::Vec load(const float* p) { return VS::load(p); }
  static typename VS::Vec load_tail(const float* p, int64_t count) { return VS::load_tail(p, count); }
};

// out[t·ldo + i] = Σ_k x[t·ldx + k]·W[rows[i]][k]: per (t, i) one chain of VS::lanes lanes
// over k in steps of a vector (the tail masked into it), then reduced in VS's fixed order —
// the same bits for any list, any T and any split of either.
template <class VS, class Load, int64_t R>
void dot_rows(int64_t T, const int32_t* rows, int64_t K, const float* x, int64_t ldx, const std::byte* W,
              int64_t row_bytes, float* out, int64_t ldo) {
  using E = typename Load::Elem;
  using Vec = typename VS::Vec;
  constexpr int64_t L = VS::lanes;
  const E* w[R];
  for (int64_t r = 0; r < R; ++r) w[r] = reinterpret_cast<const E*>(W + int64_t(rows[r]) * row_bytes);
  for (int64_t t = 0; t < T; ++t) {
    const float* xt = x + t * ldx;
    Vec acc[R];
    for (int64_t r = 0; r < R; ++r) acc[r] = VS::zero();
    int64_t k = 0;
    for (; k + L <= K; k += L) {
      const Vec xv = VS::load(xt + k);
      for (int64_t r = 0; r < R; ++r) acc[r] = VS::fmadd(xv, Load::load(w[r] + k), acc[r]);
    }
    if (k < K) {
      const Vec xv = VS::load_tail(xt + k, K - k);
      for (int64_t r = 0; r < R; ++r) acc[r] = VS::fmadd(xv, Load::load_tail(w[r] + k, K - k), acc[r]);
    }
    for (int64_t r = 0; r < R; ++r) out[t * ldo + r] = VS::reduce(acc[r]);
  }
}

template <class VS, class Load>
void rows_dot(int64_t T, int64_t n, const int32_t* rows, int64_t K, const float* x, int64_t ldx, const std::byte* W,
              int64_t row_bytes, float* out, int64_t ldo) {
  int64_t i = 0;
  for (; i + kRows <= n; i += kRows) dot_rows<VS, Load, kRows>(T, rows + i, K, x, ldx, W, row_bytes, out + i, ldo);
  for (; i < n; ++i) dot_rows<VS, Load, 1>(T, rows + i, K, x, ldx, W, row_bytes, out + i, ldo);
}

// y[t·ldy + c] ← fma(h[t·ldh + i], W[rows[i]][c], y[t·ldy + c]) for listed rows i in order,
// c < N, t < T: one rounding a step, R rows a pass (y loaded and stored once a pass).
template <class VS, class Load, int64_t R>
void axpy_rows(int64_t T, const int32_t* rows, const float* h, int64_t ldh, int64_t N, const std::byte* W,
               int64_t row_bytes, float* y, int64_t ldy) {
  using E = typename Load::Elem;
  using Vec = typename VS::Vec;
  constexpr int64_t L = VS::lanes;
  const E* w[R];
  for (int64_t r = 0; r < R; ++r) w[r] = reinterpret_cast<const E*>(W + int64_t(rows[r]) * row_bytes);
  for (int64_t t = 0; t < T; ++t) {
    Vec hv[R];
    for (int64_t r = 0; r < R; ++r) hv[r] = VS::broadcast(h[t * ldh + r]);
    float* yt = y + t * ldy;
    int64_t c = 0;
    for (; c + L <= N; c += L) {
      Vec acc = VS::load(yt + c);
      for (int64_t r = 0; r < R; ++r) acc = VS::fmadd(hv[r], Load::load(w[r] + c), acc);
      VS::store(yt + c, acc);
    }
    if (c < N) {
      Vec acc = VS::load_tail(yt + c, N - c);
      for (int64_t r = 0; r < R; ++r) acc = VS::fmadd(hv[r], Load::load_tail(w[r] + c, N - c), acc);
      VS::store_tail(yt + c, acc, N - c);
    }
  }
}

template <class VS, class Load>
void rows_axpy(int64_t T, int64_t n, const int32_t* rows, const float* h, int64_t ldh, int64_t N, const std::byte* W,
               int64_t row_bytes, float* y, int64_t ldy) {
  int64_t i = 0;
  for (; i + kRows <= n; i += kRows) axpy_rows<VS, Load, kRows>(T, rows + i, h + i, ldh, N, W, row_bytes, y, ldy);
  for (; i < n; ++i) axpy_rows<VS, Load, 1>(T, rows + i, h + i, ldh, N, W, row_bytes, y, ldy);
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
