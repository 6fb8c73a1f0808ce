// The portable half of the f32 GEMM kernels of backward, whose B operand is read along its
// rows (contracts in kernels.hpp):
//   NN  C = A·B     A [T][K], B [K][N]   dH = dY·W_down, dX = dU·W_up (+ dG·W_gate)
//   TN  C += Aᵀ·B   A [K][M], B [K][N]   dW_down += dYᵀ·H, dW_up += dUᵀ·X (K = tokens)
// The register tile is an outer product: MR values of A broadcast against NV vectors of one
// row of B, so lane l of accumulator (i, v) is the element C[i][v·lanes + l] itself and no
// lane reduction is needed (unlike f32_gemm_nt_tiles.hpp). One tile serves both products:
// A is read through two strides, A(i, k) = A[i·a_row + k·a_k] — (lda, 1) for NN, (1, lda)
// for TN. Each ISA file supplies only its traits and instantiates the drivers below in its
// own translation unit, compiled with that ISA's flags.
//
// Determinism: element C[i][n] is the chain acc ← fma(A(i,k), B[k][n], acc) over k in
// order; edge tiles instantiate fewer rows or vectors of the same code and mask the last
// vector. So a value never depends on M, N or where the element falls in a tile, and — for
// NN, whose chain resumes from C between K blocks — not on how K is blocked either.
//
// Traits interface (that of f32_gemm_nt_tiles.hpp without reduce, plus):
//   Vec broadcast(float); Vec add(Vec, Vec);
//   void store(float*, Vec); void store_tail(float*, Vec, int64_t count);
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>

namespace ffn::kernels {

// How a tile meets the C already in memory.
enum class TileMode {
  write,   // C = chain from 0
  resume,  // C = chain from C's value (consecutive K blocks through C form one chain)
  add,     // C = C + chain from 0 (one rounding: adding the same sum twice doubles exactly)
};

// MR rows × NV vectors of C over k < K. The last vector has `last` valid lanes (1 … lanes);
// with MaskedB, B's last vector is loaded masked too (B not padded to whole vectors).
template <class V, int MR, int NV, TileMode Mode, bool MaskedB>
inline void nn_tn_tile(int64_t K, const float* A, int64_t a_row, int64_t a_k, const float* B, int64_t ldb, float* C,
                       int64_t ldc, int64_t last) {
  using Vec = typename V::Vec;
  const bool partial = last < V::lanes;
  auto load_c = [&](int i, int v) {
    const float* p = C + i * ldc + v * V::lanes;
    return v == NV - 1 && partial ? V::load_tail(p, last) : V::load(p);
  };
  Vec acc[MR][NV];
  for (int i = 0; i < MR; ++i)
    for (int v = 0; v < NV; ++v) acc[i][v] = Mode == TileMode::resume ? load_c(i, v) : V::zero();
  for (int64_t k = 0; k < K; ++k) {
    const float* b_row = B + k * ldb;
    Vec b[NV];
    for (int v = 0; v < NV; ++v)
      b[v] = MaskedB && v == NV - 1 ? V::load_tail(b_row + v * V::lanes, last) : V::load(b_row + v * V::lanes);
    const float* a_col = A + k * a_k;
    for (int i = 0; i < MR; ++i) {
      const Vec a = V::broadcast(a_col[i * a_row]);
      for (int v = 0; v < NV; ++v) acc[i][v] = V::fmadd(a, b[v], acc[i][v]);
    }
  }
  for (int i = 0; i < MR; ++i)
    for (int v = 0; v < NV; ++v) {
      const Vec out = Mode == TileMode::add ? V::add(load_c(i, v), acc[i][v]) : acc[i][v];
      float* p = C + i * ldc + v * V::lanes;
      if (v == NV - 1 && partial)
        V::store_tail(p, out, last);
      else
        V::store(p, out);
    }
}

// Calls f.template operator()<R>() with R = r, for r in 1 … Max (compile-time dispatch of
// an edge count).
template <int Max, class F>
inline void with_count(int64_t r, F&& f) {
  [&]<int... R>(std::integer_sequence<int, R...>) { ((r == R + 1 ? f.template operator()<R + 1>() : void()), ...); }
  (std::make_integer_sequence<int, Max>{});
}

// One panel of at most NV·lanes columns of C, for rows [0, M): full MR-row strips, then
// the remaining rows. The panel's vector count and last-vector lanes are fixed here.
template <class V, int MR, int NV, TileMode Mode, bool MaskedB>
inline void nn_tn_panel(int64_t M, int64_t nr, int64_t K, const float* A, int64_t a_row, int64_t a_k, const float* B,
                        int64_t ldb, float* C, int64_t ldc) {
  with_count<NV>((nr + V::lanes - 1) / V::lanes, [&]<int NVr>() {
    const int64_t last = nr - (NVr - 1) * V::lanes;
    int64_t i = 0;
    for (; i + MR <= M; i += MR)
      nn_tn_tile<V, MR, NVr, Mode, MaskedB>(K, A + i * a_row, a_row, a_k, B, ldb, C + i * ldc, ldc, last);
    if (i < M)
      with_count<MR - 1>(M - i, [&]<int R>() {
        nn_tn_tile<V, R, NVr, Mode, MaskedB>(K, A + i * a_row, a_row, a_k, B, ldb, C + i * ldc, ldc, last);
      });
  });
}

// NN: C[t][n] = (accumulate ? C[t][n] : 0) + Σ_k A[t][k]·B[k][n], as one chain per element.
// B is copied, KC rows × one panel at a time, into a contiguous zero-padded buffer that every
// strip of MR rows then reads: the weight's rows lie a whole row (often a power of two of
// bytes) apart, which would put the panel's rows into a handful of cache sets and a new
// page each. The chain resumes from C between K blocks, so blocking changes no bit.
template <class V, int MR, int NV, int64_t KC>
void f32_gemm_nn_tiled(int64_t T, int64_t N, int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb,
                       float* C, int64_t ldc, bool accumulate) {
  constexpr int64_t NR = NV * V::lanes;
  alignas(64) float packed[KC * NR];
  for (int64_t n0 = 0; n0 < N; n0 += NR) {
    const int64_t nr = std::min(NR, N - n0);
    // K = 0 still visits one (empty) block, so that `write` zeroes C.
    for (int64_t k0 = 0; k0 < K || (k0 == 0 && !accumulate); k0 += KC) {
      const int64_t kc = std::min(KC, K - k0);
      for (int64_t k = 0; k < kc; ++k) {
        const float* src = B + (k0 + k) * ldb + n0;
        float* dst = packed + k * NR;
        std::copy(src, src + nr, dst);
        std::fill(dst + nr, dst + NR, 0.0f);
      }
      const float* a = A + k0;
      float* c = C + n0;
      if (k0 == 0 && !accumulate)
        nn_tn_panel<V, MR, NV, TileMode::write, false>(T, nr, kc, a, lda, 1, packed, NR, c, ldc);
      else
        nn_tn_panel<V, MR, NV, TileMode::resume, false>(T, nr, kc, a, lda, 1, packed, NR, c, ldc);
    }
  }
}

// TN: C[m][n] += Σ_k A[k][m]·B[k][n], each sum a chain from 0 over the whole of K held in
// registers, then added to C once. K is the token count; one panel of B (K × NV·lanes) is
// reused by every strip of MR columns of A.
template <class V, int MR, int NV>
void f32_gemm_tn_add_tiled(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb,
                           float* C, int64_t ldc) {
  constexpr int64_t NR = NV * V::lanes;
  for (int64_t n0 = 0; n0 < N; n0 += NR)
    nn_tn_panel<V, MR, NV, TileMode::add, true>(M, std::min(NR, N - n0), K, A, 1, lda, B + n0, ldb, C + n0, ldc);
}

}  // namespace ffn::kernels
