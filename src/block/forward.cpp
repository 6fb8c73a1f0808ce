// Fast f32 forward: two threaded stages over the active ISA's GEMM kernel.
//   stage 1 (hidden units split across threads, 64 at a time): u = x·W_upᵀ (+b) written
//     straight into h; for gated blocks g = x·W_gateᵀ (+b) into a [T][64] scratch tile and
//     h = act(g) ⊙ u applied while the tile is hot — no [T][H] gate tensor exists.
//   stage 2 (outputs split across threads): y = h·W_downᵀ (+b).
// Every element is computed by one thread with a fixed sequence of operations (see the
// kernel contract), so y is bit-identical for any thread count.
#include <algorithm>
#include <string>

#include "block/bias_rows.hpp"
#include "ffn/block.hpp"
#include "ffn/error.hpp"
#include "kernels/kernels.hpp"
#include "parallel/scratch.hpp"

namespace ffn {
namespace {

constexpr int64_t kHiddenChunk = 64;  // hidden units per scratch tile
constexpr int64_t kSplitAlign = 16;   // thread ranges start on multiples of 16 rows

void check_view(const char* name, ConstMatrixView v, int64_t D) {
  const std::string n = name;
  if (v.cols != D)
    throw Error(n + " has " + std::to_string(v.cols) + " columns; the block's d_model is " + std::to_string(D));
  if (v.rows < 0) throw Error(n + " has a negative number of rows (" + std::to_string(v.rows) + ")");
  if (v.stride < v.cols) throw Error(n + " has row stride " + std::to_string(v.stride) + " < columns " + std::to_string(v.cols));
  if (v.rows > 0 && !v.data) throw Error(n + " has no data");
}

}  // namespace

void Block::forward(ConstMatrixView x, MatrixView y, ThreadPool* pool) const {
  const int64_t D = config_.d_model, H = config_.hidden;
  check_view("input x", x, D);
  check_view("output y", y, D);
  if (x.rows != y.rows)
    throw Error("input x has " + std::to_string(x.rows) + " rows but output y has " + std::to_string(y.rows));
  const int64_t T = x.rows;
  if (T == 0) return;
  const float* x_end = x.row(T - 1) + D;
  const float* y_end = y.row(T - 1) + D;
  if (x.data < y_end && y.data < x_end) throw Error("output y overlaps input x");

  ThreadPool& p = pool ? *pool : default_thread_pool();
  if (packed_) return forward_packed(x, y, p);
  if (weight_type_ != WeightType::f32) return forward_stored(x, y, p);
  const auto& k = kernels::active_kernels();
  const kernels::F32GemmNt gemm_nt = kernels::forward_gemm(k, T);
  const auto& w = weights_;
  const Activation act = config_.variant.activation;
  const bool gated = config_.variant.gated;
  const MatrixView h = scratch_matrix(Scratch::hidden, T, H);

  p.run([&](int ith, int nth) {
    const auto [h0, h1] = split_range(H, ith, nth, kSplitAlign);
    const MatrixView gate_tile = scratch_matrix(Scratch::tile, gated && h1 > h0 ? T : 0, kHiddenChunk);
    for (int64_t c0 = h0; c0 < h1; c0 += kHiddenChunk) {
      const int64_t nb = std::min(kHiddenChunk, h1 - c0);
      float* h_tile = h.data + c0;
      gemm_nt(T, nb, D, x.data, x.stride, w.up.row(c0), D, h_tile, H);
      if (config_.bias) add_bias_rows(h_tile, H, T, w.up_bias.data() + c0, nb);
      if (gated) {
        gemm_nt(T, nb, D, x.data, x.stride, w.gate.row(c0), D, gate_tile.data, kHiddenChunk);
        if (config_.bias) add_bias_rows(gate_tile.data, kHiddenChunk, T, w.gate_bias.data() + c0, nb);
        kernels::f32_gated_activation_rows(act, T, nb, gate_tile.data, kHiddenChunk, h_tile, H, h_tile, H);
      } else {
        kernels::f32_activation_rows(act, T, nb, h_tile, H, h_tile, H);
      }
    }
  });

  p.run([&](int ith, int nth) {
    const auto [d0, d1] = split_range(D, ith, nth, kSplitAlign);
    if (d1 <= d0) return;
    gemm_nt(T, d1 - d0, H, h.data, H, w.down.row(d0), H, y.data + d0, y.stride);
    if (config_.bias) add_bias_rows(y.data + d0, y.stride, T, w.down_bias.data() + d0, d1 - d0);
  });
}

}  // namespace ffn
