// The portable half of the integer kernels (q_gemm_nt, contract in kernels.hpp): register
// tiles of MT activation rows × NT weight rows and the loop over block pairs, written once
// over an ISA's traits, which supply how a pair of blocks is loaded and dotted:
//   using Acc;                         16 f32 lanes (one zmm, or two ymm)
//   Acc zero();  float reduce(Acc);    the contract's fixed 16-lane tree
//   template <WeightType, bool Half> W load_w(const Block* b);        blocks b[0], b[1]
//   template <bool Half> S load_dw(const Block* b);                   their scales, per lane
//   template <bool Half> X load_x(const int8_t* qs, const int32_t* corr);
//   template <bool Half> S load_dx(const float* d);
//   template <WeightType, bool Half> Acc madd(Acc, W, S dw, X, S dx);  acc ← fma(Σ, dw·dx, acc)
// Half: only the first block of the pair exists (the last of an odd count); nothing of the
// second is read and lanes 8–15 of the accumulator are left as they are.
//
// Determinism: each lane sum is an exact integer and each accumulator lane sees the same
// operations in the same order whatever T and N are; edge tiles instantiate fewer rows of
// the same code.
#pragma once

#include <cstdint>
#include <utility>

#include "ffn/accounting.hpp"
#include "kernels/kernels.hpp"

namespace ffn::kernels {

template <class Q, WeightType Type, class Block, int MT, int NT, bool Half>
inline void q_pair_step(int64_t p, int64_t K, const Q8Rows& A, const Block* B, int64_t ldb,
                        typename Q::Acc (&acc)[MT][NT]) {
  // The activations' pair and scales once per step, for all NT weight rows.
  decltype(Q::template load_x<Half>(A.qs, A.corr)) x[MT];
  decltype(Q::template load_dx<Half>(A.d)) dx[MT];
  for (int i = 0; i < MT; ++i) {
    x[i] = Q::template load_x<Half>(A.qs + i * K + 64 * p, A.corr + i * (K / 4) + 16 * p);
    dx[i] = Q::template load_dx<Half>(A.d + i * (K / 32) + 2 * p);
  }
  for (int j = 0; j < NT; ++j) {
    const Block* b = B + j * ldb + 2 * p;
    const auto w = Q::template load_w<Type, Half>(b);
    const auto dw = Q::template load_dw<Half>(b);
    for (int i = 0; i < MT; ++i) acc[i][j] = Q::template madd<Type, Half>(acc[i][j], w, dw, x[i], dx[i]);
  }
}

template <class Q, WeightType Type, class Block, int MT, int NT>
inline void q_tile(int64_t K, const Q8Rows& A, const Block* B, int64_t ldb, float* C, int64_t ldc) {
  typename Q::Acc acc[MT][NT];
  for (int i = 0; i < MT; ++i)
    for (int j = 0; j < NT; ++j) acc[i][j] = Q::zero();
  const int64_t blocks = K / 32, pairs = blocks / 2;
  for (int64_t p = 0; p < pairs; ++p) q_pair_step<Q, Type, Block, MT, NT, false>(p, K, A, B, ldb, acc);
  if (blocks % 2) q_pair_step<Q, Type, Block, MT, NT, true>(pairs, K, A, B, ldb, acc);
  for (int i = 0; i < MT; ++i)
    for (int j = 0; j < NT; ++j) C[i * ldc + j] = Q::reduce(acc[i][j]);
}

// MT activation rows across N weight rows: full NT-row tiles, then one narrower tile.
template <class Q, WeightType Type, class Block, int MT, int NT>
inline void q_strip(int64_t N, int64_t K, const Q8Rows& A, const Block* B, int64_t ldb, float* C, int64_t ldc) {
  int64_t n = 0;
  for (; n + NT <= N; n += NT) q_tile<Q, Type, Block, MT, NT>(K, A, B + n * ldb, ldb, C + n, ldc);
  if constexpr (NT > 1) {
    const int64_t rest = N - n;
    [&]<int... R>(std::integer_sequence<int, R...>) {
      ((rest == R + 1 ? q_tile<Q, Type, Block, MT, R + 1>(K, A, B + n * ldb, ldb, C + n, ldc) : void()), ...);
    }
    (std::make_integer_sequence<int, NT - 1>{});
  }
}

// The whole product: weight rows in panels of `Panel` (kept in cache while every strip
// of tokens passes over them), strips of MT tokens inside.
template <class Q, WeightType Type, class Block, int MT, int NT, int64_t Panel>
void q_gemm_nt_tiled(int64_t T, int64_t N, int64_t K, const Q8Rows& A, const Block* B, int64_t ldb, float* C,
                     int64_t ldc) {
  for (int64_t n0 = 0; n0 < N; n0 += Panel) {
    const int64_t nb = N - n0 < Panel ? N - n0 : Panel;
    const Block* Bp = B + n0 * ldb;
    auto rows = [&](int64_t t) { return Q8Rows{A.qs + t * K, A.d + t * (K / 32), A.corr + t * (K / 4)}; };
    int64_t t = 0;
    for (; t + MT <= T; t += MT) q_strip<Q, Type, Block, MT, NT>(nb, K, rows(t), Bp, ldb, C + t * ldc + n0, ldc);
    if constexpr (MT > 1) {
      const int64_t rest = T - t;
      [&]<int... R>(std::integer_sequence<int, R...>) {
        ((rest == R + 1 ? q_strip<Q, Type, Block, R + 1, NT>(nb, K, rows(t), Bp, ldb, C + t * ldc + n0, ldc) : void()),
         ...);
      }
      (std::make_integer_sequence<int, MT - 1>{});
    }
  }
}

}  // namespace ffn::kernels
