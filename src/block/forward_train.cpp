// forward_train: Block::forward's two stages (see forward.cpp), with the hidden
// pre-activations written into the cache instead of a scratch tile. Every element is
// computed by the same kernels in the same order as in Block::forward, so y is bit-identical
// to it, and a backward that recomputes the pre-activations gets the cached values' bits.
#include <algorithm>

#include "block/bias_rows.hpp"
#include "block/training_views.hpp"
#include "ffn/backward.hpp"
#include "kernels/kernels.hpp"
#include "parallel/scratch.hpp"

namespace ffn {
namespace {

constexpr int64_t kHiddenChunk = 64;  // hidden units per step of a thread, as in forward.cpp
constexpr int64_t kSplitAlign = 16;   // thread ranges start on multiples of 16 rows

// Gives m the shape [rows][cols], reusing its storage when it already has it.
void reshape(Matrix& m, int64_t rows, int64_t cols) {
  if (m.rows() != rows || m.cols() != cols) m = Matrix(rows, cols);
}

}  // namespace

void forward_train(const Block& block, ConstMatrixView x, MatrixView y, ForwardCache& cache, bool recompute,
                   ThreadPool* pool) {
  const auto& c = block.config();
  const int64_t D = c.d_model, H = c.hidden;
  training::check_view("input x", x, D);
  training::check_view("output y", y, D);
  training::check_same_rows("input x", x, "output y", y);
  if (training::overlap(x, y)) throw Error("output y overlaps input x");
  const int64_t T = x.rows;
  const bool gated = c.variant.gated;

  cache.recompute = recompute;
  cache.tokens = T;
  if (recompute) {
    cache.gate = Matrix();
    cache.up = Matrix();
    block.forward(x, y, pool);
    return;
  }
  reshape(cache.up, T, H);
  reshape(cache.gate, gated ? T : 0, gated ? H : 0);
  if (T == 0) return;

  ThreadPool& p = pool ? *pool : default_thread_pool();
  const auto& k = kernels::active_kernels();
  const kernels::F32GemmNt gemm_nt = kernels::forward_gemm(k, T);
  const auto& w = block.weights();
  const Activation act = c.variant.activation;
  const MatrixView h = scratch_matrix(Scratch::hidden, T, H);

  p.run([&](int ith, int nth) {
    const auto [h0, h1] = split_range(H, ith, nth, kSplitAlign);
    for (int64_t c0 = h0; c0 < h1; c0 += kHiddenChunk) {
      const int64_t nb = std::min(kHiddenChunk, h1 - c0);
      float* u = cache.up.data() + c0;
      gemm_nt(T, nb, D, x.data, x.stride, w.up.row(c0), D, u, H);
      if (c.bias) add_bias_rows(u, H, T, w.up_bias.data() + c0, nb);
      if (gated) {
        float* g = cache.gate.data() + c0;
        gemm_nt(T, nb, D, x.data, x.stride, w.gate.row(c0), D, g, H);
        if (c.bias) add_bias_rows(g, H, T, w.gate_bias.data() + c0, nb);
        kernels::f32_gated_activation_rows(act, T, nb, g, H, u, H, h.row(0) + c0, h.stride);
      } else {
        kernels::f32_activation_rows(act, T, nb, u, H, h.row(0) + c0, h.stride);
      }
    }
  });

  p.run([&](int ith, int nth) {
    const auto [d0, d1] = split_range(D, ith, nth, kSplitAlign);
    if (d1 <= d0) return;
    gemm_nt(T, d1 - d0, H, h.data, H, w.down.row(d0), H, y.data + d0, y.stride);
    if (c.bias) add_bias_rows(y.data + d0, y.stride, T, w.down_bias.data() + d0, d1 - d0);
  });
}

}  // namespace ffn
