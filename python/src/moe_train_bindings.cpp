// ffn._core.TrainableMoe: the training form of a MoE block for Python — its f32 parameters
// as NumPy views, forward, and backward (gradients of sum(dy·y) + balance·loss_b) into
// fresh zero gradients. Parameter names:
//   router.weight [E, D], router.bias [E], router.choice_bias [E] (no gradient),
//   shared_gate.weight [D], experts.<e>.{gate,up,down}.{weight,bias}, shared.{…}.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <vector>

#include "ffn/ffn.hpp"
#include "ffn/moe_train.hpp"
#include "forward_binding.hpp"
#include "tensor_access.hpp"

namespace py = pybind11;

namespace {

using ffn::python::FloatArray;
using ffn::python::like;
using ffn::python::pool_for;
using ffn::python::tokens_of;

struct Named {
  std::string name;
  ffn::Matrix* param;
  ffn::Matrix* grad;  // null: the parameter takes no gradient
  bool row;           // a [1][n] matrix seen as [n]
};

// Every parameter of m in a fixed order, paired with its gradient in g (when g is given).
std::vector<Named> named(ffn::TrainableMoe& m, ffn::MoeGradients* g) {
  std::vector<Named> out;
  auto add = [&](std::string name, ffn::Matrix& p, ffn::Matrix* grad, bool row) {
    if (!p.empty()) out.push_back({std::move(name), &p, grad, row});
  };
  add("router.weight", m.router.weight, g ? &g->router : nullptr, false);
  add("router.bias", m.router.bias, g ? &g->router_bias : nullptr, true);
  add("router.choice_bias", m.router.choice_bias, nullptr, true);
  add("shared_gate.weight", m.router.shared_gate, g ? &g->shared_gate : nullptr, true);
  auto add_block = [&](const std::string& prefix, ffn::Block& b, ffn::BlockGradients* bg) {
    auto& w = b.weights();
    add(prefix + "gate.weight", w.gate, bg ? &bg->gate : nullptr, false);
    add(prefix + "gate.bias", w.gate_bias, bg ? &bg->gate_bias : nullptr, true);
    add(prefix + "up.weight", w.up, bg ? &bg->up : nullptr, false);
    add(prefix + "up.bias", w.up_bias, bg ? &bg->up_bias : nullptr, true);
    add(prefix + "down.weight", w.down, bg ? &bg->down : nullptr, false);
    add(prefix + "down.bias", w.down_bias, bg ? &bg->down_bias : nullptr, true);
  };
  for (size_t e = 0; e < m.experts.size(); ++e)
    add_block("experts." + std::to_string(e) + ".", m.experts[e], g ? &g->experts.at(e) : nullptr);
  if (m.shared) add_block("shared.", *m.shared, g ? &*g->shared : nullptr);
  return out;
}

const Named& find(const std::vector<Named>& all, const std::string& name) {
  for (const auto& n : all)
    if (n.name == name) return n;
  std::string known;
  for (const auto& n : all) known += (known.empty() ? "" : ", ") + n.name;
  throw ffn::Error("the block has no parameter '" + name + "'; it has " + known);
}

py::array forward(const ffn::TrainableMoe& m, const FloatArray& x, std::optional<int> threads) {
  const int64_t D = m.config.d_model(), T = tokens_of(x, D, "x");
  py::array_t<float> y = like(x);
  const float* xp = x.data();
  float* yp = y.mutable_data();
  {
    py::gil_scoped_release release;
    ffn::MoeCache cache;
    ffn::forward_train(m, {xp, T, D, D}, {yp, T, D, D}, cache, pool_for(threads));
  }
  return y;
}

// {"x": dx, "<parameter>": gradient, …, "balance_loss": loss_b of this forward}.
py::dict backward(ffn::TrainableMoe& m, const FloatArray& x, const FloatArray& dy, double balance,
                  std::optional<int> threads) {
  const int64_t D = m.config.d_model(), T = tokens_of(x, D, "x");
  if (tokens_of(dy, D, "dy") != T || dy.ndim() != x.ndim()) throw ffn::Error("dy must have the shape of x");
  py::array_t<float> dx = like(x);
  ffn::MoeGradients grads = ffn::zero_gradients(m.config);
  const float *xp = x.data(), *dyp = dy.data();
  float* dxp = dx.mutable_data();
  double balance_loss = 0;
  {
    py::gil_scoped_release release;
    ffn::ThreadPool* pool = pool_for(threads);
    ffn::MoeCache cache;
    ffn::Matrix y(T, D);
    balance_loss = ffn::forward_train(m, {xp, T, D, D}, y.view(), cache, pool);
    ffn::backward(m, {xp, T, D, D}, cache, {dyp, T, D, D}, {dxp, T, D, D}, grads, balance, pool);
  }
  py::dict out;
  out["x"] = dx;
  for (const Named& n : named(m, &grads))
    if (n.grad) out[py::str(n.name)] = ffn::python::array_copy(*n.grad, n.row);
  out["balance_loss"] = balance_loss;
  return out;
}

}  // namespace

void bind_moe_train(py::module_& m) {
  py::class_<ffn::TrainableMoe>(m, "TrainableMoe")
      .def(py::init([](const std::string& variant, int64_t d_model, int64_t hidden, int64_t experts, int64_t top_k,
                       const std::string& scoring, bool normalize_top_k, double routed_scaling, int64_t groups,
                       int64_t top_groups, bool router_bias, bool choice_bias, int64_t shared_hidden,
                       bool shared_gate, bool bias, uint64_t seed) {
             ffn::MoeConfig c;
             c.expert = ffn::BlockConfig{ffn::parse_variant(variant), d_model, hidden, bias, 0.0};
             c.experts = experts;
             c.top_k = top_k;
             c.scoring = ffn::parse_router_scoring(scoring);
             c.normalize_top_k = normalize_top_k;
             c.routed_scaling = routed_scaling;
             c.groups = groups;
             c.top_groups = top_groups;
             c.router_bias = router_bias;
             c.choice_bias = choice_bias;
             c.shared_hidden = shared_hidden;
             c.shared_gate = shared_gate;
             return ffn::TrainableMoe::random(c, seed);
           }),
           py::arg("variant"), py::arg("d_model"), py::arg("hidden"), py::arg("experts"), py::arg("top_k"),
           py::arg("scoring") = "softmax", py::arg("normalize_top_k") = true, py::arg("routed_scaling") = 1.0,
           py::arg("groups") = 1, py::arg("top_groups") = 1, py::arg("router_bias") = false,
           py::arg("choice_bias") = false, py::arg("shared_hidden") = 0, py::arg("shared_gate") = false,
           py::arg("bias") = false, py::arg("seed") = 0)
      .def_property_readonly("d_model", [](const ffn::TrainableMoe& b) { return b.config.d_model(); })
      .def_property_readonly("experts", [](const ffn::TrainableMoe& b) { return b.config.experts; })
      .def_property_readonly("top_k", [](const ffn::TrainableMoe& b) { return b.config.top_k; })
      .def("tensor_names",
           [](ffn::TrainableMoe& b) {
             std::vector<std::string> names;
             for (const Named& n : named(b, nullptr)) names.push_back(n.name);
             return names;
           })
      .def(
          "tensor",
          [](py::object self, const std::string& name) {
            const Named& n = find(named(self.cast<ffn::TrainableMoe&>(), nullptr), name);
            return ffn::python::array_view(self, *n.param, n.row);
          },
          py::arg("name"))
      .def(
          "set_tensor",
          [](ffn::TrainableMoe& b, const std::string& name, const FloatArray& value) {
            const Named& n = find(named(b, nullptr), name);
            ffn::python::assign(*n.param, value, n.row, name);
          },
          py::arg("name"), py::arg("value"))
      .def(
          "route",
          [](const ffn::TrainableMoe& b, const FloatArray& x) {
            const int64_t D = b.config.d_model(), T = tokens_of(x, D, "x");
            return ffn::python::routing_arrays(ffn::route(b.config, b.router, {x.data(), T, D, D}));
          },
          py::arg("x"))
      .def("forward", &forward, py::arg("x"), py::arg("threads") = py::none())
      .def("backward", &backward, py::arg("x"), py::arg("dy"), py::arg("balance") = 0.0,
           py::arg("threads") = py::none());
}
