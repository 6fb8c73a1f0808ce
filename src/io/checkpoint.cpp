// Loading one block's weights by tensor names. The seeds' modules name their projections
// gate / up / down (nn.Linear: weight [out][in], bias [out]). Further naming schemes
// (Hugging Face, Meta, GPT-2, GGUF) map their names onto these three roles.
#include "ffn/checkpoint.hpp"

#include <string>
#include <vector>

#include "ffn/error.hpp"
#include "ffn/safetensors.hpp"

namespace ffn {
namespace {

std::string shape_string(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

std::string names_found(const SafetensorsFile& f) {
  std::string out;
  size_t shown = 0;
  for (const auto& [name, t] : f.tensors()) {
    if (shown++ == 24) {
      out += ", … (" + std::to_string(f.tensors().size()) + " in all)";
      break;
    }
    out += (out.empty() ? "" : ", ") + name + " " + shape_string(t.shape);
  }
  return out.empty() ? "none" : out;
}

// Checks that `name` exists with exactly `shape`.
void require_shape(const SafetensorsFile& f, const std::string& name, std::vector<int64_t> shape) {
  const auto& t = f.tensor(name);
  if (t.shape != shape)
    throw Error(f.path() + ": tensor '" + name + "' has shape " + shape_string(t.shape) + ", expected " +
                shape_string(shape));
}

}  // namespace

Block load_block_safetensors(const std::string& path, Variant variant) {
  SafetensorsFile f(path);
  const std::string vname = variant_name(variant);
  if (!f.has("up.weight") || !f.has("down.weight"))
    throw Error(path + ": no block found: expected tensors up.weight and down.weight (and gate.weight for "
                "gated variants); tensors in the file: " + names_found(f));
  if (variant.gated && !f.has("gate.weight"))
    throw Error(path + ": variant " + vname + " is gated and needs gate.weight; tensors in the file: " + names_found(f));
  if (!variant.gated && f.has("gate.weight"))
    throw Error(path + ": the file holds gate.weight (a gated block) but variant " + vname +
                " has two matrices; choose a gated variant (e.g. swiglu, geglu)");

  const auto& up = f.tensor("up.weight").shape;
  if (up.size() != 2)
    throw Error(path + ": tensor 'up.weight' has shape " + shape_string(up) + "; expected [hidden, d_model]");
  const int64_t H = up[0], D = up[1];
  if (variant.gated) require_shape(f, "gate.weight", {H, D});
  require_shape(f, "down.weight", {D, H});

  std::vector<std::string> bias_names{"up.bias", "down.bias"};
  if (variant.gated) bias_names.push_back("gate.bias");
  size_t present = 0;
  for (const auto& b : bias_names) present += f.has(b) ? 1 : 0;
  if (present != 0 && present != bias_names.size())
    throw Error(path + ": some projections have a bias and others do not; expected all or none of " +
                [&] {
                  std::string s;
                  for (const auto& b : bias_names) s += (s.empty() ? "" : ", ") + b;
                  return s;
                }());
  const bool bias = present != 0;
  if (bias) {
    require_shape(f, "up.bias", {H});
    require_shape(f, "down.bias", {D});
    if (variant.gated) require_shape(f, "gate.bias", {H});
  }

  BlockConfig config{variant, D, H, bias};
  try {
    validate(config);
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  }
  Block block(config);
  auto& w = block.weights();
  f.read_f32("up.weight", w.up.data());
  f.read_f32("down.weight", w.down.data());
  if (variant.gated) f.read_f32("gate.weight", w.gate.data());
  if (bias) {
    f.read_f32("up.bias", w.up_bias.data());
    f.read_f32("down.bias", w.down_bias.data());
    if (variant.gated) f.read_f32("gate.bias", w.gate_bias.data());
  }
  return block;
}

}  // namespace ffn
