#include "io/families.hpp"

#include <nlohmann/json.hpp>
#include <sstream>

#include "ffn/error.hpp"

namespace ffn::io {
namespace {

using A = Activation;

// The rows. Names: {N} is the layer, {E} the expert; [2H, D] a fused gate and up, gate rows
// first unless the row says otherwise. Activations: the function of the family's own
// transformers module (restated in tests/golden/test_families.py, class named there).
const std::vector<ModelFamily> kFamilies = {
    // ---- dense ----
    {"Llama 1–3 (and Yi, Mistral-Nemo, DeepSeek-R1 distills…)", "llama", "llama", false,
     "model.layers.{N}.mlp.{gate,up,down}_proj; Meta's consolidated layers.{N}.feed_forward.w1/w3/w2",
     "blk.{N}.ffn_{gate,up,down}", "hidden_act", A::swish, A::swish, "", ""},
    {"Mistral", "mistral", "", false, "model.layers.{N}.mlp.{gate,up,down}_proj",
     "written as general.architecture 'llama'", "hidden_act", A::swish, std::nullopt, "", ""},
    {"Qwen 2, 2.5, 3", "qwen2 qwen3", "qwen2 qwen3", false, "model.layers.{N}.mlp.{gate,up,down}_proj",
     "blk.{N}.ffn_{gate,up,down}", "hidden_act", A::swish, A::swish, "", ""},
    {"Gemma 1", "gemma", "gemma", false, "model.layers.{N}.mlp.{gate,up,down}_proj", "blk.{N}.ffn_{gate,up,down}",
     // GemmaMLP reads hidden_activation and, when it is absent, uses the tanh GELU whatever
     // hidden_act says (early Gemma configs say hidden_act 'gelu').
     "hidden_activation", A::gelu_tanh, A::gelu_tanh, "hidden_act is ignored, as GemmaMLP ignores it", ""},
    {"Gemma 2, Gemma 3", "gemma2 gemma3 gemma3_text", "gemma2 gemma3", false,
     "model.layers.{N}.mlp.{gate,up,down}_proj; Gemma 3's multimodal checkpoints "
     "language_model.model.layers.{N}.… or model.language_model.layers.{N}.…",
     "blk.{N}.ffn_{gate,up,down}", "hidden_activation", A::gelu_tanh, A::gelu_tanh,
     "multimodal: the activation from text_config", ""},
    // Gemma3nTextMLP: the gate of the layers whose activation_sparsity_pattern entry s > 0
    // goes through a Gaussian top-k (BlockConfig::gate_sparsity; activation_hint.cpp reads it).
    {"Gemma 3n", "gemma3n gemma3n_text", "gemma3n", false,
     "model.language_model.layers.{N}.mlp.{gate,up,down}_proj; Gemma3nForCausalLM's model.layers.{N}.…",
     "blk.{N}.ffn_{gate,up,down}", "hidden_activation", A::gelu_tanh, A::gelu_tanh,
     "multimodal: from text_config; gate sparsity from activation_sparsity_pattern (else Gemma3nTextConfig's "
     "0.95 for layers 0–9); a GGUF's from activation_sparsity_scale, else 0.95 for layers 0–9 as llama.cpp's graph "
     "fixes it (its std is unbiased, transformers' biased: ffn computes transformers'); inference only",
     ""},
    {"StableLM 2", "stablelm", "stablelm", false, "model.layers.{N}.mlp.{gate,up,down}_proj",
     "blk.{N}.ffn_{gate,up,down}", "hidden_act", A::swish, A::swish, "", ""},
    {"Phi-2", "phi", "phi2", false, "model.layers.{N}.mlp.fc1, fc2 (with biases)", "blk.{N}.ffn_up, ffn_down (biases)",
     "hidden_act", A::gelu_tanh, A::gelu_tanh, "", ""},
    {"Phi-3, Phi-3.5, Phi-4-mini", "phi3", "phi3", false,
     "model.layers.{N}.mlp.gate_up_proj [2H, D], down_proj", "blk.{N}.ffn_up [2H, D], ffn_down", "hidden_act",
     A::swish, A::swish, "fused gate and up, read in place", ""},
    {"GLM-4 (transformers' Glm4)", "glm4", "glm4", false, "model.layers.{N}.mlp.gate_up_proj [2H, D], down_proj",
     "blk.{N}.ffn_up [2H, D], ffn_down", "hidden_act", A::swish, A::swish, "fused gate and up", ""},
    {"ChatGLM 2/3, GLM-4 (THUDM's code)", "chatglm", "chatglm", false,
     "transformer.encoder.layers.{N}.mlp.dense_h_to_4h [2H, D], dense_4h_to_h", "blk.{N}.ffn_up [2H, D], ffn_down",
     "", A::swish, A::swish, "fused gate and up; the module's swiglu is fixed", ""},
    {"Cohere Command-R, Command-R7B", "cohere cohere2", "command-r cohere2", false,
     "model.layers.{N}.mlp.{gate,up,down}_proj", "blk.{N}.ffn_{gate,up,down}", "hidden_act", A::swish, A::swish, "",
     ""},
    {"OLMo, OLMo-2", "olmo olmo2", "olmo olmo2", false, "model.layers.{N}.mlp.{gate,up,down}_proj",
     "blk.{N}.ffn_{gate,up,down}", "hidden_act", A::swish, A::swish, "", ""},
    {"Granite 3", "granite", "granite", false, "model.layers.{N}.mlp.{gate,up,down}_proj", "blk.{N}.ffn_{gate,up,down}",
     "hidden_act", A::swish, A::swish, "", ""},
    {"InternLM 2", "internlm2", "internlm2", false, "model.layers.{N}.feed_forward.w1/w3/w2 (gate, up, down)",
     "blk.{N}.ffn_{gate,up,down}", "hidden_act", A::swish, A::swish, "", ""},
    {"EXAONE 3", "exaone", "exaone", false, "transformer.h.{N}.mlp.c_fc_0, c_fc_1, c_proj (gate, up, down)",
     "blk.{N}.ffn_{gate,up,down}", "activation_function", A::swish, A::swish, "", ""},
    {"Nemotron", "nemotron", "nemotron", false, "model.layers.{N}.mlp.up_proj, down_proj",
     "blk.{N}.ffn_up, ffn_down", "hidden_act", A::relu2, A::relu2, "squared ReLU", ""},
    {"Persimmon, Fuyu", "persimmon", "", false, "model.layers.{N}.mlp.dense_h_to_4h, dense_4h_to_h (biases)",
     "— (llama.cpp has no persimmon graph)", "hidden_act", A::relu2, std::nullopt, "squared ReLU", ""},
    {"GPT-2", "gpt2", "gpt2", false, "transformer.h.{N}.mlp.c_fc, c_proj (Conv1D [in, out], biases)",
     "blk.{N}.ffn_up, ffn_down (biases)", "activation_function", A::gelu_tanh, A::gelu_tanh, "", ""},
    {"StarCoder, SantaCoder (GPT-BigCode)", "gpt_bigcode", "starcoder", false,
     "transformer.h.{N}.mlp.c_fc, c_proj (nn.Linear, biases)", "blk.{N}.ffn_up, ffn_down (biases)",
     "activation_function", A::gelu_tanh, A::gelu_tanh, "", ""},
    {"StarCoder2", "starcoder2", "starcoder2", false, "model.layers.{N}.mlp.c_fc, c_proj (nn.Linear, biases)",
     "blk.{N}.ffn_up, ffn_down (biases)", "hidden_act", A::gelu_tanh, A::gelu_tanh, "", ""},
    {"GPT-NeoX, Pythia", "gpt_neox", "gptneox", false,
     "gpt_neox.layers.{N}.mlp.dense_h_to_4h, dense_4h_to_h (biases)", "blk.{N}.ffn_up, ffn_down (biases)",
     "hidden_act", A::gelu, A::gelu, "exact GELU (llama.cpp's graph computes the tanh form)", ""},
    {"Falcon", "falcon RefinedWeb RefinedWebModel", "falcon", false,
     "transformer.h.{N}.mlp.dense_h_to_4h, dense_4h_to_h", "blk.{N}.ffn_up, ffn_down", "activation", A::gelu,
     A::gelu, "exact GELU (llama.cpp's graph computes the tanh form)", ""},
    {"GPT-J", "gptj", "gptj", false, "transformer.h.{N}.mlp.fc_in, fc_out (biases)", "blk.{N}.ffn_up, ffn_down (biases; llama.cpp has no graph for gptj)",
     "activation_function", A::gelu_tanh, A::gelu_tanh, "", ""},
    {"BLOOM", "bloom", "bloom", false, "transformer.h.{N}.mlp.dense_h_to_4h, dense_4h_to_h (biases)",
     "blk.{N}.ffn_up, ffn_down (biases)", "", A::gelu_tanh, A::gelu_tanh,
     "BloomGelu, the tanh form, fixed in the module", ""},
    {"MPT", "mpt", "mpt", false, "transformer.blocks.{N}.ffn.up_proj, down_proj", "blk.{N}.ffn_up, ffn_down", "",
     A::gelu, A::gelu, "MptMLP's exact GELU, fixed in the module (llama.cpp's graph computes the tanh form)", ""},
    {"T5 v1.1, Flan-T5, mT5, UMT5 (encoder)", "t5 mt5 umt5", "t5 t5encoder", false,
     "encoder.block.{N}.layer.1.DenseReluDense.wi_0, wi_1, wo (gate, up, down); T5 v1.0 wi, wo",
     "enc.blk.{N}.ffn_{gate,up,down}", "feed_forward_proj dense_act_fn", A::relu, A::gelu_tanh,
     "the encoder's blocks; the decoder's are not addressed", ""},
    {"BERT, RoBERTa", "bert roberta", "bert", false,
     "encoder.layer.{N}.intermediate.dense, output.dense (biases), under bert. or roberta. or no prefix",
     "blk.{N}.ffn_up, ffn_down (biases)", "hidden_act", A::gelu, A::gelu,
     "exact GELU (llama.cpp's graph computes the tanh form)", ""},
    // ---- mixtures of experts (routing: moe_hints.cpp; names: moe_names.cpp) ----
    {"Mixtral", "mixtral", "llama", true,
     "model.layers.{N}.block_sparse_moe.gate (router), experts.{E}.w1/w3/w2 (gate, up, down)",
     "blk.{N}.ffn_gate_inp, ffn_{gate,up,down}_exps", "hidden_act", A::swish, A::swish, "softmax, renormalised", ""},
    {"Qwen2-MoE, Qwen3-MoE", "qwen2_moe qwen3_moe", "qwen2moe qwen3moe", true,
     "model.layers.{N}.mlp.gate (router), experts.{E}.{gate,up,down}_proj (or fused), shared_expert.*, "
     "shared_expert_gate",
     "blk.{N}.ffn_gate_inp, ffn_{gate,up,down}_exps, ffn_{gate,up,down}_shexp, ffn_gate_inp_shexp", "hidden_act",
     A::swish, A::swish, "softmax; norm_topk_prob", ""},
    {"OLMoE", "olmoe", "olmoe", true, "model.layers.{N}.mlp.gate (router), experts.{E}.{gate,up,down}_proj",
     "blk.{N}.ffn_gate_inp, ffn_{gate,up,down}_exps", "hidden_act", A::swish, A::swish,
     "softmax; norm_topk_prob (default false)", ""},
    {"DeepSeek-V2", "deepseek_v2", "", true,
     "model.layers.{N}.mlp.gate (router), experts.{E}.*, shared_experts.*",
     "as deepseek2 (llama.cpp writes no groups: greedy routing)", "hidden_act", A::swish, std::nullopt,
     "softmax, group-limited greedy (a group scored by its best), scaled", ""},
    {"DeepSeek-V3, Kimi K2", "deepseek_v3 kimi_k2", "deepseek2", true,
     "model.layers.{N}.mlp.gate (router, e_score_correction_bias), experts.{E}.*, shared_experts.*",
     "blk.{N}.ffn_gate_inp, exp_probs_b, ffn_{gate,up,down}_exps, ffn_{gate,up,down}_shexp", "hidden_act", A::swish,
     A::swish, "sigmoid, group-limited (a group scored by its two best), scaled", ""},
    {"GLM-4.5 MoE", "glm4_moe", "glm4moe", true,
     "model.layers.{N}.mlp.gate (router, e_score_correction_bias), experts.{E}.*, shared_experts.*",
     "blk.{N}.ffn_gate_inp, exp_probs_b, ffn_{gate,up,down}_exps, ffn_{gate,up,down}_shexp", "hidden_act", A::swish,
     A::swish, "as DeepSeek-V3; its first layers dense", ""},
    {"DBRX", "dbrx", "dbrx", true,
     "transformer.blocks.{N}.ffn.router.layer (router), ffn.experts.mlp.w1/v1/w2 [E·H, D] (gate, up, down in × out)",
     "blk.{N}.ffn_gate_inp, ffn_{gate,up,down}_exps", "", A::swish, A::swish,
     "ffn_config.ffn_act_fn must be silu; softmax, renormalised", ""},
    {"Granite-MoE, Granite-MoE-Shared, Granite 4 hybrid", "granitemoe granitemoeshared granitemoehybrid",
     "granitemoe granitehybrid", true,
     "model.layers.{N}.block_sparse_moe.router.layer (router), input_linear [E, 2H, D] (gate, up), output_linear; "
     "shared_mlp.input_linear [2S, D], output_linear",
     "blk.{N}.ffn_gate_inp, ffn_{gate,up,down}_exps, ffn_{gate,up,down}_shexp", "hidden_act", A::swish, A::swish,
     "softmax of the chosen; the hybrid's untested", ""},
    {"Llama 4", "llama4 llama4_text", "llama4", true,
     "[language_model.]model.layers.{N}.feed_forward.router (router), experts.gate_up_proj [E, D, 2H] (in × out, "
     "gate half first), experts.down_proj, shared_expert.*; dense layers feed_forward.{gate,up,down}_proj",
     "blk.{N}.ffn_gate_inp, ffn_{gate,up,down}_exps, ffn_{gate,up,down}_shexp", "hidden_act", A::swish, A::swish,
     "top-k by logit, σ(logit) multiplies the expert's input; inference only", ""},
    {"gpt-oss", "gpt_oss", "gpt-oss", true,
     "model.layers.{N}.mlp.router, experts.gate_up_proj [E, D, 2H] (interleaved), down_proj; or their MXFP4 "
     "_blocks/_scales",
     "blk.{N}.ffn_gate_inp, ffn_{gate,up,down}_exps (biases)", "", A::clamped_swish, A::clamped_swish,
     "softmax over the chosen, clamped SwiGLU", ""},
};

bool has_word(std::string_view list, std::string_view word) {
  for (auto w : list_words(list))
    if (w == word) return true;
  return false;
}

// The row naming `name` in the column `list_of`, preferring the layer's kind.
const ModelFamily* row_of(std::string_view name, std::string_view ModelFamily::*list_of, bool moe_layer) {
  const ModelFamily* any = nullptr;
  for (const auto& f : kFamilies) {
    if (!has_word(f.*list_of, name)) continue;
    if (f.moe == moe_layer) return &f;
    if (!any) any = &f;
  }
  return any;
}

std::optional<std::string> string_at(const nlohmann::json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_string()) return std::nullopt;
  return j[key].get<std::string>();
}

}  // namespace

const std::vector<ModelFamily>& model_families() { return kFamilies; }

std::vector<std::string_view> list_words(std::string_view list) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < list.size()) {
    const size_t j = list.find(' ', i);
    const size_t end = j == std::string_view::npos ? list.size() : j;
    if (end > i) out.push_back(list.substr(i, end - i));
    i = end + 1;
  }
  return out;
}

FamilyMatch find_family(const TensorSource& source, bool moe_layer) {
  FamilyMatch m;
  if (const auto arch = source.metadata_string("general.architecture")) {
    m.named = *arch;
    m.source = "general.architecture '" + *arch + "'";
    m.family = row_of(*arch, &ModelFamily::gguf_architectures, moe_layer);
    return m;
  }
  const nlohmann::json* config = source.config_json();
  if (!config) return m;
  auto type = string_at(*config, "model_type");
  std::string where = "config.json model_type";
  // A multimodal checkpoint (Gemma 3's Gemma3ForConditionalGeneration) names its language
  // model's family in text_config.
  if (config->contains("text_config")) {
    if (const auto text = string_at((*config)["text_config"], "model_type")) {
      const ModelFamily* outer = type ? row_of(*type, &ModelFamily::model_types, moe_layer) : nullptr;
      if (!outer) {
        type = text;
        where = "config.json text_config.model_type";
      }
    }
  }
  if (!type) return m;
  m.named = *type;
  m.source = where + " '" + *type + "'";
  m.family = row_of(*type, &ModelFamily::model_types, moe_layer);
  return m;
}

void check_family_supported(const TensorSource& source, bool moe_layer) {
  const FamilyMatch m = find_family(source, moe_layer);
  if (m.family && !m.family->refusal.empty())
    throw Error(source.path() + ": " + std::string(m.family->name) + " (" + m.source +
                ") is not supported: " + std::string(m.family->refusal));
}

std::string family_description(const FamilyMatch& match) {
  if (!match.family) return match.named.empty() ? "" : "'" + match.named + "', not in ffn's table (" + match.source + ")";
  return std::string(match.family->name) + " (" + match.source + ")";
}

namespace {

std::string activation_cell(const ModelFamily& f) {
  std::string keys = f.activation_keys.empty() ? "" : "config " + std::string(f.activation_keys);
  if (f.default_activation)
    keys += std::string(keys.empty() ? "fixed: " : ", else ") + std::string(activation_name(*f.default_activation));
  return keys;
}

}  // namespace

namespace {

// A table cell: | would end the cell and * start emphasis, so both are escaped.
std::string markdown_cell(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '|' || c == '*') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

std::string families_markdown() {
  std::ostringstream out;
  out << "| family | config.json model_type | Hugging Face names | GGUF architecture: names | activation | status |\n"
      << "|---|---|---|---|---|---|\n";
  for (const auto& f : kFamilies) {
    std::string status = f.refusal.empty() ? "runs" : "refused: " + std::string(f.refusal);
    if (!f.notes.empty() && f.refusal.empty()) status += "; " + std::string(f.notes);
    out << "| " << f.name << (f.moe ? " (MoE)" : "") << " | " << f.model_types << " | " << markdown_cell(f.hf_names)
        << " | " << (f.gguf_architectures.empty() ? std::string("—") : std::string(f.gguf_architectures)) << ": "
        << markdown_cell(f.gguf_names) << " | " << activation_cell(f) << " | " << markdown_cell(status) << " |\n";
  }
  return out.str();
}

}  // namespace ffn::io
