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

#include <cstddef>
#include <cstdint>

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
  // Activation-sparse decode (SparseDecode; sparse_decode.cpp), when enabled: up's rows as
  // stored, [H][D] in up's type, and down transposed, [H][D] in down's type — a hidden
  // channel's weights contiguous in each, so a skipped channel is bytes never read.
  SparseDecode sparse;
  StoredMatrix up_rows;
  StoredMatrix down_rows;
  // The forward computes every gate value of a token before any of its up values (the
  // Gaussian top-k needs them all; sparse decode needs them to choose the channels): gate
  // and up in panel sets of their own then, never fused.
  bool gate_first() const { return sparse.enabled || config.gate_sparsity > 0; }
};

}  // namespace ffn
