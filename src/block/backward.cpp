// Backward of a block: three threaded stages, every product through the panel kernel
// (kernels::f32_panel_gemm: C = A·P, P a [K][64] panel), whose operands are laid out here
// per call — a copy of O(T·D) or O(64·K) per stage against the products' O(T·D·H), and in
// exchange every operand streams contiguously (strided rows cost a TLB miss and a demand
// cache miss per k: the old NN/TN kernels read x and dy that way and ran at 0.3 of the
// FMA roof).
//   stage 0 (shared, split across threads):  dyᵀ [D][T];  x in panels [D/64][T][64].
//   stage 1 (hidden units split across threads, 64 at a time; per chunk):
//     g, u  from the cache, or recomputed into [T][64] tiles exactly as forward made them
//     dh    = dy·W_down[:, chunk]          A = dy,          P = W_down's columns copied
//     h, du, dg from g, u, dh              activation backward (h: [T][64] tile;
//                                          du, dg: columns of one [T][2H] buffer dz)
//     dW_down[:, chunk] += dyᵀ·h           A = dyᵀ,         P = the h tile itself
//     dW_up[chunk], dW_gate[chunk] += [du dg]ᵀ·x
//                                          A = du and dg's chunk transposed [128][T],
//                                          P = each panel of x
//     db_up[chunk], db_gate[chunk] += column sums of du, dg
//   stage 2 (model columns split across threads, 64 at a time):
//     dx[:, cols] = [du dg]·[W_up; W_gate][:, cols]   one chain over 2H
//     db_down[cols] += column sums of dy
// The kernel's chains run over k in order from 0; a weight gradient's sum over tokens is
// formed whole in a scratch tile and then added once. A gradient element belongs to exactly
// one thread (the one owning its hidden unit in stage 1, its model column in stage 2), so
// results are bit-identical for any thread count.
// Scratch: dz [T][2H] (what forward's h costs, twice), dyᵀ and x's panels [T][D] each, and
// per thread tiles of [T][64], [D][64], [128][T] and [2H][64].
#include <algorithm>
#include <string>

#include "block/bias_rows.hpp"
#include "block/gate_sparsity_checks.hpp"
#include "block/panels.hpp"
#include "block/view_checks.hpp"
#include "ffn/backward.hpp"
#include "kernels/kernels.hpp"
#include "parallel/scratch.hpp"

namespace ffn {
namespace {

constexpr int64_t kHiddenChunk = 64;  // hidden units per step of a thread
constexpr int64_t kSplitAlign = 16;   // thread ranges start on multiples of 16 rows
constexpr int64_t kSumBlock = 64;     // columns summed at a time by add_column_sums

// db[j] += Σ_t v[t][j] for j < n, each sum formed from 0 in token order and then added
// once (the accumulation contract of backward).
void add_column_sums(const float* v, int64_t ld, int64_t T, int64_t n, float* db) {
  for (int64_t j0 = 0; j0 < n; j0 += kSumBlock) {
    const int64_t nb = std::min(kSumBlock, n - j0);
    float sum[kSumBlock] = {};
    for (int64_t t = 0; t < T; ++t)
      for (int64_t j = 0; j < nb; ++j) sum[j] += v[t * ld + j0 + j];
    for (int64_t j = 0; j < nb; ++j) db[j0 + j] += sum[j];
  }
}

std::string shape_text(int64_t rows, int64_t cols) { return std::to_string(rows) + "×" + std::to_string(cols); }

void check_like(const char* name, const Matrix& grad, const Matrix& weight) {
  if (grad.rows() != weight.rows() || grad.cols() != weight.cols())
    throw Error(std::string("gradient ") + name + " is " + shape_text(grad.rows(), grad.cols()) +
                "; the block's " + name + " is " + shape_text(weight.rows(), weight.cols()));
}

void check_cache(const ForwardCache& cache, const BlockConfig& c, int64_t T) {
  if (cache.tokens != T)
    throw Error("the forward cache holds " + std::to_string(cache.tokens) + " tokens but x has " +
                std::to_string(T) + " rows");
  if (cache.recompute) return;
  auto check = [&](const char* name, const Matrix& m, bool wanted) {
    const int64_t rows = wanted ? T : 0, cols = wanted ? c.hidden : 0;
    if (m.rows() != rows || m.cols() != cols)
      throw Error(std::string("the forward cache's ") + name + " pre-activations are " +
                  shape_text(m.rows(), m.cols()) + "; expected " + shape_text(rows, cols));
  };
  check("up", cache.up, true);
  check("gate", cache.gate, c.variant.gated);
}

}  // namespace

BlockGradients zero_gradients(const BlockConfig& config) {
  validate(config);
  const int64_t D = config.d_model, H = config.hidden;
  const bool gated = config.variant.gated, bias = config.bias;
  BlockGradients g;
  if (gated) g.gate = Matrix(H, D);
  g.up = Matrix(H, D);
  g.down = Matrix(D, H);
  if (bias && gated) g.gate_bias = Matrix(1, H);
  if (bias) g.up_bias = Matrix(1, H);
  if (bias) g.down_bias = Matrix(1, D);
  return g;
}

int64_t saved_bytes_per_token(const BlockConfig& config, bool recompute) {
  const int64_t kept = recompute ? 0 : (config.variant.gated ? 2 : 1) * config.hidden;
  return (config.d_model + kept) * static_cast<int64_t>(sizeof(float));
}

void backward(const Block& block, ConstMatrixView x, const ForwardCache& cache, ConstMatrixView dy, MatrixView dx,
              BlockGradients& grads, ThreadPool* pool) {
  const auto& c = block.config();
  const auto& w = block.weights();
  refuse_gate_sparsity(c, "backward", "training runs the plain gated block only (forward_train, backward and Block::forward have no top-k)");
  const int64_t D = c.d_model, H = c.hidden;
  views::check_view("input x", x, D);
  views::check_view("gradient dy", dy, D);
  views::check_same_rows("input x", x, "gradient dy", dy);
  const bool want_dx = dx.data != nullptr;
  if (want_dx) {
    views::check_view("gradient dx", dx, D);
    views::check_same_rows("input x", x, "gradient dx", dx);
    if (views::overlap(dx, x)) throw Error("gradient dx overlaps input x");
    if (views::overlap(dx, dy)) throw Error("gradient dx overlaps gradient dy");
  }
  check_cache(cache, c, x.rows);
  check_like("gate", grads.gate, w.gate);
  check_like("up", grads.up, w.up);
  check_like("down", grads.down, w.down);
  check_like("gate_bias", grads.gate_bias, w.gate_bias);
  check_like("up_bias", grads.up_bias, w.up_bias);
  check_like("down_bias", grads.down_bias, w.down_bias);
  const int64_t T = x.rows;
  if (T == 0) return;

  ThreadPool& p = pool ? *pool : default_thread_pool();
  const auto& k = kernels::active_kernels();
  const kernels::F32GemmNt gemm_nt = kernels::forward_gemm(k, T);
  const Activation act = c.variant.activation;
  const bool gated = c.variant.gated, recompute = cache.recompute;
  using panels::kW;
  // dz = [du dg]: du in columns [0, H), dg in [H, 2H) (du holds dz for 2-matrix blocks).
  const int64_t ldz = gated ? 2 * H : H, x_panels = (D + kW - 1) / kW;
  const MatrixView dz = scratch_matrix(Scratch::hidden_grads, T, ldz);
  const MatrixView dy_t = scratch_matrix(Scratch::dy_transposed, D, T);
  float* const x_panel = scratch_matrix(Scratch::x_panels, x_panels * T, kW).data;

  p.run([&](int ith, int nth) {
    const auto [d0, d1] = split_range(D, ith, nth, kW);
    for (int64_t b = d0; b < d1; b += kW)
      panels::copy_columns(x.data + b, x.stride, T, std::min(kW, D - b), x_panel + b / kW * T * kW);
    panels::transpose(dy.data + d0, dy.stride, T, d1 - d0, dy_t.row(d0), T);
  });

  p.run([&](int ith, int nth) {
    const auto [h0, h1] = split_range(H, ith, nth, kSplitAlign);
    if (h1 <= h0) return;
    const int64_t mats = gated ? 2 : 1;
    const MatrixView dh = scratch_matrix(Scratch::tile, T, kW), h = scratch_matrix(Scratch::tile2, T, kW);
    const MatrixView down_cols = scratch_matrix(Scratch::tile3, D, kW);
    const MatrixView dz_t = scratch_matrix(Scratch::tile4, mats * kW, T);
    const MatrixView s_down = scratch_matrix(Scratch::tile5, D, kW), s_in = scratch_matrix(Scratch::tile6, mats * kW, kW);
    const MatrixView u_tile = scratch_matrix(Scratch::tile7, recompute ? T : 0, kHiddenChunk);
    const MatrixView g_tile = scratch_matrix(Scratch::tile8, recompute && gated ? T : 0, kHiddenChunk);
    for (int64_t c0 = h0; c0 < h1; c0 += kHiddenChunk) {
      const int64_t nb = std::min(kHiddenChunk, h1 - c0);
      const float *u = nullptr, *g = nullptr;
      int64_t ld = H;
      if (recompute) {  // as forward_train computes them, so with the cached values' bits
        gemm_nt(T, nb, D, x.data, x.stride, w.up.row(c0), D, u_tile.data, kHiddenChunk);
        if (c.bias) add_bias_rows(u_tile.data, kHiddenChunk, T, w.up_bias.data() + c0, nb);
        if (gated) {
          gemm_nt(T, nb, D, x.data, x.stride, w.gate.row(c0), D, g_tile.data, kHiddenChunk);
          if (c.bias) add_bias_rows(g_tile.data, kHiddenChunk, T, w.gate_bias.data() + c0, nb);
        }
        u = u_tile.data;
        g = g_tile.data;
        ld = kHiddenChunk;
      } else {
        u = cache.up.data() + c0;
        g = gated ? cache.gate.data() + c0 : nullptr;
      }
      panels::copy_columns(w.down.data() + c0, H, D, nb, down_cols.data);
      k.f32_panel_gemm(T, D, dy.data, dy.stride, down_cols.data, dh.data, kW);
      for (int64_t t = 0; t < T; ++t) {
        float* du = dz.row(t) + c0;
        if (gated)
          kernels::f32_gated_activation_backward(act, g + t * ld, u + t * ld, dh.row(t), h.row(t), du, du + H, nb);
        else
          kernels::f32_activation_backward(act, u + t * ld, dh.row(t), h.row(t), du, nb);
      }
      // dW_down[:, chunk] += dyᵀ·h (h's columns past nb hold stale values; their sums are dropped).
      k.f32_panel_gemm(D, T, dy_t.data, T, h.data, s_down.data, kW);
      for (int64_t d = 0; d < D; ++d)
        for (int64_t j = 0; j < nb; ++j) grads.down.row(d)[c0 + j] += s_down.row(d)[j];
      // [dW_up; dW_gate][chunk] += [du dg]ᵀ·x, one panel of x (64 model columns) at a time.
      panels::transpose(dz.data + c0, ldz, T, nb, dz_t.data, T);
      if (gated) panels::transpose(dz.data + H + c0, ldz, T, nb, dz_t.row(nb), T);
      for (int64_t b = 0; b < x_panels; ++b) {
        k.f32_panel_gemm(mats * nb, T, dz_t.data, T, x_panel + b * T * kW, s_in.data, kW);
        const int64_t cols = std::min(kW, D - b * kW);
        for (int64_t m = 0; m < mats * nb; ++m) {
          float* dw = (m < nb ? grads.up.row(c0 + m) : grads.gate.row(c0 + m - nb)) + b * kW;
          for (int64_t j = 0; j < cols; ++j) dw[j] += s_in.row(m)[j];
        }
      }
      if (c.bias) {
        add_column_sums(dz.data + c0, ldz, T, nb, grads.up_bias.data() + c0);
        if (gated) add_column_sums(dz.data + H + c0, ldz, T, nb, grads.gate_bias.data() + c0);
      }
    }
  });

  p.run([&](int ith, int nth) {
    const auto [d0, d1] = split_range(D, ith, nth, kW);
    if (d1 <= d0) return;
    if (want_dx) {
      // [W_up; W_gate][:, cols]: one panel of 2H rows, so each dx element is one chain.
      const MatrixView in_cols = scratch_matrix(Scratch::tile3, ldz, kW), dx_tile = scratch_matrix(Scratch::tile, T, kW);
      for (int64_t b = d0; b < d1; b += kW) {
        const int64_t cols = std::min(kW, D - b);
        panels::copy_columns(w.up.data() + b, D, H, cols, in_cols.data);
        if (gated) panels::copy_columns(w.gate.data() + b, D, H, cols, in_cols.row(H));
        k.f32_panel_gemm(T, ldz, dz.data, ldz, in_cols.data, dx_tile.data, kW);
        for (int64_t t = 0; t < T; ++t) std::copy(dx_tile.row(t), dx_tile.row(t) + cols, dx.row(t) + b);
      }
    }
    if (c.bias) add_column_sums(dy.data + d0, dy.stride, T, d1 - d0, grads.down_bias.data() + d0);
  });
}

}  // namespace ffn
