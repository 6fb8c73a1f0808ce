// NumPy access to a block's f32 parameters: writable views that share the parameter's
// memory (keeping their owner alive, as torch parameters do), copies, and assignment with
// the shape checked. Biases and other single rows ([1][n] matrices) are seen as [n].
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <string>
#include <vector>

#include "ffn/ffn.hpp"
#include "forward_binding.hpp"

namespace ffn::python {

inline std::vector<int64_t> python_shape(const Matrix& m, bool row) {
  return row ? std::vector<int64_t>{m.cols()} : std::vector<int64_t>{m.rows(), m.cols()};
}

// A writable view of m; owner is the Python object that keeps m alive.
inline py::array array_view(py::object owner, Matrix& m, bool row) {
  if (row) return py::array_t<float>({m.cols()}, {int64_t(sizeof(float))}, m.data(), owner);
  return py::array_t<float>({m.rows(), m.cols()}, {m.cols() * int64_t(sizeof(float)), int64_t(sizeof(float))},
                            m.data(), owner);
}

// A copy of m (e.g. a gradient, which lives only as long as the call that made it).
inline py::array array_copy(const Matrix& m, bool row) {
  py::array_t<float> out(python_shape(m, row));
  std::copy(m.data(), m.data() + m.size(), out.mutable_data());
  return out;
}

// m ← value; ffn::Error naming the parameter when the shapes differ.
inline void assign(Matrix& m, const FloatArray& value, bool row, const std::string& name) {
  const std::vector<int64_t> want = python_shape(m, row);
  const std::vector<int64_t> got(value.shape(), value.shape() + value.ndim());
  if (got != want) {
    auto str = [](const std::vector<int64_t>& s) {
      std::string out = "(";
      for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
      return out + (s.size() == 1 ? ",)" : ")");
    };
    throw ffn::Error("parameter '" + name + "' has shape " + str(want) + ", got an array of shape " + str(got));
  }
  std::copy(value.data(), value.data() + value.size(), m.data());
}

}  // namespace ffn::python
