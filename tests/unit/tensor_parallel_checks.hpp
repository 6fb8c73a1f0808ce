// Checks of a split block against the whole one, shared by the in-process slice tests
// (test_distributed.cpp) and the tests run under mpirun (tests/mpi/).
//
// Tolerance: the double-precision oracle's rigorous bound for any f32 evaluation whose
// sums of n terms err by at most n·u·Σ|terms| (u = 2⁻²⁴; block.hpp, backward.hpp). A
// split sum — each rank's partial over its h_r hidden units, then P partials added — errs
// by at most (max h_r + P − 1)·u·Σ|terms| ≤ H·u·Σ|terms| (since max h_r + P − 1 ≤ H for
// any split with a unit on every rank), so it must satisfy the same bound as one process;
// a lost or doubled slice, a misplaced column or a bias added twice misses it by orders of
// magnitude. Weight gradients of a slice are sums over tokens exactly as in one process.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "block/reference.hpp"
#include "ffn/backward.hpp"
#include "ffn/block.hpp"
#include "ffn/distributed.hpp"
#include "ffn/tensor.hpp"

namespace ffn::test {

// Collects the elements outside their bound and reports them as one failure: how many, and
// the first few.
class BoundReport {
 public:
  explicit BoundReport(std::string what) : what_(std::move(what)) {}
  // Element [r][c] of `name`.
  void check(double got, double want, double bound, const char* name, int64_t r, int64_t c) {
    if (std::abs(got - want) <= bound) return;  // NaN fails
    if (++count_ <= 3)
      first_ << "\n  " << name << "[" << r << "][" << c << "] = " << got << ", reference " << want << " ± " << bound;
  }
  ~BoundReport() {
    if (count_ > 0) ADD_FAILURE() << what_ << ": " << count_ << " elements outside the bound" << first_.str();
  }

 private:
  std::string what_;
  int64_t count_ = 0;
  std::ostringstream first_;
};

// y [T][D] against the oracle of the whole block, within its bound.
inline void expect_forward_within_bound(const Block& full, ConstMatrixView x, ConstMatrixView y,
                                        const std::string& what) {
  const int64_t D = full.config().d_model;
  std::vector<double> ref(static_cast<size_t>(D)), bound(static_cast<size_t>(D));
  BoundReport report(what);
  for (int64_t t = 0; t < x.rows; ++t) {
    reference_forward_token(full, x.row(t), ref.data(), bound.data());
    for (int64_t i = 0; i < D; ++i) report.check(y.row(t)[i], ref[size_t(i)], bound[size_t(i)], "y", t, i);
  }
}

// Reference gradients of the whole block for upstream dy, and dx's values and bounds.
struct ReferenceBackward {
  ReferenceGradients grads;
  std::vector<double> dx, dx_bound;  // [T][D]
  ReferenceBackward(const Block& full, ConstMatrixView x, ConstMatrixView dy)
      : grads(full.config()), dx(size_t(x.rows * x.cols)), dx_bound(size_t(x.rows * x.cols)) {
    for (int64_t t = 0; t < x.rows; ++t)
      reference_backward_token(full, x.row(t), dy.row(t), dx.data() + t * x.cols, grads, dx_bound.data() + t * x.cols);
  }
};

inline void expect_dx_within_bound(const ReferenceBackward& ref, ConstMatrixView dx, const std::string& what) {
  BoundReport report(what);
  for (int64_t t = 0; t < dx.rows; ++t)
    for (int64_t i = 0; i < dx.cols; ++i) {
      const size_t k = size_t(t * dx.cols + i);
      report.check(dx.row(t)[i], ref.dx[k], ref.dx_bound[k], "dx", t, i);
    }
}

// A slice's gradient of one parameter against the whole block's reference: element (r, c)
// of the slice is element (r + row0, c + col0) of the whole, whose row length is `cols`.
inline void expect_slice_gradient(const ReferenceBackward& ref, const ReferenceGradient& whole, int64_t cols,
                                  const Matrix& got, int64_t row0, int64_t col0, const std::string& what) {
  BoundReport report(what);
  for (int64_t r = 0; r < got.rows(); ++r)
    for (int64_t c = 0; c < got.cols(); ++c) {
      const int64_t i = (r + row0) * cols + (c + col0);
      report.check(got.row(r)[c], whole.value[size_t(i)], ref.grads.bound(whole, i), "", r, c);
    }
}

// Every gradient of a rank's slice [s.begin, s.end) against the whole block's reference.
inline void expect_slice_gradients(const ReferenceBackward& ref, const BlockConfig& full, HiddenSlice s,
                                   const BlockGradients& g, const std::string& what) {
  const int64_t D = full.d_model, H = full.hidden;
  if (full.variant.gated) expect_slice_gradient(ref, ref.grads.gate, D, g.gate, s.begin, 0, what + " dW_gate");
  expect_slice_gradient(ref, ref.grads.up, D, g.up, s.begin, 0, what + " dW_up");
  expect_slice_gradient(ref, ref.grads.down, H, g.down, 0, s.begin, what + " dW_down");
  if (full.bias) {
    if (full.variant.gated)
      expect_slice_gradient(ref, ref.grads.gate_bias, H, g.gate_bias, 0, s.begin, what + " db_gate");
    expect_slice_gradient(ref, ref.grads.up_bias, H, g.up_bias, 0, s.begin, what + " db_up");
    expect_slice_gradient(ref, ref.grads.down_bias, D, g.down_bias, 0, 0, what + " db_down");
  }
}

}  // namespace ffn::test
