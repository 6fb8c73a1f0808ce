// The weights of a packed block (Block::packed): every matrix as consecutive panels of
// kernels::kPanelWidth (64) columns, each panel [K][64] elements — the k-th values of its
// 64 weight rows side by side — which the panel kernels stream as one linear array.
// Elements are f32, or bf16 / f16 as stored (uint16; bf16 panels hold k in pairs, the
// layout AVX512_BF16's dot product reads — kernels.hpp);
// q8_0 / q4_0 panels hold the stored blocks regrouped for the integer panel kernel
// (layout in src/kernels/kernels.hpp).
//
//   first: the products with x (K = D). Gated blocks: panel p holds gate rows 32p … 32p+31
//          in columns 0–31 and up rows 32p … 32p+31 in columns 32–63, so one pass gives
//          both halves of 32 hidden units. 2-matrix blocks: up rows 64p … 64p+63.
//   down:  panel p holds W_down rows 64p … 64p+63 (K = H).
// Rows past the end of a matrix are zero in the last panel (their outputs are dropped).
#pragma once

#include <cstddef>
#include <cstdint>

#include "ffn/block.hpp"
#include "ffn/tensor.hpp"
#include "kernels/kernels.hpp"

namespace ffn {

struct PackedWeights {
  WeightType type = WeightType::f32;
  int64_t units_per_panel = 0;  // hidden units per first-stage panel: 32 gated, 64 otherwise
  int64_t first_panels = 0;
  int64_t down_panels = 0;
  int64_t first_panel_bytes = 0;  // one panel over K = D
  int64_t down_panel_bytes = 0;   // one panel over K = H
  // The panels, consecutive. The storage is 64-byte-aligned floats; 16-bit and integer
  // panels use it as bytes (written and read only through their own type).
  AlignedFloats first;
  AlignedFloats down;
  Matrix gate_bias;  // [1][H]; empty without bias or gate
  Matrix up_bias;    // [1][H]; empty without bias
  Matrix down_bias;  // [1][D]; empty without bias

  const std::byte* first_panel(int64_t p) const { return bytes(first) + p * first_panel_bytes; }
  const std::byte* down_panel(int64_t p) const { return bytes(down) + p * down_panel_bytes; }

 private:
  static const std::byte* bytes(const AlignedFloats& a) { return reinterpret_cast<const std::byte*>(a.data()); }
};

// Panels of an f32 block's weights, or of a bf16 / f16 / q8_0 / q4_0 block's stored
// matrices (the stored values, regrouped).
PackedWeights pack_weights(const BlockConfig& config, const BlockWeights& w, ThreadPool& pool);
PackedWeights pack_weights(const BlockConfig& config, const TypedWeights& w, ThreadPool& pool);

}  // namespace ffn
