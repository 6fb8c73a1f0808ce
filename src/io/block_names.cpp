// Naming schemes, each a pattern with {N} for the layer (the families that use each:
// families.cpp). Biases sit beside each weight as .bias.
//   seeds          gate.weight, up.weight, down.weight (a single block)
//   hugging face   [model.|language_model.model.|model.language_model.]layers.N.mlp.{gate,up,down}_proj
//                  (gate absent: Nemotron's 2-matrix block); ….mlp.gate_up_proj [2H, D] (Phi-3, GLM-4)
//   meta           [model.]layers.N.feed_forward.{w1,w3,w2} — w1 the gate, w3 up, w2 down (InternLM 2 too)
//   gpt-2          [transformer.]h.N.mlp.c_fc (up), .c_proj (down), Conv1D [in, out]; GPT-BigCode's
//                  are the same names as nn.Linear, told by its model_type
//   and the families' own: Phi-2 fc1/fc2, StarCoder2 c_fc/c_proj, EXAONE c_fc_0/c_fc_1/c_proj,
//   GPT-J fc_in/fc_out, dense_h_to_4h/dense_4h_to_h (GPT-NeoX, Falcon, BLOOM; ChatGLM's fused),
//   MPT ffn.up_proj/down_proj, T5's DenseReluDense wi_0/wi_1/wo (or wi/wo), BERT's
//   intermediate.dense/output.dense
//   gguf           blk.N.ffn_{gate,up,down}.weight (T5's encoder enc.blk.N.…); Phi-3's and GLM's
//                  fused ffn_up [2H, D]
// A 2-matrix scheme whose up has twice the rows down has columns holds gate and up fused in
// one [2H, D] tensor, its halves in the order the family's module splits them.
#include "io/block_names.hpp"

#include <set>
#include <vector>

#include "ffn/error.hpp"
#include "io/families.hpp"

namespace ffn::io {
namespace {

struct Scheme {
  const char* name;
  const char* gate;  // patterns; "" when the scheme has no gate, the up pattern when fused
  const char* up;
  const char* down;
  bool conv1d = false;
  const char* only_model_type = "";  // the scheme applies to this family's checkpoints only
  bool fused_gate_first = true;      // the order of a fused [2H, D]'s halves
  // Up may hold gate and up fused, told by its shape (GGUF's ffn_up of Phi-3 and GLM,
  // ChatGLM's dense_h_to_4h): [2H, D] against down's [D, H].
  bool fused_by_shape = false;
};

constexpr Scheme kSchemes[] = {
    {"seeds", "gate.weight", "up.weight", "down.weight"},
    {"hugging face", "model.layers.{N}.mlp.gate_proj.weight", "model.layers.{N}.mlp.up_proj.weight",
     "model.layers.{N}.mlp.down_proj.weight"},
    {"hugging face", "layers.{N}.mlp.gate_proj.weight", "layers.{N}.mlp.up_proj.weight",
     "layers.{N}.mlp.down_proj.weight"},
    {"hugging face", "language_model.model.layers.{N}.mlp.gate_proj.weight",
     "language_model.model.layers.{N}.mlp.up_proj.weight", "language_model.model.layers.{N}.mlp.down_proj.weight"},
    {"hugging face", "model.language_model.layers.{N}.mlp.gate_proj.weight",
     "model.language_model.layers.{N}.mlp.up_proj.weight", "model.language_model.layers.{N}.mlp.down_proj.weight"},
    {"hugging face", "language_model.layers.{N}.mlp.gate_proj.weight", "language_model.layers.{N}.mlp.up_proj.weight",
     "language_model.layers.{N}.mlp.down_proj.weight"},
    {"llama 4", "model.layers.{N}.feed_forward.gate_proj.weight", "model.layers.{N}.feed_forward.up_proj.weight",
     "model.layers.{N}.feed_forward.down_proj.weight"},
    {"llama 4", "language_model.model.layers.{N}.feed_forward.gate_proj.weight",
     "language_model.model.layers.{N}.feed_forward.up_proj.weight",
     "language_model.model.layers.{N}.feed_forward.down_proj.weight"},
    {"hugging face fused", "model.layers.{N}.mlp.gate_up_proj.weight", "model.layers.{N}.mlp.gate_up_proj.weight",
     "model.layers.{N}.mlp.down_proj.weight"},
    {"phi-2", "", "model.layers.{N}.mlp.fc1.weight", "model.layers.{N}.mlp.fc2.weight"},
    {"meta", "layers.{N}.feed_forward.w1.weight", "layers.{N}.feed_forward.w3.weight",
     "layers.{N}.feed_forward.w2.weight"},
    {"meta", "model.layers.{N}.feed_forward.w1.weight", "model.layers.{N}.feed_forward.w3.weight",
     "model.layers.{N}.feed_forward.w2.weight"},
    {"gpt-bigcode", "", "transformer.h.{N}.mlp.c_fc.weight", "transformer.h.{N}.mlp.c_proj.weight", false,
     "gpt_bigcode"},
    {"gpt-2", "", "h.{N}.mlp.c_fc.weight", "h.{N}.mlp.c_proj.weight", true},
    {"gpt-2", "", "transformer.h.{N}.mlp.c_fc.weight", "transformer.h.{N}.mlp.c_proj.weight", true},
    {"starcoder2", "", "model.layers.{N}.mlp.c_fc.weight", "model.layers.{N}.mlp.c_proj.weight"},
    {"exaone", "transformer.h.{N}.mlp.c_fc_0.weight", "transformer.h.{N}.mlp.c_fc_1.weight",
     "transformer.h.{N}.mlp.c_proj.weight"},
    {"gpt-j", "", "transformer.h.{N}.mlp.fc_in.weight", "transformer.h.{N}.mlp.fc_out.weight"},
    {"persimmon", "", "model.layers.{N}.mlp.dense_h_to_4h.weight", "model.layers.{N}.mlp.dense_4h_to_h.weight"},
    {"gpt-neox", "", "gpt_neox.layers.{N}.mlp.dense_h_to_4h.weight", "gpt_neox.layers.{N}.mlp.dense_4h_to_h.weight"},
    {"falcon / bloom", "", "transformer.h.{N}.mlp.dense_h_to_4h.weight", "transformer.h.{N}.mlp.dense_4h_to_h.weight"},
    {"falcon / bloom", "", "h.{N}.mlp.dense_h_to_4h.weight", "h.{N}.mlp.dense_4h_to_h.weight"},
    {"chatglm", "", "transformer.encoder.layers.{N}.mlp.dense_h_to_4h.weight",
     "transformer.encoder.layers.{N}.mlp.dense_4h_to_h.weight", false, "", true, true},
    {"mpt", "", "transformer.blocks.{N}.ffn.up_proj.weight", "transformer.blocks.{N}.ffn.down_proj.weight"},
    {"t5", "encoder.block.{N}.layer.1.DenseReluDense.wi_0.weight",
     "encoder.block.{N}.layer.1.DenseReluDense.wi_1.weight", "encoder.block.{N}.layer.1.DenseReluDense.wo.weight"},
    {"t5", "", "encoder.block.{N}.layer.1.DenseReluDense.wi.weight",
     "encoder.block.{N}.layer.1.DenseReluDense.wo.weight"},
    {"bert", "", "bert.encoder.layer.{N}.intermediate.dense.weight", "bert.encoder.layer.{N}.output.dense.weight"},
    {"bert", "", "roberta.encoder.layer.{N}.intermediate.dense.weight",
     "roberta.encoder.layer.{N}.output.dense.weight"},
    {"bert", "", "encoder.layer.{N}.intermediate.dense.weight", "encoder.layer.{N}.output.dense.weight"},
    {"gguf", "blk.{N}.ffn_gate.weight", "blk.{N}.ffn_up.weight", "blk.{N}.ffn_down.weight", false, "", true, true},
    {"gguf", "enc.blk.{N}.ffn_gate.weight", "enc.blk.{N}.ffn_up.weight", "enc.blk.{N}.ffn_down.weight"},
};

// Whether the scheme applies to the source (a scheme of one family only to its checkpoints).
bool applies(const Scheme& s, const TensorSource& source) {
  return !*s.only_model_type || find_family(source, false).named == s.only_model_type;
}

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

namespace {

// Whether up holds gate and up fused: named so by the scheme, or (a scheme that fuses by
// shape, the layer without a gate tensor) up has twice the rows that down has columns,
// which no 2-matrix block can have.
bool fused_gate_up(const TensorSource& source, const Scheme& s, const BlockNames& n) {
  if (std::string(s.gate) == s.up) return true;
  if (!s.fused_by_shape || !n.gate.empty()) return false;
  const auto& up = source.tensors().at(n.up).shape;
  const auto& down = source.tensors().at(n.down).shape;
  return up.size() == 2 && down.size() == 2 && down[1] > 0 && up[0] == 2 * down[1];
}

}  // namespace

BlockNames find_block_names(const TensorSource& source, int64_t layer) {
  if (layer < 0) throw Error("layer = " + std::to_string(layer) + ": must be ≥ 0");
  for (const Scheme& s : kSchemes) {
    const bool layered = std::string(s.up).find("{N}") != std::string::npos;
    if (!source.has(with_layer(s.up, layer)) || !applies(s, source)) continue;
    if (!layered && layer != 0)
      throw Error(source.path() + ": holds a single block (the seeds' names gate/up/down); layer " +
                  std::to_string(layer) + " does not exist");
    BlockNames n;
    n.scheme = s.name;
    n.conv1d = s.conv1d;
    n.up = with_layer(s.up, layer);
    n.down = with_layer(s.down, layer);
    if (!source.has(n.down))
      throw Error(source.path() + ": has " + n.up + " but not " + n.down + " (" + s.name + " names)");
    if (*s.gate && std::string(s.gate) != s.up && source.has(with_layer(s.gate, layer)))
      n.gate = with_layer(s.gate, layer);
    n.up_bias = bias_of(n.up);
    n.down_bias = bias_of(n.down);
    if (fused_gate_up(source, s, n)) {
      n.gate = n.up;
      n.fused = true;
      n.gate_first = s.fused_gate_first;
    }
    if (!n.gate.empty()) n.gate_bias = bias_of(n.gate);
    return n;
  }
  for (const Scheme& s : kSchemes) {
    const auto layers = layers_matching(source, s.up);
    if (layers.empty() || !applies(s, source)) continue;
    throw Error(source.path() + ": layer " + std::to_string(layer) + " not found; the checkpoint (" + s.name +
                " names) has " + std::to_string(layers.size()) + " layers, " + std::to_string(*layers.begin()) +
                " to " + std::to_string(*layers.rbegin()));
  }
  throw Error(source.path() + ": no feed-forward block found under any known naming scheme (the families of "
              "`ffn info --families`: seeds gate/up/down, Hugging Face mlp.*_proj, Meta feed_forward.w1/w2/w3, "
              "GPT-2 mlp.c_fc/c_proj, dense_h_to_4h, fc1/fc2, T5 DenseReluDense, BERT intermediate/output, GGUF "
              "ffn_*); tensors in the file: " + names_found(source));
}

std::vector<int64_t> block_layers(const TensorSource& source) {
  for (const Scheme& s : kSchemes) {
    if (!applies(s, source)) continue;
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
