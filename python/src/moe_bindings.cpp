// ffn._core.MoeBlock: a mixture-of-experts layer loaded from a checkpoint (module.cpp's
// load), its forward and its router (which experts each token goes to, with what weights).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>

#include "ffn/ffn.hpp"
#include "forward_binding.hpp"

namespace py = pybind11;

namespace {

// (experts int32 [T, k], weights float32 [T, k]) for x [T, d] or [d].
py::tuple route(const ffn::MoeBlock& block, const ffn::python::FloatArray& x, std::optional<int> threads) {
  const int64_t D = block.config().d_model(), T = ffn::python::tokens_of(x, D, "x");
  ffn::Routing r;
  {
    py::gil_scoped_release release;
    r = block.route({x.data(), T, D, D}, ffn::python::pool_for(threads));
  }
  return ffn::python::routing_arrays(r);
}

py::dict types_of(const ffn::MatrixTypes& t) {
  py::dict d;
  d["gate"] = std::string(ffn::weight_type_name(t.gate));
  d["up"] = std::string(ffn::weight_type_name(t.up));
  d["down"] = std::string(ffn::weight_type_name(t.down));
  return d;
}

}  // namespace

void bind_moe(py::module_& m) {
  py::class_<ffn::MoeBlock>(m, "MoeBlock")
      .def_property_readonly("d_model", [](const ffn::MoeBlock& b) { return b.config().d_model(); })
      .def_property_readonly("experts", [](const ffn::MoeBlock& b) { return b.config().experts; })
      .def_property_readonly("top_k", [](const ffn::MoeBlock& b) { return b.config().top_k; })
      .def_property_readonly("expert_hidden", [](const ffn::MoeBlock& b) { return b.config().expert.hidden; })
      .def_property_readonly("shared_hidden", [](const ffn::MoeBlock& b) { return b.config().shared_hidden; })
      .def_property_readonly("variant", [](const ffn::MoeBlock& b) { return ffn::variant_name(b.config().expert.variant); })
      .def_property_readonly("scoring",
                             [](const ffn::MoeBlock& b) { return std::string(ffn::router_scoring_name(b.config().scoring)); })
      .def_property_readonly("normalize_top_k", [](const ffn::MoeBlock& b) { return b.config().normalize_top_k; })
      .def_property_readonly("routed_scaling", [](const ffn::MoeBlock& b) { return b.config().routed_scaling; })
      .def_property_readonly("weight_input", [](const ffn::MoeBlock& b) { return b.config().weight_input; })
      .def_property_readonly("types", [](const ffn::MoeBlock& b) { return types_of(b.expert_types()); })
      .def_property_readonly("weight_bytes", &ffn::MoeBlock::weight_bytes)
      .def_property_readonly("decode_bytes", &ffn::MoeBlock::decode_bytes)
      .def("describe", &ffn::MoeBlock::describe)
      .def("route", &route, py::arg("x"), py::arg("threads") = py::none())
      .def("forward", &ffn::python::forward<ffn::MoeBlock>, py::arg("x"), py::arg("threads") = py::none());
}
