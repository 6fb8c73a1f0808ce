// MoE naming schemes, each found by its router tensor ({N} the layer, {E} the expert):
//   mixtral (hugging face)  model.layers.N.block_sparse_moe.gate.weight,
//                           ….block_sparse_moe.experts.E.{w1,w3,w2}.weight (gate, up, down)
//   hugging face            model.layers.N.mlp.gate.weight (Qwen2/3-MoE, DeepSeek-V3),
//                           ….mlp.experts.E.{gate,up,down}_proj.weight, or fused 3-D
//                           ….mlp.experts.gate_up_proj [E][2H][D] and ….experts.down_proj;
//                           shared: ….mlp.shared_expert.* and ….mlp.shared_expert_gate.weight
//                           (Qwen2), ….mlp.shared_experts.* (DeepSeek);
//                           ….mlp.gate.e_score_correction_bias (DeepSeek)
//   gpt-oss (hugging face)  model.layers.N.mlp.router.{weight,bias}, ….mlp.experts.gate_up_proj
//                           [E][D][2H] (in × out, gate and up interleaved) and _bias [E][2H],
//                           ….experts.down_proj [E][H][D] and _bias [E][D]; or, in the MXFP4
//                           release, ….experts.{gate_up,down}_proj_{blocks,scales} (U8, rows in
//                           nn.Linear layout, gate and up interleaved in gate_up's rows)
//   dbrx (hugging face)     transformer.blocks.N.ffn.router.layer.weight,
//                           ….ffn.experts.mlp.{w1,v1,w2} (gate, up, down), each [E·H][D], w2
//                           in × out (DbrxExperts)
//   granite-moe             model.layers.N.block_sparse_moe.router.layer.weight,
//   (hugging face)          ….block_sparse_moe.input_linear.weight [E][2H][D] (gate rows, then
//                           up: the module's chunk(2)) and ….output_linear.weight [E][D][H];
//                           shared (Granite-MoE-Shared, Granite 4): model.layers.N.shared_mlp.
//                           input_linear.weight [2S][D] and ….shared_mlp.output_linear.weight
//   llama 4 (hugging face)  model.layers.N.feed_forward.router.weight (or under
//                           language_model.), ….feed_forward.experts.gate_up_proj [E][D][2H]
//                           (in × out, gate the first H columns) and ….experts.down_proj
//                           [E][H][D] (in × out); shared: ….feed_forward.shared_expert.*
//   gguf                    blk.N.ffn_gate_inp.weight, blk.N.ffn_{gate,up,down}_exps.weight
//                           (or ffn_gate_up_exps) [E][H][D], ffn_{gate,up,down}_shexp.weight,
//                           ffn_gate_inp_shexp.weight, exp_probs_b.bias; gpt-oss's biases
//                           ffn_gate_inp.bias and ffn_{gate,up,down}_exps.bias
#include "io/moe_names.hpp"

#include <set>

#include "io/block_names.hpp"

namespace ffn::io {
namespace {

struct MoeScheme {
  const char* name;
  const char* router;
  const char* prefix;  // of the other tensors' names
};


constexpr MoeScheme kSchemes[] = {
    {"mixtral (hugging face)", "model.layers.{N}.block_sparse_moe.gate.weight", "model.layers.{N}.block_sparse_moe."},
    {"hugging face", "model.layers.{N}.mlp.gate.weight", "model.layers.{N}.mlp."},
    {"gpt-oss (hugging face)", "model.layers.{N}.mlp.router.weight", "model.layers.{N}.mlp."},
    {"dbrx (hugging face)", "transformer.blocks.{N}.ffn.router.layer.weight", "transformer.blocks.{N}.ffn."},
    {"granite-moe (hugging face)", "model.layers.{N}.block_sparse_moe.router.layer.weight", "model.layers.{N}."},
    {"llama 4 (hugging face)", "model.layers.{N}.feed_forward.router.weight", "model.layers.{N}.feed_forward."},
    {"llama 4 (hugging face)", "language_model.model.layers.{N}.feed_forward.router.weight",
     "language_model.model.layers.{N}.feed_forward."},
    {"gguf", "blk.{N}.ffn_gate_inp.weight", "blk.{N}."},
};

// The first of the names the source has, or "".
std::string first_present(const TensorSource& source, std::initializer_list<std::string> names) {
  for (const auto& n : names)
    if (source.has(n)) return n;
  return "";
}

MoeNames names_of(const TensorSource& source, const MoeScheme& s, int64_t layer) {
  const std::string p = with_layer(s.prefix, layer);
  MoeNames n;
  n.scheme = s.name;
  n.router = with_layer(s.router, layer);
  if (std::string(s.name) == "gguf") {
    n.fused = true;
    n.choice_bias = first_present(source, {p + "exp_probs_b.bias", p + "exp_probs_b"});
    if (source.has(p + "ffn_gate_up_exps.weight")) {
      n.gate_up = p + "ffn_gate_up_exps.weight";
    } else {
      n.gate = p + "ffn_gate_exps.weight";
      n.up = p + "ffn_up_exps.weight";
    }
    n.down = p + "ffn_down_exps.weight";
    if (source.has(p + "ffn_up_shexp.weight")) {
      n.shared_gate = p + "ffn_gate_shexp.weight";
      n.shared_up = p + "ffn_up_shexp.weight";
      n.shared_down = p + "ffn_down_shexp.weight";
    }
    n.shared_expert_gate = first_present(source, {p + "ffn_gate_inp_shexp.weight"});
    n.router_bias = first_present(source, {p + "ffn_gate_inp.bias"});
    n.gate_up_bias = first_present(source, {p + "ffn_gate_up_exps.bias"});
    n.gate_bias = first_present(source, {p + "ffn_gate_exps.bias"});
    n.up_bias = first_present(source, {p + "ffn_up_exps.bias"});
    n.down_bias = first_present(source, {p + "ffn_down_exps.bias"});
    return n;
  }
  if (std::string(s.name) == "llama 4 (hugging face)") {
    n.fused = true;
    n.in_out_halves = true;
    n.gate_up = p + "experts.gate_up_proj";
    n.down = p + "experts.down_proj";
    if (source.has(p + "shared_expert.up_proj.weight")) {
      n.shared_gate = p + "shared_expert.gate_proj.weight";
      n.shared_up = p + "shared_expert.up_proj.weight";
      n.shared_down = p + "shared_expert.down_proj.weight";
    }
    return n;
  }
  if (std::string(s.name) == "dbrx (hugging face)") {
    n.fused = true;
    n.stacked_down_in_out = true;
    n.gate = p + "experts.mlp.w1";
    n.up = p + "experts.mlp.v1";
    n.down = p + "experts.mlp.w2";
    return n;
  }
  if (std::string(s.name) == "granite-moe (hugging face)") {
    n.fused = true;
    n.gate_up = p + "block_sparse_moe.input_linear.weight";
    n.down = p + "block_sparse_moe.output_linear.weight";
    if (source.has(p + "shared_mlp.input_linear.weight") || source.has(p + "shared_mlp.output_linear.weight")) {
      n.shared_gate_up = p + "shared_mlp.input_linear.weight";
      n.shared_down = p + "shared_mlp.output_linear.weight";
    }
    return n;
  }
  if (std::string(s.name) == "gpt-oss (hugging face)") {
    n.fused = true;
    n.router_bias = first_present(source, {p + "router.bias"});
    n.gate_up_bias = first_present(source, {p + "experts.gate_up_proj_bias"});
    n.down_bias = first_present(source, {p + "experts.down_proj_bias"});
    // The release's MXFP4 form when either _blocks tensor is there (a missing partner is
    // then named by the loader); never mixed with the dense form.
    const bool dense = source.has(p + "experts.gate_up_proj") || source.has(p + "experts.down_proj");
    const bool blocks = source.has(p + "experts.gate_up_proj_blocks") || source.has(p + "experts.down_proj_blocks");
    if (dense && blocks)
      n.unsupported =
          "it holds both dense experts (experts.gate_up_proj / down_proj) and the MXFP4 blocks of the "
          "Hugging Face release (experts.gate_up_proj_blocks / down_proj_blocks); expected one form";
    if (blocks && !dense) {
      n.scheme = "gpt-oss (hugging face, mxfp4)";
      n.mxfp4_blocks = true;
      n.gate_up = p + "experts.gate_up_proj_blocks";
      n.gate_up_scales = p + "experts.gate_up_proj_scales";
      n.down = p + "experts.down_proj_blocks";
      n.down_scales = p + "experts.down_proj_scales";
      return n;
    }
    n.in_out_interleaved = true;
    n.gate_up = p + "experts.gate_up_proj";
    n.down = p + "experts.down_proj";
    return n;
  }
  if (std::string(s.name) == "mixtral (hugging face)") {
    n.gate = p + "experts.{E}.w1.weight";
    n.up = p + "experts.{E}.w3.weight";
    n.down = p + "experts.{E}.w2.weight";
  } else if (source.has(p + "experts.gate_up_proj")) {
    n.scheme = "hugging face fused";
    n.fused = true;
    n.gate_up = p + "experts.gate_up_proj";
    n.down = p + "experts.down_proj";
  } else {
    n.gate = p + "experts.{E}.gate_proj.weight";
    n.up = p + "experts.{E}.up_proj.weight";
    n.down = p + "experts.{E}.down_proj.weight";
  }
  n.choice_bias = first_present(source, {p + "gate.e_score_correction_bias"});
  for (const char* shared : {"shared_expert.", "shared_experts."})
    if (source.has(p + shared + "up_proj.weight")) {
      n.shared_gate = p + shared + "gate_proj.weight";
      n.shared_up = p + shared + "up_proj.weight";
      n.shared_down = p + shared + "down_proj.weight";
    }
  n.shared_expert_gate = first_present(source, {p + "shared_expert_gate.weight"});
  return n;
}

}  // namespace

std::string expert_tensor(const std::string& pattern, int64_t expert) {
  const auto at = pattern.find("{E}");
  return at == std::string::npos ? pattern : pattern.substr(0, at) + std::to_string(expert) + pattern.substr(at + 3);
}

std::optional<MoeNames> find_moe_names(const TensorSource& source, int64_t layer) {
  for (const MoeScheme& s : kSchemes)
    if (source.has(with_layer(s.router, layer))) return names_of(source, s, layer);
  return std::nullopt;
}

std::vector<int64_t> moe_layers(const TensorSource& source) {
  std::set<int64_t> layers;
  for (const MoeScheme& s : kSchemes) layers.merge(layers_matching(source, s.router));
  return {layers.begin(), layers.end()};
}

}  // namespace ffn::io
