// The weight-type table (internal): for every entry of the list (ffn/weight_type_list.hpp) its
// geometry, its codec, the offsets of its block scales, and how its rows are laid into the
// forward kernels' panels. Packing, loading and writing files, accounting, `ffn types`, the
// benches and the tests read it; each ISA's kernel table (kernels/kernels.hpp) holds the panel
// kernel of each type. Nothing else names a type. Indexed by the enum.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "ffn/weight_type.hpp"
#include "kernels/kernels.hpp"
#include "kernels/panel_family.hpp"

namespace ffn {

struct WeightTypeTraits {
  WeightTypeInfo info;
  kernels::PanelFamily panels;
  kernels::QFormat format;  // the integer families' form of the values (kernels/q_format.hpp)
  // Reference conversions of one row of n values, n a multiple of the block, in the stored
  // layout (ggml's, byte for byte): exact widening, and the quantiser that rounds as ggml's
  // reference quantiser does (ffn::Error on a non-finite value or an overflowing scale of a
  // block type). (core/codecs.hpp)
  void (*to_f32)(const std::byte* row, float* out, int64_t n);
  void (*from_f32)(const float* x, std::byte* row, int64_t n);
  // Byte offsets of the binary16 scales in a block (d, and dmin where the type has one);
  // −1: none. MXFP4's d is an e8m0 byte (format.e8m0), NaN when 0xFF.
  int scale_fields[2] = {-1, -1};

  // Bytes of one panel of 64 rows of K weights (weights only).
  int64_t panel_bytes(int64_t K) const;
  // Lays rows ≤ 64 − j0 rows of K weights, row r at src + r·row_bytes in the stored layout,
  // into columns j0 … of a panel (the kernels' layout; the same bits on every ISA; k's
  // rows_to_panel32 / 16 move the element types' values).
  void rows_into_panel(const kernels::KernelTable& k, const std::byte* src, int64_t row_bytes, int64_t rows, int64_t K,
                       std::byte* panel, int64_t j0) const;
};

// Throws ffn::Error naming `what`, the row and the block when a block of the stored rows
// (rows × cols weights of type t, row_bytes apart) has a non-finite binary16 scale (or an
// e8m0 scale 0xFF, the OCP format's NaN): a file whose scales are NaN or Inf would otherwise
// give NaN outputs without a word.
void check_block_scales(WeightType t, const std::byte* data, int64_t rows, int64_t cols, const std::string& what);
// Blocks whose scales check_block_scales has read, over the process: what the tests count to
// see that a checkpoint's scales are checked once.
int64_t block_scales_checked();

// The weight type of a GGUF tensor's ggml type number, if ffn runs matrices of it.
bool weight_type_from_gguf(uint32_t gguf_type, WeightType& out);

// Every entry, weight types and activation formats, indexed by WeightType.
std::span<const WeightTypeTraits> weight_type_table();
const WeightTypeTraits& weight_type_traits(WeightType t);

}  // namespace ffn
