// The fused forward's two stages over one or more batches (inference_stages.hpp, DenseBatch):
// InferenceBlock::forward runs one batch, a mixture of experts one batch per chosen expert
// (and one for its shared experts) in the same four pool jobs.
//
//   1. x quantised into each batch's first-stage formats (f32: nothing), every thread a share
//      of the columns of every batch;
//   2. the first-stage panels of every batch, as (batch, token block, panel) items claimed in
//      guided chunks: a panel product gives a tile of [n][64] values — fused gated blocks:
//      the gate and up values of the same 32 hidden units; gated blocks whose gate and up
//      differ in type: two products into a [n][128] tile, 64 units; 2-matrix blocks: 64 up
//      values — and h = act(g + b_g) ⊙ (u + b_u) (or act(u + b_u)) is applied while the tile
//      is hot, so no [T][H] gate tensor exists; h's units are quantised into the down
//      kernel's format there too where its blocks fit in a panel's units;
//   3. h quantised where they do not (q8_K's 256-value blocks);
//   4. the down panels of every batch, the same way: y = h·W_downᵀ (+ b), 64 outputs a panel.
// Items of one batch come in the order InferenceBlock::forward has always swept them (token
// blocks outermost), and which thread takes an item changes no bit of it.
#include <algorithm>
#include <vector>

#include "block/bias_rows.hpp"
#include "block/inference_stages.hpp"

namespace ffn::inference {
namespace {

constexpr int64_t aligned(int64_t bytes) { return (bytes + 63) / 64 * 64; }

bool split_gate(const InferenceBlock::Panels& w) { return w.config.variant.gated && !w.fused; }

// Whether a split block's gate kernel takes x in the format up's does (then it reads up's rows).
bool gate_reads_up_rows(const kernels::KernelTable& k, const InferenceBlock::Panels& w) {
  return k.panel(w.gate.type).activations == k.panel(w.first.type).activations;
}

// Token blocks of a batch.
int64_t token_blocks(const DenseBatch& b) { return (b.x.rows + kTokenBlock - 1) / kTokenBlock; }

// Runs body(batch, t0, n, p0, p1) over every (token block, panel) item of every batch
// (panel_count(batch) panels each), claimed in guided chunks across the pool.
//   One batch: sweep_panels' schedule.
//   Several: the chunks run on from one batch into the next, and are measured in units of
//     kUnitBytes of panel, each panel its bytes' worth, so that a thread's last chunk of a
//     stage holds the same bytes whether its panels are small (an expert's) or large (a
//     shared expert of 4× the hidden size): counted in panels, the last claims of the
//     large ones left one thread streaming long after the other had finished. A panel
//     belongs to the chunk that holds its first unit.
template <class Panels, class Body>
void sweep_batches(ThreadPool& p, const DenseBatch* batches, int64_t count, Panels panel_count, Body body) {
  if (count == 1)
    return sweep_panels(p, batches[0].x.rows, panel_count(batches[0]), panel_count.bytes(batches[0]),
                        [&](int64_t t0, int64_t n, int64_t p0, int64_t p1) { body(batches[0], t0, n, p0, p1); });
  constexpr int64_t kUnitBytes = 4096;
  std::vector<int64_t> first_unit(size_t(count) + 1, 0), units_a_panel(size_t(count), 1);
  for (int64_t b = 0; b < count; ++b) {
    units_a_panel[b] = std::max<int64_t>(1, (panel_count.bytes(batches[b]) + kUnitBytes - 1) / kUnitBytes);
    first_unit[b + 1] = first_unit[b] + token_blocks(batches[b]) * panel_count(batches[b]) * units_a_panel[b];
  }
  const int64_t units = first_unit[count];
  run_in_guided_chunks(p, units, units, kMinChunkBytes / kUnitBytes, [&](int64_t u0, int64_t u1) {
    for (int64_t b = std::upper_bound(first_unit.begin(), first_unit.end(), u0) - first_unit.begin() - 1;
         b < count && first_unit[b] < u1; ++b) {
      // The batch's items (token block · panels + panel) whose first unit is in [u0, u1).
      const int64_t w = units_a_panel[b], panels = panel_count(batches[b]);
      const int64_t lo = std::max<int64_t>(u0 - first_unit[b], 0), hi = std::min(u1, first_unit[b + 1]) - first_unit[b];
      for (int64_t i = (lo + w - 1) / w, end = (hi + w - 1) / w; i < end;) {
        const int64_t t0 = i / panels * kTokenBlock, p0 = i % panels, p1 = std::min(panels, p0 + (end - i));
        body(batches[b], t0, std::min(kTokenBlock, batches[b].x.rows - t0), p0, p1);
        i += p1 - p0;
      }
    }
  });
}

struct FirstPanels {
  int64_t operator()(const DenseBatch& b) const { return b.w->first.count; }
  int64_t bytes(const DenseBatch& b) const {
    return b.w->first.panel_bytes + (split_gate(*b.w) ? b.w->gate.panel_bytes : 0);
  }
};
struct DownPanels {
  int64_t operator()(const DenseBatch& b) const { return b.w->down.count; }
  int64_t bytes(const DenseBatch& b) const { return b.w->down.panel_bytes; }
};

// First-stage panels [p0, p1) of batch b for tokens [t0, t0 + n): h's units of those panels
// (and, where they fit, h_down's).
void first_panels(const kernels::KernelTable& k, const DenseBatch& b, int64_t t0, int64_t n, int64_t p0, int64_t p1) {
  const InferenceBlock::Panels& w = *b.w;
  const BlockConfig& c = w.config;
  const int64_t D = c.d_model, H = c.hidden;
  const Activation act = c.variant.activation;
  const bool gated = c.variant.gated, split = split_gate(w);
  const int64_t tile_cols = split ? 2 * kW : kW;
  const MatrixView tile = scratch_matrix(Scratch::tile, std::min(b.x.rows, kTokenBlock), tile_cols);
  const kernels::ActivationRows xu = b.x_up.rows.from_token(t0);
  for (int64_t panel = p0; panel < p1; ++panel) {
    const int64_t u0 = panel * w.units_per_panel, nu = std::min(w.units_per_panel, H - u0);
    // Fused: columns 0–31 are the gate's, 32–63 the up projection's. Split: 0–63 the
    // gate's, 64–127 up's. The biases are added in the tile, and the activation writes h
    // from it in one call for the tile.
    float* const g = tile.data;
    float* const u = split ? tile.data + kW : w.fused ? tile.data + kW / 2 : tile.data;
    b.x_up.kernel->fn(n, D, xu, w.first.panel(panel), tile.data + (split ? kW : 0), tile_cols);
    if (split) b.x_gate.kernel->fn(n, D, b.x_gate.rows.from_token(t0), w.gate.panel(panel), g, tile_cols);
    if (c.bias) {
      add_bias_rows(u, tile_cols, n, w.up_bias.data() + u0, nu);
      if (gated) add_bias_rows(g, tile_cols, n, w.gate_bias.data() + u0, nu);
    }
    if (gated)
      kernels::f32_gated_activation_rows(act, n, nu, g, tile_cols, u, tile_cols, b.h.row(t0) + u0, b.h.stride);
    else
      kernels::f32_activation_rows(act, n, nu, u, tile_cols, b.h.row(t0) + u0, b.h.stride);
  }
  if (b.fill_h_in_stage_1)
    quantize_activations(k, b.h_down.rows, t0, n, p0 * w.units_per_panel, std::min(H, p1 * w.units_per_panel),
                         b.h.row(t0), b.h.stride);
}

}  // namespace

int64_t dense_batch_bytes(const InferenceBlock::Panels& w, int64_t T) {
  const auto& k = kernels::active_kernels();
  const int64_t D = w.config.d_model, H = w.config.hidden;
  int64_t bytes = activation_bytes(k.panel(w.first.type).activations, T, D);
  if (split_gate(w) && !gate_reads_up_rows(k, w)) bytes += activation_bytes(k.panel(w.gate.type).activations, T, D);
  return bytes + aligned(T * H * int64_t(sizeof(float))) + activation_bytes(k.panel(w.down.type).activations, T, H);
}

DenseBatch dense_batch(const InferenceBlock::Panels& w, ConstMatrixView x, MatrixView y, std::byte* buffer) {
  const auto& k = kernels::active_kernels();
  const int64_t H = w.config.hidden, T = x.rows;
  DenseBatch b;
  b.w = &w;
  b.x = x;
  b.y = y;
  auto input = [&](WeightType type, ConstMatrixView a) {
    const kernels::PanelKernel& kernel = k.panel(type);
    StageInput in{&kernel, activation_rows(kernel.activations, buffer, a.rows, a.cols, a.data, a.stride)};
    buffer += activation_bytes(kernel.activations, a.rows, a.cols);
    return in;
  };
  b.x_up = input(w.first.type, x);
  if (split_gate(w)) {
    // A gate of another type whose kernel takes the same activations reads up's.
    b.fill_x_gate = !gate_reads_up_rows(k, w);
    b.x_gate = b.fill_x_gate ? input(w.gate.type, x) : StageInput{&k.panel(w.gate.type), b.x_up.rows};
  }
  b.h = MatrixView{reinterpret_cast<float*>(buffer), T, H, H};
  buffer += aligned(T * H * int64_t(sizeof(float)));
  b.h_down = input(w.down.type, b.h);
  // h's units come complete a first-stage panel at a time; a format whose blocks fit in a
  // panel's units is filled there, while the panel is hot, and q8_K's 256-value blocks after.
  b.fill_h_in_stage_1 = w.units_per_panel % activation_block(b.h_down.rows.format) == 0;
  return b;
}

void forward_dense_batches(const DenseBatch* batches, int64_t count, ThreadPool& p) {
  if (count == 0) return;
  const auto& k = kernels::active_kernels();
  if (std::any_of(batches, batches + count,
                  [](const DenseBatch& b) { return b.x_up.rows.format != WeightType::f32 || b.fill_x_gate; }))
    p.run([&](int ith, int nth) {
      for (int64_t i = 0; i < count; ++i) {
        fill_share(k, batches[i].x_up.rows, batches[i].x, ith, nth);
        if (batches[i].fill_x_gate) fill_share(k, batches[i].x_gate.rows, batches[i].x, ith, nth);
      }
    });
  sweep_batches(
      p, batches, count, FirstPanels{},
      [&](const DenseBatch& b, int64_t t0, int64_t n, int64_t p0, int64_t p1) { first_panels(k, b, t0, n, p0, p1); });
  if (std::any_of(batches, batches + count, [](const DenseBatch& b) { return !b.fill_h_in_stage_1; }))
    p.run([&](int ith, int nth) {
      for (int64_t i = 0; i < count; ++i)
        if (!batches[i].fill_h_in_stage_1) fill_share(k, batches[i].h_down.rows, batches[i].h, ith, nth);
    });
  sweep_batches(p, batches, count, DownPanels{},
                [&](const DenseBatch& b, int64_t t0, int64_t n, int64_t p0, int64_t p1) {
                  down_panels(*b.w, b.h_down, b.y, t0, n, p0, p1);
                });
}

void down_panels(const InferenceBlock::Panels& w, const StageInput& h_down, MatrixView y, int64_t t0, int64_t n,
                 int64_t p0, int64_t p1) {
  const BlockConfig& c = w.config;
  const int64_t H = c.hidden, D = c.d_model;
  const MatrixView tile = scratch_matrix(Scratch::tile, std::min(n, kTokenBlock), kW);
  const kernels::ActivationRows hr = h_down.rows.from_token(t0);
  for (int64_t panel = p0; panel < p1; ++panel) {
    h_down.kernel->fn(n, H, hr, w.down.panel(panel), tile.data, kW);
    const int64_t d0 = panel * kW, nd = std::min(kW, D - d0);
    for (int64_t t = 0; t < n; ++t) {
      const float* ct = tile.row(t);
      float* yt = y.row(t0 + t) + d0;
      for (int64_t i = 0; i < nd; ++i) yt[i] = c.bias ? ct[i] + w.down_bias.data()[d0 + i] : ct[i];
    }
  }
}

void down_stage(const InferenceBlock::Panels& w, const StageInput& h_down, int64_t T, MatrixView y, ThreadPool& p) {
  sweep_panels(p, T, w.down.count, w.down.panel_bytes,
               [&](int64_t t0, int64_t n, int64_t p0, int64_t p1) { down_panels(w, h_down, y, t0, n, p0, p1); });
}

}  // namespace ffn::inference
