// The f32 forward of a Block, from its row-major weights (Block::forward and
// forward_train): two threaded stages over the active ISA's GEMM kernel.
//   stage 1 (hidden units split across threads, 64 at a time): u = x·W_upᵀ (+b); for gated
//     blocks g = x·W_gateᵀ (+b), and h = act(g) ⊙ u (or act(u)) applied while the values are
//     hot. forward writes u straight into h and g into a [T][64] scratch tile, so no [T][H]
//     gate tensor exists; forward_train writes u and g into its cache for backward instead.
//   stage 2 (outputs split across threads): y = h·W_downᵀ (+b).
// Both are the same kernels in the same order, so their y agree bit for bit (and a backward
// that recomputes the pre-activations gets the cached values' bits). Every element is
// computed by one thread with a fixed sequence of operations (the kernel contract), so y is
// bit-identical for any thread count.
#include <algorithm>

#include "block/bias_rows.hpp"
#include "block/gate_sparsity_checks.hpp"
#include "block/view_checks.hpp"
#include "ffn/backward.hpp"
#include "ffn/block.hpp"
#include "kernels/kernels.hpp"
#include "parallel/scratch.hpp"

namespace ffn {
namespace {

constexpr int64_t kHiddenChunk = 64;  // hidden units per step of a thread
constexpr int64_t kSplitAlign = 16;   // thread ranges start on multiples of 16 rows

// Gives m the shape [rows][cols], reusing its storage when it already has it.
void reshape(Matrix& m, int64_t rows, int64_t cols) {
  if (m.rows() != rows || m.cols() != cols) m = Matrix(rows, cols);
}

// y = block(x) for checked views, T > 0; the pre-activations u and g ([T][H]) are kept in
// `cache` when given.
void run_forward(const Block& block, ConstMatrixView x, MatrixView y, ForwardCache* cache, ThreadPool& p) {
  const auto& c = block.config();
  const int64_t D = c.d_model, H = c.hidden, T = x.rows;
  const bool gated = c.variant.gated;
  const Activation act = c.variant.activation;
  const kernels::F32GemmNt gemm_nt = kernels::forward_gemm(kernels::active_kernels(), T);
  const auto& w = block.weights();
  const MatrixView h = scratch_matrix(Scratch::hidden, T, H);

  p.run([&](int ith, int nth) {
    const auto [h0, h1] = split_range(H, ith, nth, kSplitAlign);
    const MatrixView gate_tile = scratch_matrix(Scratch::tile, gated && !cache && h1 > h0 ? T : 0, kHiddenChunk);
    for (int64_t c0 = h0; c0 < h1; c0 += kHiddenChunk) {
      const int64_t nb = std::min(kHiddenChunk, h1 - c0);
      float* const u = cache ? cache->up.data() + c0 : h.data + c0;
      gemm_nt(T, nb, D, x.data, x.stride, w.up.row(c0), D, u, H);
      if (c.bias) add_bias_rows(u, H, T, w.up_bias.data() + c0, nb);
      if (gated) {
        float* const g = cache ? cache->gate.data() + c0 : gate_tile.data;
        const int64_t ldg = cache ? H : kHiddenChunk;
        gemm_nt(T, nb, D, x.data, x.stride, w.gate.row(c0), D, g, ldg);
        if (c.bias) add_bias_rows(g, ldg, T, w.gate_bias.data() + c0, nb);
        kernels::f32_gated_activation_rows(act, T, nb, g, ldg, u, H, h.data + c0, H);
      } else {
        kernels::f32_activation_rows(act, T, nb, u, H, h.data + c0, H);
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

}  // namespace

void Block::forward(ConstMatrixView x, MatrixView y, ThreadPool* pool) const {
  refuse_gate_sparsity(config_, "Block::forward", "use an InferenceBlock, or reference_forward for the double oracle");
  views::check_forward_views(x, y, config_.d_model);
  if (x.rows == 0) return;
  run_forward(*this, x, y, nullptr, pool ? *pool : default_thread_pool());
}

void forward_train(const Block& block, ConstMatrixView x, MatrixView y, ForwardCache& cache, bool recompute,
                   ThreadPool* pool) {
  const auto& c = block.config();
  refuse_gate_sparsity(c, "forward_train", "training runs the plain gated block only (forward_train, backward and Block::forward have no top-k)");
  const int64_t H = c.hidden, T = x.rows;
  views::check_forward_views(x, y, c.d_model);
  cache.recompute = recompute;
  cache.tokens = T;
  if (recompute) {
    cache.gate = Matrix();
    cache.up = Matrix();
    block.forward(x, y, pool);
    return;
  }
  reshape(cache.up, T, H);
  reshape(cache.gate, c.variant.gated ? T : 0, c.variant.gated ? H : 0);
  if (T == 0) return;
  run_forward(block, x, y, &cache, pool ? *pool : default_thread_pool());
}

}  // namespace ffn
