// The pieces both forwards of an InferenceBlock are made of (internal): the sweep of a
// stage's panels across the pool, a stage's input in its kernel's activation format, and
// the down stage. inference_forward.cpp runs them in the fused order (gate and up of a panel
// together, the activation while the tile is hot); gate_first_forward.cpp computes every gate
// value first (Gemma 3n's Gaussian top-k, activation-sparse decode).
#pragma once

#include <algorithm>
#include <cstdint>

#include "block/inference_panels.hpp"
#include "core/activation_formats.hpp"
#include "kernels/kernels.hpp"
#include "parallel/guided_chunks.hpp"
#include "parallel/scratch.hpp"

namespace ffn::inference {

constexpr int64_t kW = kernels::kPanelWidth;
constexpr int64_t kTokenBlock = kernels::kPanelTokenBlock;

// A chunk holds at least this many bytes of panels, so that a thread's stream of small
// panels (q4_0: 147 KB at K = 4096) is not cut into pieces the hardware prefetcher must
// start again (docs/performance.md, the inference forward's chunks).
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

// One stage's input: the panel kernel of its weight type on this ISA and the activations in
// the format that kernel takes.
struct StageInput {
  const kernels::PanelKernel* kernel = nullptr;
  kernels::ActivationRows rows;
};

// Thread ith's share (of nth) of the columns of every row of a ([T][K]) into `rows`, in
// whole units (activation_block) of the format.
inline void fill_share(const kernels::KernelTable& k, const kernels::ActivationRows& rows, ConstMatrixView a, int ith,
                       int nth) {
  if (rows.format == WeightType::f32) return;
  const auto [c0, c1] = split_range(a.cols, ith, nth, activation_block(rows.format));
  quantize_activations(k, rows, 0, a.rows, c0, c1, a.data, a.stride);
}

// Every row of a ([T][K]) into `rows`, the threads taking shares of the columns.
inline void fill_rows(const kernels::KernelTable& k, const kernels::ActivationRows& rows, ConstMatrixView a,
                      ThreadPool& p) {
  if (rows.format == WeightType::f32) return;
  p.run([&](int ith, int nth) { fill_share(k, rows, a, ith, nth); });
}

// The input of a stage whose weights are of type t, for activations a ([T][K]): f32 rows
// as they are, any other format in the calling thread's scratch `slot` (filled by the caller).
inline StageInput stage_input(const kernels::KernelTable& k, WeightType t, ConstMatrixView a, Scratch slot) {
  const kernels::PanelKernel& kernel = k.panel(t);
  const WeightType f = kernel.activations;
  std::byte* buffer = f == WeightType::f32 ? nullptr : scratch_bytes(slot, activation_bytes(f, a.rows, a.cols));
  return {&kernel, activation_rows(f, buffer, a.rows, a.cols, a.data, a.stride)};
}

// Down panels [p0, p1) of `w` for tokens [t0, t0 + n): y = h·W_downᵀ (+ b), 64 outputs a
// panel, h in the down kernel's format.
void down_panels(const InferenceBlock::Panels& w, const StageInput& h_down, MatrixView y, int64_t t0, int64_t n,
                 int64_t p0, int64_t p1);

// Stage 2: down_panels over every panel and token, swept across the pool.
void down_stage(const InferenceBlock::Panels& w, const StageInput& h_down, int64_t T, MatrixView y, ThreadPool& p);

// A batch of tokens through one block's fused forward (InferenceBlock::forward), set out so
// that several blocks' batches can share each stage's sweep: a mixture of experts runs all
// its chosen experts' products in one pass a stage (moe_block.cpp), the threads' chunks of
// panels running on from one expert's into the next, where one forward an expert would end
// each of its stages on a barrier. Every panel product, activation and quantisation is the
// one the block's own forward does, so each batch's y is bit-identical to it.
struct DenseBatch {
  const InferenceBlock::Panels* w = nullptr;
  ConstMatrixView x;  // [T][D]
  MatrixView y;       // [T][D]
  StageInput x_up;
  StageInput x_gate;               // gated blocks whose gate and up differ in type only
  bool fill_x_gate = false;        // x_gate's rows are its own (else up's, shared)
  MatrixView h;                    // [T][H] hidden values
  StageInput h_down;               // h in the down kernel's format
  bool fill_h_in_stage_1 = false;  // h_down's blocks fit in a first-stage panel's units
};

// Bytes of the buffers a batch of T tokens through w needs (x in its kernels' formats, h and
// h in down's format), a multiple of 64.
int64_t dense_batch_bytes(const InferenceBlock::Panels& w, int64_t T);
// The batch x → y ([T][D] each) through w, its buffers at `buffer` (dense_batch_bytes(w,
// x.rows) bytes, 64-byte aligned). w must not be gate_first().
DenseBatch dense_batch(const InferenceBlock::Panels& w, ConstMatrixView x, MatrixView y, std::byte* buffer);
// Runs the forward of every batch: four pool jobs in all (x quantised, the first-stage
// panels, h quantised where stage 1 could not, the down panels), whatever their number.
void forward_dense_batches(const DenseBatch* batches, int64_t count, ThreadPool& p);

// a = act(gate values (+ b)) [T][H] (2-matrix blocks: act(up values (+ b))), after the
// Gaussian top-k where the config has one (gate_first_forward.cpp).
void activated_gate(const InferenceBlock::Panels& w, ConstMatrixView x, MatrixView a, ThreadPool& p);

// h = a ⊙ u [T][H] from up's own panels (w.first unfused; 2-matrix blocks: h = a), 0 for a
// channel the token drops: |a| ≤ threshold (< 0: none), or, gated, |h| ≤ down_threshold (0:
// none) (gate_first_forward.cpp).
void hidden_from_gate(const InferenceBlock::Panels& w, ConstMatrixView x, ConstMatrixView a, MatrixView h,
                      float threshold, float down_threshold, ThreadPool& p);

// The gate-first forward (gate_first_forward.cpp), for blocks whose Panels::gate_first().
void forward_gate_first(const InferenceBlock::Panels& w, ConstMatrixView x, MatrixView y, ThreadPool& p);

}  // namespace ffn::inference
