// NumPy .npy files of float32 in C order (format versions 1.0, 2.0 and 3.0 read; 1.0
// written). Untrusted input: the header is parsed strictly and every size checked
// against the file before any allocation.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ffn/tensor.hpp"

namespace ffn {

struct NpyArray {
  std::vector<int64_t> shape;  // () for a scalar
  AlignedFloats data;          // product(shape) floats, C order
};

// Accepts dtype '<f4' (little-endian float32) with fortran_order False; anything else
// is an ffn::Error naming the file and the problem.
NpyArray read_npy(const std::string& path);

// Writes atomically: a temporary file beside `path`, then rename.
void write_npy(const std::string& path, const std::vector<int64_t>& shape, const float* data);

}  // namespace ffn
