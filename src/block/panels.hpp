// Copying operands into the layout of kernels::f32_panel_gemm: a panel is [K][64] floats,
// contiguous (internal; used by packing at load and by backward, which packs per call).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "ffn/quant.hpp"

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

// `rows` (≤ 64 − j0) rows of K bf16 weights (row r at src + r·ld_bytes) laid into columns
// j0 … of a bf16 pair panel: the pairs of k 32 bits at a time by `to_panel` (the active
// kernels' rows_to_panel32), an odd K's last weight beside a zero padding weight.
inline void bf16_rows_into_pairs(kernels::RowsToPanel32 to_panel, const std::byte* src, int64_t ld_bytes,
                                 int64_t rows, int64_t K, uint16_t* panel, int64_t j0) {
  to_panel(rows, K / 2, src, ld_bytes, reinterpret_cast<uint32_t*>(panel), j0);
  if (K % 2 == 0) return;
  for (int64_t r = 0; r < rows; ++r) {
    std::memcpy(panel + kernels::bf16_panel_index(K - 1, j0 + r), src + r * ld_bytes + 2 * (K - 1), 2);
    panel[kernels::bf16_panel_index(K, j0 + r)] = 0;
  }
}

// Rows [r0, r0 + rows) (rows ≤ 64 − j0) of a q8_0 / q4_0 matrix laid into rows j0 … of a
// q panel (kernels.hpp: scales, then groups of 4 weights of every row as unsigned bytes).
// `src` is the matrix's first byte, rows row_bytes apart, K weights a row.
inline void q_rows_into(WeightType type, const std::byte* src, int64_t row_bytes, int64_t r0, int64_t rows, int64_t K,
                        std::byte* panel, int64_t j0) {
  const int64_t blocks = K / kQuantBlock, out_bytes = kernels::q_panel_block_bytes(type);
  for (int64_t r = 0; r < rows; ++r) {
    const std::byte* row = src + (r0 + r) * row_bytes;
    const int64_t j = j0 + r;
    for (int64_t b = 0; b < blocks; ++b) {
      auto* out = reinterpret_cast<uint8_t*>(panel + b * out_bytes);
      uint8_t* q = out + kernels::kQPanelScaleBytes;
      if (type == WeightType::q8_0) {
        BlockQ8_0 blk;
        std::memcpy(&blk, row + b * int64_t(sizeof(BlockQ8_0)), sizeof blk);
        std::memcpy(out + 2 * j, &blk.d, 2);
        for (int i = 0; i < kQuantBlock; ++i) q[(i / 4) * 256 + 4 * j + i % 4] = uint8_t(blk.qs[i] + 128);
      } else {
        BlockQ4_0 blk;
        std::memcpy(&blk, row + b * int64_t(sizeof(BlockQ4_0)), sizeof blk);
        std::memcpy(out + 2 * j, &blk.d, 2);
        // ggml: weight i < 16 is the low nibble of qs[i], weight i ≥ 16 the high nibble of
        // qs[i − 16]; here group g < 4 takes weights 4g + l (low) and 4(g + 4) + l (high).
        auto nib = [&](int i) { return i < 16 ? blk.qs[i] & 0x0F : blk.qs[i - 16] >> 4; };
        for (int g = 0; g < 4; ++g)
          for (int l = 0; l < 4; ++l) q[g * 256 + 4 * j + l] = uint8_t(nib(4 * g + l) | nib(4 * (g + 4) + l) << 4);
      }
    }
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
