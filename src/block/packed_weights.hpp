// The f32 weights of a packed block (Block::packed): every matrix as consecutive panels of
// kernels::kPanelWidth (64) columns, each panel [K][64] floats — the k-th values of its 64
// weight rows side by side — which f32_panel_gemm streams as one linear array.
//
//   first: the products with x (K = D). Gated blocks: panel p holds gate rows 32p … 32p+31
//          in columns 0–31 and up rows 32p … 32p+31 in columns 32–63, so one pass gives
//          both halves of 32 hidden units. 2-matrix blocks: up rows 64p … 64p+63.
//   down:  panel p holds W_down rows 64p … 64p+63 (K = H).
// Rows past the end of a matrix are zero in the last panel (their outputs are dropped).
#pragma once

#include <cstdint>

#include "ffn/block.hpp"
#include "ffn/tensor.hpp"
#include "kernels/kernels.hpp"

namespace ffn {

struct PackedWeights {
  int64_t units_per_panel = 0;  // hidden units per first-stage panel: 32 gated, 64 otherwise
  int64_t first_panels = 0;
  int64_t down_panels = 0;
  AlignedFloats first;  // first_panels · D · 64
  AlignedFloats down;   // down_panels · H · 64
  Matrix gate_bias;     // [1][H]; empty without bias or gate
  Matrix up_bias;       // [1][H]; empty without bias
  Matrix down_bias;     // [1][D]; empty without bias

  const float* first_panel(int64_t p, int64_t D) const { return first.data() + p * D * kernels::kPanelWidth; }
  const float* down_panel(int64_t p, int64_t H) const { return down.data() + p * H * kernels::kPanelWidth; }
};

PackedWeights pack_weights(const BlockConfig& config, const BlockWeights& w, ThreadPool& pool);

}  // namespace ffn
