// Copying f32 operands into the layout of kernels::f32_panel_gemm, a panel [K][64] floats,
// contiguous, and transposing (internal; backward packs per call). Weight types lay their
// rows into panels through the weight-type table (core/weight_type_table.cpp).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "kernels/kernels.hpp"

namespace ffn::panels {

inline constexpr int64_t kW = kernels::kPanelWidth;

// panel[k][j] = src[k·ld + j] for j < cols (≤ 64), 0 for cols ≤ j < 64; k < rows.
// A block of columns of a row-major matrix: W_down[:, chunk], x[:, block].
inline void copy_columns(const float* src, int64_t ld, int64_t rows, int64_t cols, float* panel) {
  for (int64_t k = 0; k < rows; ++k) {
    std::copy(src + k * ld, src + k * ld + cols, panel + k * kW);
    std::fill(panel + k * kW + cols, panel + (k + 1) * kW, 0.0f);
  }
}

// dst[c][r] = src[r·ld + c] for r < rows, c < cols; dst rows ld_dst apart.
inline void transpose(const float* src, int64_t ld, int64_t rows, int64_t cols, float* dst, int64_t ld_dst) {
  constexpr int64_t kTile = 32;
  for (int64_t r0 = 0; r0 < rows; r0 += kTile)
    for (int64_t c0 = 0; c0 < cols; c0 += kTile) {
      const int64_t r1 = std::min(rows, r0 + kTile), c1 = std::min(cols, c0 + kTile);
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = c0; c < c1; ++c) dst[c * ld_dst + r] = src[r * ld + c];
    }
}

}  // namespace ffn::panels
