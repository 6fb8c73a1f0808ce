// The check every reader of a tensor window makes (internal): rows [r0, r1) and columns
// [c0, c1) of a tensor seen as [rows][cols] must lie within it.
#pragma once

#include <cstdint>
#include <string>

#include "ffn/error.hpp"

namespace ffn::io {

// Throws ffn::Error naming the file, the tensor, its shape and the window when the window
// is not within the tensor.
inline void check_window(const std::string& path, const std::string& name, int64_t rows, int64_t cols, int64_t r0,
                         int64_t r1, int64_t c0, int64_t c1) {
  if (r0 < 0 || r0 > r1 || r1 > rows || c0 < 0 || c0 > c1 || c1 > cols)
    throw Error(path + ": tensor '" + name + "' has " + std::to_string(rows) + " rows of " + std::to_string(cols) +
                "; rows [" + std::to_string(r0) + ", " + std::to_string(r1) + ") and columns [" + std::to_string(c0) +
                ", " + std::to_string(c1) + ") are not within it");
}

}  // namespace ffn::io
