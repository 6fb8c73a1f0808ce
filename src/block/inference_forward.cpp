// InferenceBlock::forward: two stages, each a sweep over panels laid out at construction
// (inference_panels.hpp), each panel multiplied by its weight type's panel kernel on the
// activations in the format that kernel takes (core/weight_type_table.hpp): f32; bf16
// rounded (AVX512_BF16); or q8_0 blocks (integer panels) — x for the first stage, h for
// the down projection.
//   stage 1 (first-stage panels split across threads): one panel product gives a tile of
//     [T][64] values — fused gated blocks: the gate and up values of the same 32 hidden
//     units; gated blocks whose gate and up differ in type: two products into a [T][128]
//     tile, 64 units; 2-matrix blocks: 64 up values — and h = act(g + b_g) ⊙ (u + b_u)
//     (or act(u + b_u)) is applied while the tile is hot, so no [T][H] gate tensor exists.
//   stage 2 (output panels split across threads): y = h·W_downᵀ (+ b), 64 outputs a panel.
// One kernel for every T: the weights stream once per 256 tokens whatever the batch (decode
// reads them at the memory roof; prefill reuses each panel block from cache), and every
// element is one fixed chain (kernels.hpp), so y is bit-identical for any thread count
// and any batch a token is in. Threads take a stage's panels in guided chunks
// (parallel/guided_chunks.hpp) rather than a fixed half each: on a shared machine one core
// often runs slower than the other, and the stage ends when its last panel does.
#include <algorithm>
#include <string>

#include "block/bf16_activations.hpp"
#include "block/bias_rows.hpp"
#include "block/inference_panels.hpp"
#include "block/q8_buffer.hpp"
#include "block/view_checks.hpp"
#include "core/weight_type_table.hpp"
#include "kernels/kernels.hpp"
#include "parallel/guided_chunks.hpp"
#include "parallel/scratch.hpp"

namespace ffn {
namespace {

constexpr int64_t kW = kernels::kPanelWidth;
constexpr int64_t kTokenBlock = kernels::kPanelTokenBlock;

// A chunk holds at least this many bytes of panels, so that a thread's stream of small
// panels (q4_0: 147 KB at K = 4096) is not cut into pieces the hardware prefetcher must
// start again: measured at T = 1 on the 7B shape, alternating in one process, q4_0 ran
// 1.02–1.05× and q8_0 1.05–1.08× faster than with chunks of one panel.
constexpr int64_t kMinChunkBytes = int64_t(1) << 20;

// Runs body(t0, n, p0, p1) on the pool's threads for every chunk of a stage: panels
// [p0, p1) of `panels` (panel_bytes each) against the token block [t0, t0 + n) of T
// tokens, every (token block, panel) pair once, claimed in guided chunks within a token
// block. Tokens in blocks of the kernels' own token block, outermost: the threads sweep the
// panels over one block of activations (x: 4 MB, h: 11 MB at 256 tokens of the 7B shape)
// while it is still in cache, rather than streaming all T rows again for every panel.
template <class Body>
void sweep_panels(ThreadPool& p, int64_t T, int64_t panels, int64_t panel_bytes, Body body) {
  const int64_t token_blocks = (T + kTokenBlock - 1) / kTokenBlock;
  const int64_t min_chunk = std::max<int64_t>(1, kMinChunkBytes / std::max<int64_t>(panel_bytes, 1));
  run_in_guided_chunks(p, token_blocks * panels, panels, min_chunk, [&](int64_t i0, int64_t i1) {
    const int64_t t0 = i0 / panels * kTokenBlock, p0 = i0 % panels;
    body(t0, std::min(kTokenBlock, T - t0), p0, p0 + (i1 - i0));
  });
}

// One stage's input in the format of one weight type's kernel: x prepared whole, or h
// filled chunk by chunk during stage 1 (fill_hidden).
struct StageInput {
  PanelKernel kernel;
  WeightType type;
  Q8Buffer q8;
  Q8KBuffer q8k;
  uint16_t* bf16 = nullptr;
  ActivationRows rows;
};

// a ([T][K]) quantised into in.q8k, the threads taking whole blocks of every row.
void quantize_q8k(StageInput& in, ConstMatrixView a, ThreadPool& p) {
  const int64_t T = a.rows, K = a.cols, block = in.rows.q8k_block;
  p.run([&](int ith, int nth) {
    const auto [c0, c1] = split_range(K, ith, nth, block);
    if (c1 > c0)
      kernels::quantize_q8k_rows(block, T, K, c0, c1, a.data, a.stride, in.q8k.qs.data(), in.q8k.d.data(),
                                 in.q8k.bsums.data());
  });
}

// `in` for activations a ([T][K]) in the format of type t's kernel on table k: f32 rows as
// they are; bf16 rows in `bf16_slot` (filled now when fill, else by the caller);
// q8_0 blocks (quantised now when fill).
void set_up_input(StageInput& in, const kernels::KernelTable& k, WeightType t, ConstMatrixView a, Scratch bf16_slot,
                  bool fill, ThreadPool& p) {
  in.kernel = weight_type_traits(t).kernel(k);
  in.type = t;
  const int64_t T = a.rows, K = a.cols;
  switch (in.kernel.activations) {
    case ActivationFormat::f32:
      in.rows.f32 = a.data;
      in.rows.f32_stride = a.stride;
      return;
    case ActivationFormat::bf16: {
      in.bf16 = bf16_activation_rows(bf16_slot, T, K);
      if (fill) round_rows_to_bf16(k, a, in.bf16, p);
      in.rows.bf16 = in.bf16;
      in.rows.bf16_stride = kernels::bf16_panel_rows(K);
      return;
    }
    case ActivationFormat::q8_0:
      in.q8 = Q8Buffer(T, K);
      if (fill)
        p.run([&](int ith, int nth) {
          const auto [c0, c1] = split_range(K, ith, nth, kQuantBlock);
          if (c1 > c0)
            kernels::quantize_q8_rows(t, T, K, c0, c1, a.data, a.stride, in.q8.qs.data(), in.q8.d.data(),
                                      in.q8.corr.data());
        });
      in.rows.q8 = in.q8.rows();
      return;
    case ActivationFormat::q8_K:
    case ActivationFormat::q8_1:
      in.rows.q8k_block = kernels::kq_format(t).block;
      in.q8k = Q8KBuffer(T, K, in.rows.q8k_block);
      if (fill) quantize_q8k(in, a, p);
      in.rows.q8k = in.q8k.rows();
      return;
  }
}

// Hidden units [u0, u1) of tokens [t0, t0 + n) of h, complete, written into the down
// stage's input (q8_0 blocks or bf16; f32 reads h itself). u0 and u1 are whole q8_0 blocks
// and whole bf16 pairs (panels of 32 or 64 units); the chunk that ends at an odd H writes
// the bf16 row's padding. q8_K's super-blocks of 256 units may span chunks, so they are
// quantised after stage 1 (quantize_q8k), not here.
void fill_hidden(StageInput& in, MatrixView h, int64_t t0, int64_t n, int64_t u0, int64_t u1,
                 const kernels::KernelTable& k) {
  const int64_t H = h.cols;
  switch (in.kernel.activations) {
    case ActivationFormat::f32:
    case ActivationFormat::q8_K:
    case ActivationFormat::q8_1:
      return;
    case ActivationFormat::bf16: {
      const int64_t ld = in.rows.bf16_stride;
      k.f32_to_bf16_rows(n, u1 - u0, h.row(t0) + u0, h.stride, in.bf16 + t0 * ld + u0, ld);
      return;
    }
    case ActivationFormat::q8_0: {
      Q8Buffer& q = in.q8;
      kernels::quantize_q8_rows(in.type, n, H, u0, u1, h.row(t0), h.stride, q.qs.data() + t0 * H,
                                q.d.data() + t0 * H / kQuantBlock, q.corr.data() + t0 * H / 4);
      return;
    }
  }
}

}  // namespace

void InferenceBlock::forward(ConstMatrixView x, MatrixView y, ThreadPool* pool) const {
  const Panels& w = *panels_;
  const BlockConfig& c = w.config;
  const int64_t D = c.d_model, H = c.hidden, T = x.rows;
  views::check_forward_views(x, y, D);
  if (T == 0) return;
  ThreadPool& p = pool ? *pool : default_thread_pool();
  const auto& k = kernels::active_kernels();
  const Activation act = c.variant.activation;
  const bool gated = c.variant.gated, split = gated && !w.fused;

  StageInput x_up, x_gate, h_down;
  set_up_input(x_up, k, w.first.type, x, Scratch::x_bf16, true, p);
  if (split) {
    set_up_input(x_gate, k, w.gate.type, x, Scratch::x_bf16, true, p);
  }
  const MatrixView h = scratch_matrix(Scratch::hidden, T, H);
  set_up_input(h_down, k, w.down.type, h, Scratch::hidden_bf16, false, p);

  // Stage 1. A chunk's h columns of its token block are complete when its panels are, so
  // the chunk also writes them into the down stage's input.
  const int64_t tile_cols = split ? 2 * kW : kW;
  const int64_t first_bytes = w.first.panel_bytes + (split ? w.gate.panel_bytes : 0);
  sweep_panels(p, T, w.first.count, first_bytes, [&](int64_t t0, int64_t n, int64_t p0, int64_t p1) {
    const MatrixView tile = scratch_matrix(Scratch::tile, std::min(T, kTokenBlock), tile_cols);
    const ActivationRows xu = x_up.rows.from_token(t0, D);
    for (int64_t panel = p0; panel < p1; ++panel) {
      const int64_t u0 = panel * w.units_per_panel, nu = std::min(w.units_per_panel, H - u0);
      // Fused: columns 0–31 are the gate's, 32–63 the up projection's. Split: 0–63 the
      // gate's, 64–127 up's. The biases are added in the tile, and the activation writes h
      // from it in one call for the tile.
      float* const g = tile.data;
      float* const u = split ? tile.data + kW : w.fused ? tile.data + kW / 2 : tile.data;
      x_up.kernel.product(k, n, D, xu, w.first.panel(panel), tile.data + (split ? kW : 0), tile_cols);
      if (split) x_gate.kernel.product(k, n, D, x_gate.rows.from_token(t0, D), w.gate.panel(panel), g, tile_cols);
      if (c.bias) {
        add_bias_rows(u, tile_cols, n, w.up_bias.data() + u0, nu);
        if (gated) add_bias_rows(g, tile_cols, n, w.gate_bias.data() + u0, nu);
      }
      if (gated)
        kernels::f32_gated_activation_rows(act, n, nu, g, tile_cols, u, tile_cols, h.row(t0) + u0, h.stride);
      else
        kernels::f32_activation_rows(act, n, nu, u, tile_cols, h.row(t0) + u0, h.stride);
    }
    fill_hidden(h_down, h, t0, n, p0 * w.units_per_panel, std::min(H, p1 * w.units_per_panel), k);
  });

  if (h_down.kernel.activations == ActivationFormat::q8_K || h_down.kernel.activations == ActivationFormat::q8_1)
    quantize_q8k(h_down, h, p);

  // Stage 2: y = h·W_downᵀ (+ b), 64 outputs a panel.
  sweep_panels(p, T, w.down.count, w.down.panel_bytes, [&](int64_t t0, int64_t n, int64_t p0, int64_t p1) {
    const MatrixView tile = scratch_matrix(Scratch::tile, std::min(T, kTokenBlock), kW);
    const ActivationRows hr = h_down.rows.from_token(t0, H);
    for (int64_t panel = p0; panel < p1; ++panel) {
      h_down.kernel.product(k, n, H, hr, w.down.panel(panel), tile.data, kW);
      const int64_t d0 = panel * kW, nd = std::min(kW, D - d0);
      for (int64_t t = 0; t < n; ++t) {
        const float* ct = tile.row(t);
        float* yt = y.row(t0 + t) + d0;
        for (int64_t i = 0; i < nd; ++i) yt[i] = c.bias ? ct[i] + w.down_bias.data()[d0 + i] : ct[i];
      }
    }
  });
}

}  // namespace ffn
