// The q8_0 rows that activation-sparse decode's kernels read (kernels.hpp: rows_dot_q8_0,
// and rows_axpy on q8_0; Panels::channel_rows holds its q8_0 rows so): a row of K values (K a
// multiple of 32, nb = K / 32 blocks) holds the bytes of ggml's block_q8_0 row, 34·nb, in
// another order — first the nb binary16 scales d (block b's at byte 2b), then the nb·32 int8
// codes q (block b's at byte 2·nb + 32b). Value k of the row is d[k / 32]·q[k].
//
// Why not ggml's interleaved blocks: with the codes contiguous a vector load spans blocks,
// and with the scales contiguous 8 or 16 of a row are converted in one instruction. In ggml's
// order the dot spent most of a block on its rows' scales, one scalar load, conversion and
// multiply a block and row (docs/performance.md, "Sparse decode").
//
// Static functions: a copy for each level's file (the levels' files are compiled with
// different flags: none may share an inline function's one copy).
#pragma once

#include <cstddef>
#include <cstdint>

namespace ffn::kernels::q8_0_split {

inline constexpr int64_t kBlock = 32;

// The bytes of a row's scales (the codes' offset in the row).
static constexpr int64_t scale_bytes(int64_t K) { return K / kBlock * 2; }

// Block b's binary16 scale and first code in a row of K values.
static inline const std::byte* scale(const std::byte* row, int64_t b) { return row + 2 * b; }
static inline const int8_t* codes(const std::byte* row, int64_t K, int64_t b) {
  return reinterpret_cast<const int8_t*>(row + scale_bytes(K) + kBlock * b);
}

}  // namespace ffn::kernels::q8_0_split
