// Windows of a stored tensor as f32 (internal). Every reader of tensors as f32 — GgufFile,
// SafetensorsFile and the checkpoint loader's TensorSource — decodes through read_window, so
// a window is cut and converted in one place, by the weight-type table's exact widening.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "ffn/error.hpp"
#include "ffn/weight_type.hpp"

namespace ffn::io {

// Throws ffn::Error naming the file, the tensor, its shape and the window when rows [r0, r1)
// and columns [c0, c1) of a tensor seen as [rows][cols] are not within it.
inline void check_window(const std::string& path, const std::string& name, int64_t rows, int64_t cols, int64_t r0,
                         int64_t r1, int64_t c0, int64_t c1) {
  if (r0 < 0 || r0 > r1 || r1 > rows || c0 < 0 || c0 > c1 || c1 > cols)
    throw Error(path + ": tensor '" + name + "' has " + std::to_string(rows) + " rows of " + std::to_string(cols) +
                "; rows [" + std::to_string(r0) + ", " + std::to_string(r1) + ") and columns [" + std::to_string(c0) +
                ", " + std::to_string(c1) + ") are not within it");
}

// Rows [r0, r1) and columns [c0, c1) of a tensor of weight type `type` seen as [rows][cols]
// — its rows back to back at data in the type's row layout (ggml's for block types; any
// alignment) — as f32 into out ([r1 − r0][c1 − c0] floats, dense). Only the blocks the
// window touches are decoded: block-aligned columns straight into out, others through the
// blocks that cover them. The window must lie within the tensor (check_window) and cols be
// whole blocks of the type (the readers check both at open).
void read_window(WeightType type, const std::byte* data, int64_t cols, int64_t r0, int64_t r1, int64_t c0, int64_t c1,
                 float* out);

}  // namespace ffn::io
