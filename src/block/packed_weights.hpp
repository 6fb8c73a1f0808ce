// The weights of a packed block (Block::packed): every matrix as consecutive panels of
// kernels::kPanelWidth (64) columns, each panel [K][64] elements — the k-th values of its
// 64 weight rows side by side — which the panel kernels stream as one linear array.
// Elements are f32, or bf16 / f16 as stored (uint16, widened exactly by the kernel).
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
  WeightType type = WeightType::f32;  // f32, bf16 or f16
  int64_t units_per_panel = 0;        // hidden units per first-stage panel: 32 gated, 64 otherwise
  int64_t first_panels = 0;
  int64_t down_panels = 0;
  // first_panels · D · 64 and down_panels · H · 64 elements. The storage is 64-byte-aligned
  // floats; 16-bit panels use the first half of it as uint16 values (written and read only
  // as uint16).
  AlignedFloats first;
  AlignedFloats down;
  Matrix gate_bias;  // [1][H]; empty without bias or gate
  Matrix up_bias;    // [1][H]; empty without bias
  Matrix down_bias;  // [1][D]; empty without bias

  int64_t elem_bytes() const { return type == WeightType::f32 ? 4 : 2; }
  const std::byte* first_panel(int64_t p, int64_t D) const { return panel(first, p * D); }
  const std::byte* down_panel(int64_t p, int64_t H) const { return panel(down, p * H); }

 private:
  const std::byte* panel(const AlignedFloats& a, int64_t rows_before) const {
    return reinterpret_cast<const std::byte*>(a.data()) + rows_before * kernels::kPanelWidth * elem_bytes();
  }
};

// Panels of an f32 block's weights, or of a bf16 / f16 block's stored matrices.
PackedWeights pack_weights(const BlockConfig& config, const BlockWeights& w, ThreadPool& pool);
PackedWeights pack_weights(const BlockConfig& config, const TypedWeights& w, ThreadPool& pool);

}  // namespace ffn
