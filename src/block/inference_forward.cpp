// InferenceBlock::forward: two stages, each a sweep over panels laid out at construction
// (inference_panels.hpp), each panel multiplied by its weight type's panel kernel (one
// indirect call: the active ISA's KernelTable::panel_gemm) on the activations in the format
// that kernel takes (core/activation_formats.hpp: f32 as they are; bf16 rounded on
// AVX512_BF16; q8_0 or q8_K blocks for the integer panels), kept in the calling thread's
// scratch — x for the first stage, h for the down projection.
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

#include "block/bias_rows.hpp"
#include "block/inference_panels.hpp"
#include "block/inference_stages.hpp"
#include "block/view_checks.hpp"
#include "core/activation_formats.hpp"
#include "kernels/kernels.hpp"
#include "parallel/guided_chunks.hpp"
#include "parallel/scratch.hpp"

namespace ffn {

using inference::StageInput;
using inference::fill_rows;
using inference::stage_input;
using inference::sweep_panels;
using inference::kTokenBlock;
using inference::kW;

void InferenceBlock::forward(ConstMatrixView x, MatrixView y, ThreadPool* pool) const {
  const Panels& w = *panels_;
  const BlockConfig& c = w.config;
  const int64_t D = c.d_model, H = c.hidden, T = x.rows;
  views::check_forward_views(x, y, D);
  if (T == 0) return;
  ThreadPool& p = pool ? *pool : default_thread_pool();
  if (w.gate_first()) return inference::forward_gate_first(w, x, y, p);
  const auto& k = kernels::active_kernels();
  const Activation act = c.variant.activation;
  const bool gated = c.variant.gated, split = gated && !w.fused;

  const StageInput x_up = stage_input(k, w.first.type, x, Scratch::x_activations);
  fill_rows(k, x_up.rows, x, p);
  StageInput x_gate;
  if (split) {
    // A gate of another type whose kernel takes the same activations reads up's.
    const bool reads_up_s = k.panel(w.gate.type).activations == x_up.rows.format;
    x_gate = reads_up_s ? StageInput{&k.panel(w.gate.type), x_up.rows}
                        : stage_input(k, w.gate.type, x, Scratch::gate_activations);
    if (!reads_up_s) fill_rows(k, x_gate.rows, x, p);
  }
  const MatrixView h = scratch_matrix(Scratch::hidden, T, H);
  const StageInput h_down = stage_input(k, w.down.type, h, Scratch::hidden_activations);
  // h's units come complete a first-stage panel at a time; a format whose blocks fit in a
  // panel's units is filled there, while the panel is hot, and q8_K's 256-value blocks after.
  const bool fill_in_stage_1 = w.units_per_panel % activation_block(h_down.rows.format) == 0;

  // Stage 1. A chunk's h columns of its token block are complete when its panels are, so
  // the chunk also writes them into the down stage's input.
  const int64_t tile_cols = split ? 2 * kW : kW;
  const int64_t first_bytes = w.first.panel_bytes + (split ? w.gate.panel_bytes : 0);
  const kernels::PanelGemm up_gemm = x_up.kernel->fn, gate_gemm = split ? x_gate.kernel->fn : nullptr;
  sweep_panels(p, T, w.first.count, first_bytes, [&](int64_t t0, int64_t n, int64_t p0, int64_t p1) {
    const MatrixView tile = scratch_matrix(Scratch::tile, std::min(T, kTokenBlock), tile_cols);
    const kernels::ActivationRows xu = x_up.rows.from_token(t0);
    for (int64_t panel = p0; panel < p1; ++panel) {
      const int64_t u0 = panel * w.units_per_panel, nu = std::min(w.units_per_panel, H - u0);
      // Fused: columns 0–31 are the gate's, 32–63 the up projection's. Split: 0–63 the
      // gate's, 64–127 up's. The biases are added in the tile, and the activation writes h
      // from it in one call for the tile.
      float* const g = tile.data;
      float* const u = split ? tile.data + kW : w.fused ? tile.data + kW / 2 : tile.data;
      up_gemm(n, D, xu, w.first.panel(panel), tile.data + (split ? kW : 0), tile_cols);
      if (split) gate_gemm(n, D, x_gate.rows.from_token(t0), w.gate.panel(panel), g, tile_cols);
      if (c.bias) {
        add_bias_rows(u, tile_cols, n, w.up_bias.data() + u0, nu);
        if (gated) add_bias_rows(g, tile_cols, n, w.gate_bias.data() + u0, nu);
      }
      if (gated)
        kernels::f32_gated_activation_rows(act, n, nu, g, tile_cols, u, tile_cols, h.row(t0) + u0, h.stride);
      else
        kernels::f32_activation_rows(act, n, nu, u, tile_cols, h.row(t0) + u0, h.stride);
    }
    if (fill_in_stage_1)
      quantize_activations(k, h_down.rows, t0, n, p0 * w.units_per_panel, std::min(H, p1 * w.units_per_panel),
                           h.row(t0), h.stride);
  });
  if (!fill_in_stage_1) fill_rows(k, h_down.rows, h, p);

  inference::down_stage(w, h_down, T, y, p);
}

void inference::down_stage(const InferenceBlock::Panels& w, const StageInput& h_down, int64_t T, MatrixView y,
                           ThreadPool& p) {
  const BlockConfig& c = w.config;
  const int64_t H = c.hidden, D = c.d_model;
  const kernels::PanelGemm down_gemm = h_down.kernel->fn;
  sweep_panels(p, T, w.down.count, w.down.panel_bytes, [&](int64_t t0, int64_t n, int64_t p0, int64_t p1) {
    const MatrixView tile = scratch_matrix(Scratch::tile, std::min(T, kTokenBlock), kW);
    const kernels::ActivationRows hr = h_down.rows.from_token(t0);
    for (int64_t panel = p0; panel < p1; ++panel) {
      down_gemm(n, H, hr, w.down.panel(panel), tile.data, kW);
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
