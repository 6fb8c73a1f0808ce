// The forward of any block kind for Python: x checked, y allocated, the GIL released.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ffn/ffn.hpp"

namespace ffn::python {

namespace py = pybind11;
using FloatArray = py::array_t<float, py::array::c_style | py::array::forcecast>;

inline int64_t d_model_of(const Block& b) { return b.config().d_model; }
inline int64_t d_model_of(const InferenceBlock& b) { return b.config().d_model; }
inline int64_t d_model_of(const MoeBlock& b) { return b.config().d_model(); }

// x: float32 [T, d] or [d] (converted, without a copy when it already is float32 C-order).
// Block, InferenceBlock or MoeBlock.
template <class AnyBlock>
inline py::array forward(const AnyBlock& block, const FloatArray& x, std::optional<int> threads) {
  const int64_t D = d_model_of(block);
  if (x.ndim() != 1 && x.ndim() != 2)
    throw ffn::Error("x must have shape (T, " + std::to_string(D) + ") or (" + std::to_string(D) + ",), got " +
                     std::to_string(x.ndim()) + " dimensions");
  const int64_t T = x.ndim() == 2 ? x.shape(0) : 1;
  const int64_t cols = x.shape(x.ndim() - 1);
  if (cols != D)
    throw ffn::Error("x has " + std::to_string(cols) + " features; the block's d_model is " + std::to_string(D));
  std::vector<py::ssize_t> shape(x.shape(), x.shape() + x.ndim());
  py::array_t<float> y(shape);
  const float* xp = x.data();
  float* yp = y.mutable_data();
  {
    py::gil_scoped_release release;
    std::unique_ptr<ffn::ThreadPool> pool;
    if (threads) pool = std::make_unique<ffn::ThreadPool>(*threads);
    block.forward({xp, T, D, D}, {yp, T, D, D}, pool.get());
  }
  return y;
}

// A router's choice as NumPy: (experts int32 [T, k] best first, weights float32 [T, k]).
inline py::tuple routing_arrays(const Routing& r) {
  py::array_t<int32_t> experts({r.tokens, r.k});
  py::array_t<float> weights({r.tokens, r.k});
  std::copy(r.experts.begin(), r.experts.end(), experts.mutable_data());
  std::copy(r.weights.begin(), r.weights.end(), weights.mutable_data());
  return py::make_tuple(experts, weights);
}

}  // namespace ffn::python
