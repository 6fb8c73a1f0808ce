// Rows of the qsub types (ggml's layouts, core/ggml_blocks.hpp) laid into the integer panels
// of the kernels (kernels/qsub_panels.hpp), through each type's unpack<W> (codecs.hpp).
// Internal: the weight-type table's packing for the qsub family.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/codecs.hpp"
#include "ffn/weight_type.hpp"

namespace ffn {

// Lays rows ≤ 64 − j0 rows of K values (row r at src + r·row_bytes) into columns j0 … of a
// panel of K / block blocks.
using QSubRowsIntoPanel = void (*)(const std::byte* src, int64_t row_bytes, int64_t rows, int64_t K, std::byte* panel,
                                   int64_t j0);
// The packing of qsub type t (null for a type of another family).
QSubRowsIntoPanel qsub_rows_into_panel(WeightType t);

}  // namespace ffn
