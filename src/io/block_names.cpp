// Naming schemes, each a pattern with {N} for the layer:
//   seeds          gate.weight, up.weight, down.weight (a single block)
//   hugging face   model.layers.N.mlp.{gate,up,down}_proj.weight (Llama, Mistral, Qwen2)
//   meta           layers.N.feed_forward.{w1,w3,w2}.weight — w1 is the gate, w3 up, w2 down
//   gpt-2          [transformer.]h.N.mlp.c_fc.weight (up), .c_proj.weight (down), Conv1D [in, out]
//   gguf           blk.N.ffn_{gate,up,down}.weight
// Biases sit beside each weight as .bias.
#include "io/block_names.hpp"

#include <set>
#include <vector>

#include "ffn/error.hpp"

namespace ffn::io {
namespace {

struct Scheme {
  const char* name;
  const char* gate;  // patterns; "" when the scheme has no gate
  const char* up;
  const char* down;
  bool conv1d;
};

constexpr Scheme kSchemes[] = {
    {"seeds", "gate.weight", "up.weight", "down.weight", false},
    {"hugging face", "model.layers.{N}.mlp.gate_proj.weight", "model.layers.{N}.mlp.up_proj.weight",
     "model.layers.{N}.mlp.down_proj.weight", false},
    {"hugging face", "layers.{N}.mlp.gate_proj.weight", "layers.{N}.mlp.up_proj.weight",
     "layers.{N}.mlp.down_proj.weight", false},
    {"meta", "layers.{N}.feed_forward.w1.weight", "layers.{N}.feed_forward.w3.weight",
     "layers.{N}.feed_forward.w2.weight", false},
    {"gpt-2", "", "h.{N}.mlp.c_fc.weight", "h.{N}.mlp.c_proj.weight", true},
    {"gpt-2", "", "transformer.h.{N}.mlp.c_fc.weight", "transformer.h.{N}.mlp.c_proj.weight", true},
    {"gguf", "blk.{N}.ffn_gate.weight", "blk.{N}.ffn_up.weight", "blk.{N}.ffn_down.weight", false},
};

std::string bias_of(const std::string& weight) { return weight.substr(0, weight.size() - 6) + "bias"; }

std::string names_found(const TensorSource& source) {
  std::string out;
  size_t shown = 0;
  for (const auto& [name, t] : source.tensors()) {
    if (shown++ == 24) return out + ", … (" + std::to_string(source.tensors().size()) + " in all)";
    std::string shape;
    for (size_t i = 0; i < t.shape.size(); ++i) shape += (i ? ", " : "") + std::to_string(t.shape[i]);
    out += (out.empty() ? "" : ", ") + name + " [" + shape + "]";
  }
  return out.empty() ? "none" : out;
}

}  // namespace

std::string with_layer(const std::string& pattern, int64_t layer) {
  const auto at = pattern.find("{N}");
  return at == std::string::npos ? pattern : pattern.substr(0, at) + std::to_string(layer) + pattern.substr(at + 3);
}

std::set<int64_t> layers_matching(const TensorSource& source, const std::string& pattern) {
  std::set<int64_t> layers;
  const auto at = pattern.find("{N}");
  if (at == std::string::npos) return layers;
  const std::string head = pattern.substr(0, at), tail = pattern.substr(at + 3);
  for (const auto& [name, t] : source.tensors()) {
    if (name.size() <= head.size() + tail.size() || name.compare(0, head.size(), head) != 0 ||
        name.compare(name.size() - tail.size(), tail.size(), tail) != 0)
      continue;
    const std::string digits = name.substr(head.size(), name.size() - head.size() - tail.size());
    if (digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    layers.insert(std::stoll(digits));
  }
  return layers;
}

BlockNames find_block_names(const TensorSource& source, int64_t layer) {
  if (layer < 0) throw Error("layer = " + std::to_string(layer) + ": must be ≥ 0");
  for (const Scheme& s : kSchemes) {
    const bool layered = std::string(s.up).find("{N}") != std::string::npos;
    if (!source.has(with_layer(s.up, layer))) continue;
    if (!layered && layer != 0)
      throw Error(source.path() + ": holds a single block (the seeds' names gate/up/down); layer " +
                  std::to_string(layer) + " does not exist");
    BlockNames n;
    n.scheme = s.name;
    n.conv1d = s.conv1d;
    n.up = with_layer(s.up, layer);
    n.down = with_layer(s.down, layer);
    if (*s.gate && source.has(with_layer(s.gate, layer))) n.gate = with_layer(s.gate, layer);
    n.up_bias = bias_of(n.up);
    n.down_bias = bias_of(n.down);
    if (!n.gate.empty()) n.gate_bias = bias_of(n.gate);
    if (!source.has(n.down))
      throw Error(source.path() + ": has " + n.up + " but not " + n.down + " (" + s.name + " names)");
    return n;
  }
  for (const Scheme& s : kSchemes) {
    const auto layers = layers_matching(source, s.up);
    if (layers.empty()) continue;
    throw Error(source.path() + ": layer " + std::to_string(layer) + " not found; the checkpoint (" + s.name +
                " names) has " + std::to_string(layers.size()) + " layers, " + std::to_string(*layers.begin()) +
                " to " + std::to_string(*layers.rbegin()));
  }
  throw Error(source.path() + ": no feed-forward block found under any known naming scheme (seeds gate/up/down, "
              "Hugging Face mlp.*_proj, Meta feed_forward.w1/w2/w3, GPT-2 mlp.c_fc/c_proj, GGUF ffn_*); "
              "tensors in the file: " + names_found(source));
}

std::vector<int64_t> block_layers(const TensorSource& source) {
  for (const Scheme& s : kSchemes) {
    if (std::string(s.up).find("{N}") == std::string::npos) {
      if (source.has(s.up)) return {0};
      continue;
    }
    const auto layers = layers_matching(source, s.up);
    if (!layers.empty()) return {layers.begin(), layers.end()};
  }
  return {};
}

}  // namespace ffn::io
