// ffn._core: the C++ block for Python. Thin: argument conversion, NumPy views of the
// weights (they share memory with the block, as torch parameters do), and forward without
// the GIL. The seeds'-shaped classes live in ffn/__init__.py.
#include <cmath>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "ffn/ffn.hpp"
#include "forward_binding.hpp"
#include "tensor_access.hpp"

namespace py = pybind11;

void bind_quant(py::module_& m);  // quant_bindings.cpp: dequantize / quantize of ggml's stored types
void bind_moe(py::module_& m);    // moe_bindings.cpp: mixture-of-experts blocks
void bind_moe_train(py::module_& m);  // moe_train_bindings.cpp: their training form

namespace {

using ffn::python::FloatArray;
using ffn::python::forward;
using ffn::python::like;
using ffn::python::pool_for;
using ffn::python::tokens_of;

// `sparse=` of ffn.load as LoadOptions::sparse: None (auto), "off", "exact", a threshold
// on |act(gate)| (a float ≥ 0), as the CLI's --sparse, or (threshold, down_threshold[,
// down_kept_share]) as `--sparse calibrated` reads them from ffn-sparsity.json.
std::optional<ffn::SparseDecode> sparse_decode_of(const py::object& sparse) {
  if (sparse.is_none()) return std::nullopt;
  if (py::isinstance<py::str>(sparse)) {
    const std::string s = sparse.cast<std::string>();
    if (s == "auto") return std::nullopt;
    if (s == "off") return ffn::SparseDecode{};
    if (s == "exact") return ffn::SparseDecode{.enabled = true};
    throw ffn::Error("sparse='" + s +
                     "': give None or 'auto', 'off', 'exact', a threshold ≥ 0, or (threshold, down_threshold[, "
                     "down_kept_share])");
  }
  auto threshold = [](const py::handle& v) {
    const double t = v.cast<double>();
    if (!std::isfinite(t) || t < 0)
      throw ffn::Error("sparse=" + std::to_string(t) + ": a threshold must be finite and ≥ 0");
    return float(t);
  };
  if (py::isinstance<py::tuple>(sparse) || py::isinstance<py::list>(sparse)) {
    const auto values = sparse.cast<py::sequence>();
    if (values.size() != 2 && values.size() != 3)
      throw ffn::Error("sparse: (threshold, down_threshold) or (threshold, down_threshold, down_kept_share), not " +
                       std::to_string(values.size()) + " values");
    ffn::SparseDecode s{.enabled = true, .threshold = threshold(values[0]), .down_threshold = threshold(values[1])};
    if (values.size() == 3) s.down_kept_share = values[2].cast<double>();  // checked by the block: (0, 1]
    return s;
  }
  return ffn::SparseDecode{.enabled = true, .threshold = threshold(sparse)};
}

// An InferenceBlock's [T][H] values of tokens x by `method` (hidden_activations, hidden_values).
template <void (ffn::InferenceBlock::*method)(ffn::ConstMatrixView, ffn::MatrixView, ffn::ThreadPool*) const>
py::array_t<float> hidden_of(const ffn::InferenceBlock& b, const FloatArray& x, std::optional<int> threads) {
  const int64_t D = b.config().d_model, H = b.config().hidden, T = tokens_of(x, D, "x");
  py::array_t<float> out({T, H});
  const float* xp = x.data();
  float* op = out.mutable_data();
  {
    py::gil_scoped_release release;
    (b.*method)({xp, T, D, D}, {op, T, H, H}, pool_for(threads));
  }
  return out;
}

// The options of a load from Python's arguments (names as the CLI takes them).
ffn::LoadOptions load_options(int64_t layer, const std::optional<std::string>& variant,
                              const std::optional<std::string>& dtype, const py::object& sparse = py::none()) {
  ffn::LoadOptions o;
  o.layer = layer;
  if (variant) o.variant = ffn::parse_variant(*variant);
  if (dtype) o.type = ffn::parse_weight_type(*dtype);
  o.sparse = sparse_decode_of(sparse);
  return o;
}

// Parameter names in the order torch's named_parameters() gives for the seeds' modules.
std::vector<std::string> tensor_names(const ffn::Block& b) {
  const auto& c = b.config();
  std::vector<std::string> names;
  for (const char* proj : {"gate", "up", "down"}) {
    if (std::string(proj) == "gate" && !c.variant.gated) continue;
    names.push_back(std::string(proj) + ".weight");
    if (c.bias) names.push_back(std::string(proj) + ".bias");
  }
  return names;
}

ffn::Matrix& tensor_of(ffn::Block& b, const std::string& name) {
  auto& w = b.weights();
  if (b.config().variant.gated) {
    if (name == "gate.weight") return w.gate;
    if (name == "gate.bias" && b.config().bias) return w.gate_bias;
  }
  if (name == "up.weight") return w.up;
  if (name == "down.weight") return w.down;
  if (b.config().bias) {
    if (name == "up.bias") return w.up_bias;
    if (name == "down.bias") return w.down_bias;
  }
  std::string known;
  for (const auto& n : tensor_names(b)) known += (known.empty() ? "" : ", ") + n;
  throw ffn::Error("the block has no parameter '" + name + "'; it has " + known);
}

bool is_bias(const std::string& name) { return name.size() > 5 && name.compare(name.size() - 5, 5, ".bias") == 0; }

// A writable NumPy view of a weight, keeping the Python block alive while it exists.
py::array view_of(py::object self, const std::string& name) {
  return ffn::python::array_view(self, tensor_of(self.cast<ffn::Block&>(), name), is_bias(name));
}

void set_tensor(ffn::Block& block, const std::string& name, const FloatArray& value) {
  ffn::python::assign(tensor_of(block, name), value, is_bias(name), name);
}

// Gradients of sum(dy * block(x)): forward_train (saved or recompute mode), then backward
// into fresh zero gradients. Returns {"x": dx, "<parameter name>": gradient, ...}, each a
// float32 array of the shape of x or of the parameter.
py::dict backward(const ffn::Block& block, const FloatArray& x, const FloatArray& dy, bool recompute,
                  std::optional<int> threads) {
  const int64_t D = block.config().d_model, T = tokens_of(x, D, "x");
  if (tokens_of(dy, D, "dy") != T || dy.ndim() != x.ndim()) throw ffn::Error("dy must have the shape of x");
  py::array_t<float> dx = like(x);
  ffn::BlockGradients grads = ffn::zero_gradients(block.config());
  const float *xp = x.data(), *dyp = dy.data();
  float* dxp = dx.mutable_data();
  {
    py::gil_scoped_release release;
    ffn::ThreadPool* pool = pool_for(threads);
    ffn::ForwardCache cache;
    ffn::Matrix y(T, D);
    ffn::forward_train(block, {xp, T, D, D}, y.view(), cache, recompute, pool);
    ffn::backward(block, {xp, T, D, D}, cache, {dyp, T, D, D}, {dxp, T, D, D}, grads, pool);
  }
  py::dict out;
  out["x"] = dx;
  const std::pair<const char*, const ffn::Matrix*> named[] = {
      {"gate.weight", &grads.gate}, {"gate.bias", &grads.gate_bias}, {"up.weight", &grads.up},
      {"up.bias", &grads.up_bias},  {"down.weight", &grads.down},    {"down.bias", &grads.down_bias}};
  for (const auto& [name, m] : named)
    if (!m->empty()) out[name] = ffn::python::array_copy(*m, is_bias(name));
  return out;
}

}  // namespace

void add_torch_bindings(py::module_& m);  // torch_bindings.cpp: for ffn.torch

PYBIND11_MODULE(_core, m) {
  m.doc() = "ffn.cpp core: feed-forward blocks of transformers (use the ffn package, not this module)";
  py::register_exception<ffn::Error>(m, "Error", PyExc_ValueError);
  m.attr("__version__") = ffn::version;

  py::class_<ffn::Block>(m, "Block")
      .def(py::init([](const std::string& variant, int64_t d, std::optional<int64_t> hidden,
                       std::optional<int64_t> multiple_of, std::optional<double> multiplier, bool bias, uint64_t seed) {
             const ffn::BlockSpec spec{ffn::parse_variant(variant), d, hidden, {multiple_of, multiplier}, bias};
             return std::make_unique<ffn::Block>(ffn::Block::random(ffn::resolve(spec), seed));
           }),
           py::arg("variant"), py::arg("d"), py::arg("hidden") = py::none(), py::arg("multiple_of") = py::none(),
           py::arg("ffn_dim_multiplier") = py::none(), py::arg("bias") = false, py::arg("seed") = 0)
      .def_property_readonly("variant", [](const ffn::Block& b) { return ffn::variant_name(b.config().variant); })
      .def_property_readonly("gated", [](const ffn::Block& b) { return b.config().variant.gated; })
      .def_property_readonly(
          "activation",
          [](const ffn::Block& b) { return std::string(ffn::activation_name(b.config().variant.activation)); })
      .def_property_readonly("d_model", [](const ffn::Block& b) { return b.config().d_model; })
      .def_property_readonly("hidden", [](const ffn::Block& b) { return b.config().hidden; })
      .def_property_readonly("bias", [](const ffn::Block& b) { return b.config().bias; })
      .def_property_readonly("num_parameters", [](const ffn::Block& b) { return ffn::account(b.config()).parameters; })
      .def(
          "for_inference",
          [](const ffn::Block& b, const std::string& gate, const std::string& up, const std::string& down) {
            const ffn::MatrixTypes t{ffn::parse_weight_type(gate), ffn::parse_weight_type(up),
                                     ffn::parse_weight_type(down)};
            py::gil_scoped_release release;
            return std::make_unique<ffn::InferenceBlock>(b, t);
          },
          py::arg("gate"), py::arg("up"), py::arg("down"))
      .def("tensor_names", &tensor_names)
      .def("tensor", &view_of, py::arg("name"))
      .def("set_tensor", &set_tensor, py::arg("name"), py::arg("value"))
      .def("forward", &forward<ffn::Block>, py::arg("x"), py::arg("threads") = py::none())
      .def("backward", &backward, py::arg("x"), py::arg("dy"), py::arg("recompute") = false,
           py::arg("threads") = py::none());

  py::class_<ffn::InferenceBlock>(m, "InferenceBlock")
      .def_property_readonly("variant",
                             [](const ffn::InferenceBlock& b) { return ffn::variant_name(b.config().variant); })
      .def_property_readonly("gated", [](const ffn::InferenceBlock& b) { return b.config().variant.gated; })
      .def_property_readonly(
          "activation",
          [](const ffn::InferenceBlock& b) { return std::string(ffn::activation_name(b.config().variant.activation)); })
      .def_property_readonly("d_model", [](const ffn::InferenceBlock& b) { return b.config().d_model; })
      .def_property_readonly("hidden", [](const ffn::InferenceBlock& b) { return b.config().hidden; })
      .def_property_readonly("bias", [](const ffn::InferenceBlock& b) { return b.config().bias; })
      .def_property_readonly("types",
                             [](const ffn::InferenceBlock& b) {
                               py::dict d;
                               if (b.config().variant.gated) d["gate"] = std::string(ffn::weight_type_name(b.types().gate));
                               d["up"] = std::string(ffn::weight_type_name(b.types().up));
                               d["down"] = std::string(ffn::weight_type_name(b.types().down));
                               return d;
                             })
      .def_property_readonly("weight_bytes", &ffn::InferenceBlock::weight_bytes)
      .def("describe", &ffn::InferenceBlock::describe)
      .def_property_readonly("sparse",
                             [](const ffn::InferenceBlock& b) -> py::object {
                               const ffn::SparseDecode& s = b.sparse();
                               if (!s.enabled) return py::none();
                               return py::dict(py::arg("threshold") = s.threshold,
                                               py::arg("down_threshold") = s.down_threshold,
                                               py::arg("max_tokens") = s.max_tokens,
                                               py::arg("max_kept_share") = s.max_kept_share,
                                               py::arg("down_kept_share") = s.down_kept_share,
                                               py::arg("layout_bytes") = b.sparse_layout_bytes());
                             })
      .def("hidden_activations", hidden_of<&ffn::InferenceBlock::hidden_activations>, py::arg("x"),
           py::arg("threads") = py::none())
      .def("hidden_values", hidden_of<&ffn::InferenceBlock::hidden_values>, py::arg("x"),
           py::arg("threads") = py::none())
      .def("forward", &forward<ffn::InferenceBlock>, py::arg("x"), py::arg("threads") = py::none());
  m.def(
      "sparsity_threshold",
      [](const FloatArray& a, double sparsity) {
        if (a.ndim() != 2) throw ffn::Error("sparsity_threshold: a must be [T, H]");
        return ffn::sparsity_threshold({a.data(), a.shape(0), a.shape(1), a.shape(1)}, sparsity);
      },
      py::arg("a"), py::arg("sparsity"));
  m.def(
      "down_kept_share",
      [](const FloatArray& a, const FloatArray& h, float threshold, float down_threshold) {
        if (a.ndim() != 2 || h.ndim() != 2) throw ffn::Error("down_kept_share: a and h must be [T, H]");
        return ffn::down_kept_share({a.data(), a.shape(0), a.shape(1), a.shape(1)},
                                    {h.data(), h.shape(0), h.shape(1), h.shape(1)}, threshold, down_threshold);
      },
      py::arg("a"), py::arg("h"), py::arg("threshold"), py::arg("down_threshold"));

  // The layer as its block: an InferenceBlock or a MoeBlock, as the layer is (ffn.load wraps
  // it by its class). The checkpoint is opened once and loaded without the GIL.
  m.def(
      "load",
      [](const std::string& path, int64_t layer, std::optional<std::string> variant, std::optional<std::string> dtype,
         const py::object& sparse) {
        const ffn::LoadOptions o = load_options(layer, variant, dtype, sparse);
        std::optional<ffn::Layer> loaded;
        {
          py::gil_scoped_release release;
          loaded.emplace(ffn::Checkpoint(path).load_layer(o));
        }
        return std::visit(
            [](auto& block) -> py::object {
              using Kind = std::decay_t<decltype(block)>;
              return py::cast(std::make_unique<Kind>(std::move(block)));
            },
            loaded->block);
      },
      py::arg("path"), py::arg("layer") = 0, py::arg("variant") = py::none(), py::arg("dtype") = py::none(),
      py::arg("sparse") = py::none());
  m.def(
      "load_trainable",
      [](const std::string& path, int64_t layer, std::optional<std::string> variant) {
        const ffn::LoadOptions o = load_options(layer, variant, std::nullopt);
        std::optional<ffn::LoadedBlock> loaded;
        {
          py::gil_scoped_release release;
          loaded.emplace(ffn::Checkpoint(path).load_trainable(o));
        }
        return std::make_unique<ffn::Block>(std::move(loaded->block));
      },
      py::arg("path"), py::arg("layer") = 0, py::arg("variant") = py::none());
  // The library's lists, so that Python restates none of them: the named variants; what a
  // variant name means (canonical name, gated, activation; an ffn.Error listing the accepted
  // names otherwise); Hugging Face's activation names (None for one with no counterpart, and
  // the reason where the name is one transformers knows).
  m.def("variants", [] {
    std::vector<std::string> names;
    for (const ffn::Variant& v : ffn::named_variants()) names.push_back(ffn::variant_name(v));
    return names;
  });
  m.def(
      "variant_info",
      [](const std::string& name) {
        const ffn::Variant v = ffn::parse_variant(name);
        return py::make_tuple(ffn::variant_name(v), v.gated, std::string(ffn::activation_name(v.activation)));
      },
      py::arg("name"));
  m.def(
      "hf_activation",
      [](const std::string& name) -> std::optional<std::string> {
        if (const auto a = ffn::activation_from_hf_name(name)) return std::string(ffn::activation_name(*a));
        return std::nullopt;
      },
      py::arg("name"));
  // Why an ACT2FN name ffn knows is not run ("" for a mapped or unknown name).
  m.def(
      "hf_activation_refusal", [](const std::string& name) { return ffn::hf_activation_refusal(name); },
      py::arg("name"));
  m.def("llama_hidden", &ffn::llama_hidden, py::arg("d"), py::arg("multiple_of"),
        py::arg("ffn_dim_multiplier") = py::none());
  m.def("active_isa", [] { return std::string(ffn::isa_name(ffn::active_isa())); });
  // This build's ISA levels (ffn/isa_list.hpp), narrowest first, and those this CPU supports.
  m.def("isas", [] {
    std::vector<std::string> names;
    for (const ffn::Isa isa : ffn::all_isas()) names.emplace_back(ffn::isa_name(isa));
    return names;
  });
  m.def("supported_isas", [] {
    std::vector<std::string> names;
    for (const ffn::Isa isa : ffn::supported_isas()) names.emplace_back(ffn::isa_name(isa));
    return names;
  });
  bind_quant(m);
  bind_moe(m);
  bind_moe_train(m);
  add_torch_bindings(m);
}
