// ffn._core additions for ffn.torch (python/ffn/torch/): a training forward that keeps its
// cache for the backward torch.autograd calls later (Block.backward runs forward_train again
// inside one call), and gradients handed to NumPy without a copy (each array owns its
// ffn::Matrix through a capsule). Thin, like module.cpp: shapes checked, the GIL released.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "ffn/ffn.hpp"
#include "forward_binding.hpp"

namespace py = pybind11;

namespace {

using ffn::python::FloatArray;
using ffn::python::pool_for;
using ffn::python::tokens_of;

// A NumPy array over m's storage (a vector for a bias), owning it.
py::array owning(ffn::Matrix&& m, bool vector) {
  auto* held = new ffn::Matrix(std::move(m));
  py::capsule owner(held, [](void* p) { delete static_cast<ffn::Matrix*>(p); });
  if (vector) return py::array_t<float>({held->cols()}, {int64_t(sizeof(float))}, held->data(), owner);
  return py::array_t<float>({held->rows(), held->cols()},
                            {held->cols() * int64_t(sizeof(float)), int64_t(sizeof(float))}, held->data(), owner);
}

}  // namespace

void add_torch_bindings(py::module_& m) {
  py::class_<ffn::ForwardCache>(m, "ForwardCache",
                                "What forward_train keeps for backward_from_cache (opaque; one per forward)");

  // y = block(x) for x float32 [T, d] (or [d]), and the cache its backward needs (recompute: x only).
  m.def(
      "forward_train",
      [](const ffn::Block& block, const FloatArray& x, bool recompute, std::optional<int> threads) {
        const int64_t D = block.config().d_model, T = tokens_of(x, D, "x");
        py::array_t<float> y = ffn::python::like(x);
        auto cache = std::make_unique<ffn::ForwardCache>();
        const float* xp = x.data();
        float* yp = y.mutable_data();
        {
          py::gil_scoped_release release;
          ffn::forward_train(block, {xp, T, D, D}, {yp, T, D, D}, *cache, recompute, pool_for(threads));
        }
        return py::make_tuple(y, std::move(cache));
      },
      py::arg("block"), py::arg("x"), py::arg("recompute") = false, py::arg("threads") = py::none());

  // Gradients of sum(dy * block(x)) from the cache of forward_train(block, x): {"x": dx,
  // "gate.weight": …} like Block.backward, from fresh zero gradients. The block's weights and
  // x must be those of that forward.
  m.def(
      "backward_from_cache",
      [](const ffn::Block& block, const FloatArray& x, const ffn::ForwardCache& cache, const FloatArray& dy,
         std::optional<int> threads) {
        const int64_t D = block.config().d_model, T = tokens_of(x, D, "x");
        if (tokens_of(dy, D, "dy") != T || dy.ndim() != x.ndim()) throw ffn::Error("dy must have the shape of x");
        if (cache.tokens != T) throw ffn::Error("the cache is of a forward of " + std::to_string(cache.tokens) +
                                                " tokens, x has " + std::to_string(T));
        ffn::Matrix dx(T, D);
        ffn::BlockGradients grads = ffn::zero_gradients(block.config());
        const float *xp = x.data(), *dyp = dy.data();
        {
          py::gil_scoped_release release;
          ffn::backward(block, {xp, T, D, D}, cache, {dyp, T, D, D}, dx.view(), grads, pool_for(threads));
        }
        py::dict out;
        out["x"] = owning(std::move(dx), x.ndim() == 1);  // dx of x's shape
        std::pair<const char*, ffn::Matrix*> named[] = {
            {"gate.weight", &grads.gate}, {"gate.bias", &grads.gate_bias}, {"up.weight", &grads.up},
            {"up.bias", &grads.up_bias},  {"down.weight", &grads.down},    {"down.bias", &grads.down_bias}};
        for (auto& [name, g] : named)
          if (!g->empty()) out[name] = owning(std::move(*g), std::string(name).ends_with(".bias"));
        return out;
      },
      py::arg("block"), py::arg("x"), py::arg("cache"), py::arg("dy"), py::arg("threads") = py::none());
}
