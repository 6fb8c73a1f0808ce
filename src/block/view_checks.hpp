// Argument checks of the views the forwards and backward take (internal).
#pragma once

#include <cstdint>
#include <string>

#include "ffn/error.hpp"
#include "ffn/tensor.hpp"

namespace ffn::views {

// A [rows][D] view with a sane stride and data; ffn::Error naming the view otherwise.
inline void check_view(const std::string& name, ConstMatrixView v, int64_t D) {
  if (v.cols != D)
    throw Error(name + " has " + std::to_string(v.cols) + " columns; the block's d_model is " + std::to_string(D));
  if (v.rows < 0) throw Error(name + " has a negative number of rows (" + std::to_string(v.rows) + ")");
  if (v.stride < v.cols)
    throw Error(name + " has row stride " + std::to_string(v.stride) + " < columns " + std::to_string(v.cols));
  if (v.rows > 0 && !v.data) throw Error(name + " has no data");
}

inline void check_same_rows(const std::string& a, ConstMatrixView va, const std::string& b, ConstMatrixView vb) {
  if (va.rows != vb.rows)
    throw Error(a + " has " + std::to_string(va.rows) + " rows but " + b + " has " + std::to_string(vb.rows));
}

// Whether the memory spans of two checked, non-empty views intersect.
inline bool overlap(ConstMatrixView a, ConstMatrixView b) {
  if (a.rows == 0 || b.rows == 0) return false;
  const float* a_end = a.row(a.rows - 1) + a.cols;
  const float* b_end = b.row(b.rows - 1) + b.cols;
  return a.data < b_end && b.data < a_end;
}

// The checks of every forward: x and y [T][D] views with the same T that do not overlap.
inline void check_forward_views(ConstMatrixView x, ConstMatrixView y, int64_t D) {
  check_view("input x", x, D);
  check_view("output y", y, D);
  check_same_rows("input x", x, "output y", y);
  if (overlap(x, y)) throw Error("output y overlaps input x");
}

}  // namespace ffn::views
