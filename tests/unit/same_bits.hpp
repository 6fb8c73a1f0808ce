// Bit-for-bit equality of two matrices: the same shape and the same bytes.
#pragma once

#include <cstring>

#include "ffn/tensor.hpp"

namespace ffn::test {

inline bool same_bits(const Matrix& a, const Matrix& b) {
  // memcmp must not see the null data of an empty matrix (undefined even for 0 bytes).
  return a.rows() == b.rows() && a.cols() == b.cols() &&
         (a.size() == 0 || std::memcmp(a.data(), b.data(), sizeof(float) * size_t(a.size())) == 0);
}

}  // namespace ffn::test
