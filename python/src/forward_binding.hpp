// What every block kind's binding shares: the tokens' shape check (the library's
// token_count), the thread pool a `threads=` call runs on, and the forward with x checked,
// y allocated and the GIL released.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <optional>
#include <vector>

#include "ffn/ffn.hpp"

namespace ffn::python {

namespace py = pybind11;
using FloatArray = py::array_t<float, py::array::c_style | py::array::forcecast>;

// T of x, float32 [T, D] or [D] (ffn::token_count: an ffn.Error naming `what` otherwise).
inline int64_t tokens_of(const FloatArray& x, int64_t D, const char* what) {
  const std::vector<int64_t> shape(x.shape(), x.shape() + x.ndim());
  return token_count(shape, D, what);
}

// A float32 array of x's shape (the output of a forward or a dx).
inline py::array_t<float> like(const FloatArray& x) {
  return py::array_t<float>(std::vector<py::ssize_t>(x.shape(), x.shape() + x.ndim()));
}

// The pool a call given `threads` runs on: nullptr (the library's default pool, one thread
// per core) when none is given; else the pool of that many threads, made at the first call
// that asks for it and kept for the process's life (python_pools.cpp), so that every later
// call with that count reuses its workers and their per-thread scratch.
ThreadPool* pool_for(std::optional<int> threads);

inline int64_t d_model_of(const Block& b) { return b.config().d_model; }
inline int64_t d_model_of(const InferenceBlock& b) { return b.config().d_model; }
inline int64_t d_model_of(const MoeBlock& b) { return b.config().d_model(); }

// y = block(x), x float32 [T, d] or [d] (converted, without a copy when it already is
// float32 C-order), y of x's shape. Block, InferenceBlock or MoeBlock.
template <class AnyBlock>
inline py::array forward(const AnyBlock& block, const FloatArray& x, std::optional<int> threads) {
  const int64_t D = d_model_of(block), T = tokens_of(x, D, "x");
  py::array_t<float> y = like(x);
  const float* xp = x.data();
  float* yp = y.mutable_data();
  {
    py::gil_scoped_release release;
    block.forward({xp, T, D, D}, {yp, T, D, D}, pool_for(threads));
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
