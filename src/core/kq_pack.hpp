// K-quant rows (ggml's super-block layouts, core/ggml_blocks.hpp) laid into the integer
// panels of the kernels (kernels/kq_panels.hpp). Internal: the weight-type table's
// rows_into_panel for these types.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ffn/weight_type.hpp"

namespace ffn {

// One super-block of one row as the integers of kq_panels.hpp: value i of sub-block u is
// d·sc[u]·(q[i] − offset) − dmin·m[u] (d, dmin binary16 bits; m and dmin zero for the types
// without mins). For the codebook types q[i] is the nibble whose codebook entry is the value's
// code, and MXFP4's d its e8m0 byte.
struct SuperBlockInts {
  uint16_t d = 0, dmin = 0;
  int8_t sc[16] = {};
  uint8_t m[16] = {};
  uint8_t q[256] = {};
};
// Decodes block `block` (ggml's bytes) of type t (a K-quant, or Q4_1 / Q5_0 / Q5_1 in the
// same form: kernels/kq_panels.hpp); values beyond the type's block stay zero.
void unpack_superblock(WeightType t, const std::byte* block, SuperBlockInts& out);

// Lays rows ≤ 64 − j0 rows of K weights of K-quant type t (row r at src + r·row_bytes)
// into columns j0 … of a panel of K/256 super-blocks.
void kq_rows_into_panel(WeightType t, const std::byte* src, int64_t row_bytes, int64_t rows, int64_t K,
                        std::byte* panel, int64_t j0);

}  // namespace ffn
