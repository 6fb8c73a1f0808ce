// What an InferenceBlock holds (internal): each matrix as consecutive panels of
// kernels::kPanelWidth (64) columns, a panel the k-th values of 64 weight rows side by side
// in the layout of the matrix's weight type (core/weight_type_table.hpp, kernels.hpp), which
// the panel kernels stream as one linear array.
//
//   first: the products with x (K = D).
//          fused (gated, gate and up of one type): panel p holds gate rows 32p … 32p+31 in
//            columns 0–31 and up rows 32p … 32p+31 in columns 32–63, so one pass gives both
//            halves of 32 hidden units;
//          otherwise: up rows 64p … 64p+63 (and, gated, `gate` holds gate rows 64p … 64p+63
//            in a panel set of its own type).
//          (Never fused when the forward is gate-first: Panels::gate_first.)
//   down:  panel p holds W_down rows 64p … 64p+63 (K = H).
// Rows past the end of a matrix are zero in the last panel (their outputs are dropped).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/weight_type_table.hpp"
#include "ffn/inference_block.hpp"
#include "ffn/tensor.hpp"

namespace ffn {

struct PanelSet {
  WeightType type = WeightType::f32;
  int64_t count = 0;        // panels
  int64_t panel_bytes = 0;  // one panel over the set's K
  // The panels, consecutive. 64-byte-aligned floats used as bytes by the other types
  // (written and read only through their own type's layout).
  AlignedFloats storage;
  const std::byte* panel(int64_t p) const {
    return reinterpret_cast<const std::byte*>(storage.data()) + p * panel_bytes;
  }
};

struct InferenceBlock::Panels {
  BlockConfig config;
  MatrixTypes types;
  bool fused = false;
  int64_t units_per_panel = 0;  // hidden units per first-stage panel: 32 fused, else 64
  PanelSet first;
  PanelSet gate;  // gated blocks that are not fused only
  PanelSet down;
  Matrix gate_bias;  // [1][H]; empty without bias or gate
  Matrix up_bias;    // [1][H]; empty without bias
  Matrix down_bias;  // [1][D]; empty without bias
  // Activation-sparse decode (SparseDecode; gate_first_forward.cpp), when enabled.
  SparseDecode sparse;
  // The most channels a token may keep and take the sparse path: their rows' bytes (up's and
  // down's transpose; with a down threshold down's counted at sparse.down_kept_share) at most
  // sparse.max_kept_share of up's and down's stored bytes.
  int64_t sparse_kept_limit = 0;
  // A hidden channel's weights side by side: channel j's up row (up's row j, D values) then
  // its down row (down's column j, D values: down transposed), each in sparse_rows_type of its
  // stored type (f32, f16, bf16 as stored; a block type requantised to q8_0 along D) — so a
  // skipped channel is bytes never read, and a kept one is one run of memory whose halves a
  // thread reads close together (a group's kept up rows, then their down rows: below) —
  // 1.1–1.2× faster than up's and down's rows in matrices of their own, read the same way
  // (docs/performance.md, "Sparse decode"). 2-matrix blocks hold down rows only (their up
  // values are the gate's: all computed).
  struct ChannelRows {
    WeightType up_type = WeightType::f32, down_type = WeightType::f32;
    int64_t up_bytes = 0, down_bytes = 0;  // a row of each; up_bytes 0 without up rows
    // [H][up_bytes + down_bytes] bytes in 64-byte-aligned floats, which a large block gets on
    // huge pages (AlignedFloats) as its panels do: a kept channel's rows are a few KB at a
    // scattered address, and on 4 KiB pages nearly every one of them missed the TLB.
    AlignedFloats storage;
    int64_t size_bytes = 0;
    void allocate(int64_t H) {
      size_bytes = H * stride();
      storage = AlignedFloats((size_bytes + 3) / 4);
    }
    int64_t stride() const { return up_bytes + down_bytes; }
    std::byte* up() { return reinterpret_cast<std::byte*>(storage.data()); }
    const std::byte* up() const { return reinterpret_cast<const std::byte*>(storage.data()); }
    const std::byte* down() const { return up() + up_bytes; }
  };
  ChannelRows channel_rows;
  // Down's sum over the kept channels is cut at fixed groups of down_group channels (the last
  // may be smaller): a group's sum is one chain over its kept channels in order, a thread
  // takes whole groups (their up rows' dots and down rows' sum), and y adds the groups' sums
  // in group order — the same bits whatever the threads, the groups being fixed by H alone.
  // down_group: enough channels that a thread's share of a group's rows is a long read and
  // the groups' sums ([T][D] each, added once) stay small beside it, few enough that many
  // threads still find groups to share.
  static constexpr int64_t down_group = 256;
  int64_t down_groups() const { return (config.hidden + down_group - 1) / down_group; }
  // The forward computes every gate value of a token before any of its up values (the
  // Gaussian top-k needs them all; sparse decode needs them to choose the channels): gate
  // and up in panel sets of their own then, never fused.
  bool gate_first() const { return sparse.enabled || config.gate_sparsity > 0; }
};

}  // namespace ffn
