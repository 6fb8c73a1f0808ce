// The portable half of the f32 GEMM kernels (C = A·Bᵀ, contract in kernels.hpp): register
// tiles and the loops over them, written once over a vector-traits type. Each ISA file
// supplies only its traits — vector type, loads (masked for the K tail), FMA and a fixed
// lane reduction — and instantiates f32_gemm_nt_tiled in its own translation unit, compiled
// with that ISA's flags.
//
// Determinism: lane j of an accumulator holds the products with k ≡ j (mod lanes), the
// tail is a masked load into the same lanes, and every element is reduced by the same
// shuffle tree; edge tiles instantiate fewer rows of the same code. So an element's value
// never depends on T, N or where it falls in a tile.
//
// Traits interface:
//   using Vec;  static constexpr int64_t lanes;
//   Vec zero(); Vec load(const float*); Vec load_tail(const float*, int64_t count);
//   Vec fmadd(Vec a, Vec b, Vec acc);  float reduce(Vec);
// The weight operand B is read through a loader L (f32 rows through the traits' own loads;
// a loader that widened 16-bit rows in registers would reuse the tiles):
//   using Elem;  Vec load(const Elem*);  Vec load_tail(const Elem*, int64_t count);
#pragma once

#include <cstdint>
#include <utility>

namespace ffn::kernels {

template <class V>
struct LoadF32 {
  using Elem = float;
  static typename V::Vec load(const float* p) { return V::load(p); }
  static typename V::Vec load_tail(const float* p, int64_t count) { return V::load_tail(p, count); }
};

// MT activation rows × NT weight rows, MT·NT accumulators over the whole of K.
template <class V, int MT, int NT, class L = LoadF32<V>>
inline void f32_tile(int64_t K, const float* A, int64_t lda, const typename L::Elem* B, int64_t ldb, float* C,
                     int64_t ldc) {
  typename V::Vec acc[MT][NT];
  for (int i = 0; i < MT; ++i)
    for (int j = 0; j < NT; ++j) acc[i][j] = V::zero();
  int64_t k = 0;
  for (; k + V::lanes <= K; k += V::lanes) {
    typename V::Vec b[NT];
    for (int j = 0; j < NT; ++j) b[j] = L::load(B + j * ldb + k);
    for (int i = 0; i < MT; ++i) {
      const auto a = V::load(A + i * lda + k);
      for (int j = 0; j < NT; ++j) acc[i][j] = V::fmadd(a, b[j], acc[i][j]);
    }
  }
  if (k < K) {
    typename V::Vec b[NT];
    for (int j = 0; j < NT; ++j) b[j] = L::load_tail(B + j * ldb + k, K - k);
    for (int i = 0; i < MT; ++i) {
      const auto a = V::load_tail(A + i * lda + k, K - k);
      for (int j = 0; j < NT; ++j) acc[i][j] = V::fmadd(a, b[j], acc[i][j]);
    }
  }
  for (int i = 0; i < MT; ++i)
    for (int j = 0; j < NT; ++j) C[i * ldc + j] = V::reduce(acc[i][j]);
}

// One strip of MT activation rows across N weight rows: full NR-wide tiles, then the
// remainder (1 … NR-1 rows) with a narrower instantiation.
template <class V, int MT, int NR, class L = LoadF32<V>>
inline void f32_strip(int64_t N, int64_t K, const float* A, int64_t lda, const typename L::Elem* B, int64_t ldb,
                      float* C, int64_t ldc) {
  int64_t n = 0;
  for (; n + NR <= N; n += NR) f32_tile<V, MT, NR, L>(K, A, lda, B + n * ldb, ldb, C + n, ldc);
  if (n < N) {
    if constexpr (NR > 1) {
      const int64_t rest = N - n;  // 1 … NR-1: call the tile instantiated for exactly `rest` rows
      [&]<int... R>(std::integer_sequence<int, R...>) {
        ((rest == R + 1 ? f32_tile<V, MT, R + 1, L>(K, A, lda, B + n * ldb, ldb, C + n, ldc) : void()), ...);
      }
      (std::make_integer_sequence<int, NR - 1>{});
    }
  }
}

// The whole product. Weight rows in panels of `Panel` outer, activation strips inner, so a
// panel (Panel × K floats) stays in cache while every strip of tokens passes over it.
template <class V, int MR, int NR, int64_t Panel, class L = LoadF32<V>>
void f32_gemm_nt_tiled(int64_t T, int64_t N, int64_t K, const float* A, int64_t lda, const typename L::Elem* B,
                       int64_t ldb, float* C, int64_t ldc) {
  for (int64_t n0 = 0; n0 < N; n0 += Panel) {
    const int64_t nb = N - n0 < Panel ? N - n0 : Panel;
    const auto* Bp = B + n0 * ldb;
    int64_t t = 0;
    for (; t + MR <= T; t += MR) f32_strip<V, MR, NR, L>(nb, K, A + t * lda, lda, Bp, ldb, C + t * ldc + n0, ldc);
    if (t < T) {
      const int64_t rest = T - t;  // 1 … MR-1: the strip instantiated for exactly `rest` rows
      [&]<int... R>(std::integer_sequence<int, R...>) {
        ((rest == R + 1 ? f32_strip<V, R + 1, NR, L>(nb, K, A + t * lda, lda, Bp, ldb, C + t * ldc + n0, ldc) : void()),
         ...);
      }
      (std::make_integer_sequence<int, MR - 1>{});
    }
  }
}

}  // namespace ffn::kernels
