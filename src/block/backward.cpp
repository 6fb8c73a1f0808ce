// Backward of a block: two threaded stages over the active ISA's kernels.
//   stage 1 (hidden units split across threads, 64 at a time; per chunk):
//     g, u  from the cache, or recomputed into [T][64] tiles exactly as forward made them
//     dh    = dy·W_down[:, chunk]                      f32_gemm_nn       [T][64] tile
//     h, du, dg from g, u, dh                          activation backward (h: [T][64] tile;
//                                                      du, dg: columns of [T][H] buffers)
//     dW_down[:, chunk] += dyᵀ·h;  dW_up[chunk] += duᵀ·x;  dW_gate[chunk] += dgᵀ·x
//                                                      f32_gemm_tn_add
//     db_up[chunk], db_gate[chunk] += column sums of du, dg
//   stage 2 (model columns split across threads):
//     dx[:, cols] = du·W_up[:, cols] + dg·W_gate[:, cols]   f32_gemm_nn, one chain over 2H
//     db_down[cols] += column sums of dy
// A gradient element belongs to exactly one thread (the one owning its hidden unit in
// stage 1, its model column in stage 2), and every element is one fixed sequence of
// operations (the kernel contracts), so results are bit-identical for any thread count.
// Scratch: du and dg ([T][H], what forward's h costs) and per thread a few [T][64] tiles.
#include <algorithm>
#include <string>

#include "block/training_views.hpp"
#include "ffn/backward.hpp"
#include "kernels/kernels.hpp"

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
  const int64_t D = c.d_model, H = c.hidden;
  training::check_view("input x", x, D);
  training::check_view("gradient dy", dy, D);
  training::check_same_rows("input x", x, "gradient dy", dy);
  const bool want_dx = dx.data != nullptr;
  if (want_dx) {
    training::check_view("gradient dx", dx, D);
    training::check_same_rows("input x", x, "gradient dx", dx);
    if (training::overlap(dx, x)) throw Error("gradient dx overlaps input x");
    if (training::overlap(dx, dy)) throw Error("gradient dx overlaps gradient dy");
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
  Matrix du(T, H), dg(gated ? T : 0, H);  // du holds dz for 2-matrix blocks

  p.run([&](int ith, int nth) {
    const auto [h0, h1] = split_range(H, ith, nth, kSplitAlign);
    if (h1 <= h0) return;
    Matrix dh(T, kHiddenChunk), h(T, kHiddenChunk);
    Matrix u_tile(recompute ? T : 0, kHiddenChunk), g_tile(recompute && gated ? T : 0, kHiddenChunk);
    for (int64_t c0 = h0; c0 < h1; c0 += kHiddenChunk) {
      const int64_t nb = std::min(kHiddenChunk, h1 - c0);
      const float *u = nullptr, *g = nullptr;
      int64_t ld = H;
      if (recompute) {  // as forward_train computes them, so with the cached values' bits
        gemm_nt(T, nb, D, x.data, x.stride, w.up.row(c0), D, u_tile.data(), kHiddenChunk);
        if (c.bias) training::add_bias_rows(u_tile.data(), kHiddenChunk, T, w.up_bias.data() + c0, nb);
        if (gated) {
          gemm_nt(T, nb, D, x.data, x.stride, w.gate.row(c0), D, g_tile.data(), kHiddenChunk);
          if (c.bias) training::add_bias_rows(g_tile.data(), kHiddenChunk, T, w.gate_bias.data() + c0, nb);
        }
        u = u_tile.data();
        g = g_tile.data();
        ld = kHiddenChunk;
      } else {
        u = cache.up.data() + c0;
        g = gated ? cache.gate.data() + c0 : nullptr;
      }
      k.f32_gemm_nn(T, nb, D, dy.data, dy.stride, w.down.data() + c0, H, dh.data(), kHiddenChunk, false);
      for (int64_t t = 0; t < T; ++t) {
        if (gated)
          kernels::f32_gated_activation_backward(act, g + t * ld, u + t * ld, dh.row(t), h.row(t), du.row(t) + c0,
                                                 dg.row(t) + c0, nb);
        else
          kernels::f32_activation_backward(act, u + t * ld, dh.row(t), h.row(t), du.row(t) + c0, nb);
      }
      k.f32_gemm_tn_add(D, nb, T, dy.data, dy.stride, h.data(), kHiddenChunk, grads.down.data() + c0, H);
      k.f32_gemm_tn_add(nb, D, T, du.data() + c0, H, x.data, x.stride, grads.up.row(c0), D);
      if (gated) k.f32_gemm_tn_add(nb, D, T, dg.data() + c0, H, x.data, x.stride, grads.gate.row(c0), D);
      if (c.bias) {
        add_column_sums(du.data() + c0, H, T, nb, grads.up_bias.data() + c0);
        if (gated) add_column_sums(dg.data() + c0, H, T, nb, grads.gate_bias.data() + c0);
      }
    }
  });

  p.run([&](int ith, int nth) {
    const auto [d0, d1] = split_range(D, ith, nth, kSplitAlign);
    if (d1 <= d0) return;
    if (want_dx) {
      k.f32_gemm_nn(T, d1 - d0, H, du.data(), H, w.up.data() + d0, D, dx.data + d0, dx.stride, false);
      if (gated) k.f32_gemm_nn(T, d1 - d0, H, dg.data(), H, w.gate.data() + d0, D, dx.data + d0, dx.stride, true);
    }
    if (c.bias) add_column_sums(dy.data + d0, dy.stride, T, d1 - d0, grads.down_bias.data() + d0);
  });
}

}  // namespace ffn
