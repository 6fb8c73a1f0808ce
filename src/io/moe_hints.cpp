// MoE hints from config.json (transformers' field names) or GGUF metadata (llama.cpp's keys).
//
// Family defaults, as the reference implementations have them:
//   mixtral      softmax, always renormalised (the module has no norm_topk_prob)
//   qwen2_moe    softmax, norm_topk_prob default false; shared expert with a sigmoid gate
//   qwen3_moe    softmax, norm_topk_prob default false (the released configs say true)
//   deepseek_v3  scoring_func default sigmoid, norm_topk_prob default true, n_group,
//   / kimi_k2    topk_group, routed_scaling_factor default 1, n_shared_experts
//   gpt_oss      softmax over the chosen experts (a router with bias), its own clamped
//                activation (swiglu_limit must be 7, the activation's constant)
//   olmoe        softmax, norm_topk_prob default false (OlmoeSparseMoeBlock); the experts'
//                hidden is intermediate_size
//   dbrx         everything under ffn_config: moe_num_experts, moe_top_k, ffn_hidden_size;
//                softmax, the k weights divided by their p-norm for p =
//                moe_normalize_expert_weights (default 1: the sum; null: none; other p
//                refused); the activation ffn_act_fn.name (default silu) (DbrxRouter)
//   granitemoe,  softmax over the k largest logits (GraniteMoeTopKGating); the experts'
//   granitemoeshared, granitemoehybrid   hidden is intermediate_size, the shared MLP's
//                shared_intermediate_size
//   glm4_moe     as deepseek_v3 (Glm4MoeTopkRouter: sigmoid, e_score_correction_bias, groups)
//   deepseek_v2  softmax, no renormalisation, × routed_scaling_factor; topk_method greedy
//                (n_group ignored) or group_limited_greedy (a group scored by its best
//                probability, DeepseekV2MoEGate); norm_topk_prob true refused (transformers'
//                module ignores it, DeepSeek's own code renormalises and drops the scaling)
//   llama4_text  sigmoid of the k largest logits, unrenormalised, multiplying the experts'
//   / llama4     inputs (Llama4TextMoe; llama4: under text_config); experts' and shared
//                expert's hidden intermediate_size
// GGUF (llama.cpp's build_moe_ffn): expert_weights_norm defaults to true for llama
// (Mixtral) and qwen3moe, false for qwen2moe and deepseek2; dbrx and granitemoe's graphs
// always renormalise (softmax then renormalised top-k = granite's softmax over the k),
// olmoe's never; expert_gating_func 1 softmax, 2 sigmoid, 3 softmax over the chosen (gpt-oss),
// default softmax. llama.cpp's groups score a group by its two best whatever the gating, so
// softmax with expert_group_count > 1 (not DeepSeek-V2's rule) is refused; its converter
// writes no groups for DeepSeek-V2, whose GGUF is then the greedy choice llama.cpp runs.
#include "io/moe_hints.hpp"

#include <nlohmann/json.hpp>

#include "ffn/error.hpp"

namespace ffn::io {
namespace {


MoeHints from_gguf(const TensorSource& src, const std::string& arch) {
  MoeHints h;
  h.source = "GGUF metadata (" + arch + ")";
  auto key = [&](const char* k) { return arch + "." + k; };
  h.experts_field = key("expert_count");
  h.top_k_field = key("expert_used_count");
  h.experts = src.metadata_int(key("expert_count"));
  h.top_k = src.metadata_int(key("expert_used_count"));
  h.expert_hidden = src.metadata_int(key("expert_feed_forward_length"));
  if (arch == "llama" && !h.expert_hidden) h.expert_hidden = src.metadata_int(key("feed_forward_length"));
  h.shared_hidden = src.metadata_int(key("expert_shared_feed_forward_length"));
  if (const auto count = src.metadata_int(key("expert_shared_count")); count && h.expert_hidden && !h.shared_hidden)
    h.shared_hidden = *count * *h.expert_hidden;
  h.groups = src.metadata_int(key("expert_group_count"));
  h.top_groups = src.metadata_int(key("expert_group_used_count"));
  h.routed_scaling = src.metadata_float(key("expert_weights_scale"));
  if (h.routed_scaling && *h.routed_scaling == 0.0) h.routed_scaling = 1.0;  // llama.cpp: 0 means unscaled
  h.normalize_top_k = src.metadata_bool(key("expert_weights_norm"));
  if (arch == "gpt-oss") {  // llama.cpp's OpenAI MoE: its routing and activation are fixed
    h.scoring = RouterScoring::softmax_top_k;
    h.activation = Activation::clamped_swish;
    h.activation_source = "general.architecture 'gpt-oss'";
    return h;
  }
  if (arch == "llama4") {  // llama.cpp's graph: sigmoid of the chosen logits, applied before the experts
    h.scoring = RouterScoring::sigmoid_top_k;
    h.normalize_top_k = false;
    h.weight_input = true;
    h.activation = Activation::swish;
    h.activation_source = "general.architecture 'llama4' (llama.cpp's graph: SiLU-gated experts)";
    return h;
  }
  if (arch == "dbrx" || arch == "granitemoe" || arch == "granitemoeshared" || arch == "granitehybrid" ||
      arch == "olmoe" || arch == "glm4moe") {
    // llama.cpp's graphs for these fix the SiLU-gated experts and (but glm4moe's) the
    // renormalisation, whatever the metadata says.
    if (arch != "glm4moe") h.normalize_top_k = arch != "olmoe";  // glm4moe's graph reads expert_weights_norm
    h.activation = Activation::swish;
    h.activation_source = "general.architecture '" + arch + "' (llama.cpp's graph: SiLU-gated experts)";
  }
  if (!h.normalize_top_k) h.normalize_top_k = arch == "llama" || arch == "qwen3moe";
  const auto gating = src.metadata_int(key("expert_gating_func")).value_or(1);
  switch (gating) {
    case 0:
    case 1: h.scoring = RouterScoring::softmax; break;
    case 2: h.scoring = RouterScoring::sigmoid; break;
    case 3: h.scoring = RouterScoring::softmax_top_k; break;
    default:
      throw Error(src.path() + ": metadata " + key("expert_gating_func") + " = " + std::to_string(gating) +
                  ": expected 1 (softmax), 2 (sigmoid) or 3 (softmax over the chosen)");
  }
  if (h.scoring == RouterScoring::softmax && h.groups && *h.groups > 1)
    throw Error(src.path() + ": " + key("expert_group_count") + " = " + std::to_string(*h.groups) +
                " with softmax gating: llama.cpp scores a group by the sum of its two best probabilities, ffn's "
                "softmax groups are DeepSeek-V2's (a group scored by its best); refusing rather than choosing one");
  return h;
}

template <typename T>
std::optional<T> json_field(const nlohmann::json& j, const char* key, const std::string& file);

// DeepSeek-V2 (DeepseekV2MoEGate): softmax, the k weights × routed_scaling_factor, never
// renormalised; greedy, or group-limited greedy within topk_group of n_group groups.
MoeHints deepseek_v2(const nlohmann::json& j, const std::string& f, MoeHints h) {
  h.scoring = RouterScoring::softmax;
  if (const auto scoring = json_field<std::string>(j, "scoring_func", f); scoring && *scoring != "softmax")
    throw Error(f + ": model_type 'deepseek_v2' with scoring_func '" + *scoring +
                "': DeepSeek-V2's gate is a softmax (transformers' DeepseekV2MoEGate has no other)");
  if (h.normalize_top_k.value_or(false) && h.top_k.value_or(1) > 1)
    throw Error(f + ": model_type 'deepseek_v2' with norm_topk_prob true: transformers' DeepseekV2MoEGate ignores "
                "it (weights × routed_scaling_factor) while DeepSeek's own modeling code renormalises instead of "
                "scaling; ffn refuses rather than pick one");
  h.normalize_top_k = false;
  const std::string method = json_field<std::string>(j, "topk_method", f).value_or("greedy");
  if (method == "greedy" || method == "gready") {  // "gready": the spelling of DeepSeek's own modeling code
    h.groups = 1;
    h.top_groups = 1;
  } else if (method != "group_limited_greedy") {
    throw Error(f + ": model_type 'deepseek_v2' with topk_method '" + method +
                "': expected greedy or group_limited_greedy");
  }
  return h;
}

template <typename T>
std::optional<T> json_field(const nlohmann::json& j, const char* key, const std::string& file) {
  if (!j.contains(key) || j[key].is_null()) return std::nullopt;
  try {
    return j[key].get<T>();
  } catch (const nlohmann::json::exception&) {
    throw Error(file + ": " + key + " has the wrong type (" + j[key].dump() + ")");
  }
}

// DBRX keeps its MoE fields in the nested ffn_config (DbrxFFNConfig), with its defaults.
MoeHints from_dbrx_config(const nlohmann::json& j, const std::string& f) {
  MoeHints h;
  h.source = "config.json (model_type 'dbrx')";
  if (!j.contains("ffn_config") || !j["ffn_config"].is_object())
    throw Error(f + ": model_type 'dbrx' without an ffn_config object (moe_num_experts, moe_top_k, ...)");
  const nlohmann::json& ffn = j["ffn_config"];
  const std::string where = f + " ffn_config";
  h.experts_field = "ffn_config.moe_num_experts";
  h.top_k_field = "ffn_config.moe_top_k";
  h.experts = json_field<int64_t>(ffn, "moe_num_experts", where);
  h.top_k = json_field<int64_t>(ffn, "moe_top_k", where);
  h.expert_hidden = json_field<int64_t>(ffn, "ffn_hidden_size", where);
  h.scoring = RouterScoring::softmax;
  // top_weights / ‖top_weights‖_p: p = 1 is the sum (the weights are positive), null none.
  if (!ffn.contains("moe_normalize_expert_weights")) {
    h.normalize_top_k = true;  // DbrxFFNConfig's default p = 1
  } else if (ffn["moe_normalize_expert_weights"].is_null()) {
    h.normalize_top_k = false;
  } else {
    const double p = json_field<double>(ffn, "moe_normalize_expert_weights", where).value_or(1.0);
    if (p != 1.0)
      throw Error(f + ": ffn_config.moe_normalize_expert_weights = " + ffn["moe_normalize_expert_weights"].dump() +
                  ": DBRX divides the chosen weights by their " + ffn["moe_normalize_expert_weights"].dump() +
                  "-norm; ffn renormalises by the sum (p = 1) or not at all (null)");
    h.normalize_top_k = true;
  }
  std::string act = "silu";  // DbrxFFNConfig's default ffn_act_fn {"name": "silu"}
  if (ffn.contains("ffn_act_fn") && ffn["ffn_act_fn"].is_object() && ffn["ffn_act_fn"].contains("name"))
    act = json_field<std::string>(ffn["ffn_act_fn"], "name", where + ".ffn_act_fn").value_or("silu");
  if (act != "silu")
    throw Error(f + ": ffn_config.ffn_act_fn.name '" + act + "': ffn reads DBRX's experts as SiLU-gated only");
  h.activation = Activation::swish;
  h.activation_source = "config.json ffn_config.ffn_act_fn 'silu' (DBRX)";
  return h;
}

// Llama 4 (Llama4TextMoe): the top-k logits, each weighted σ(logit) on the expert's input;
// the experts' and the shared expert's hidden intermediate_size. Llama4ForConditional-
// Generation's config (model_type llama4) keeps these under text_config.
MoeHints from_llama4_config(const nlohmann::json& top, const std::string& type, const std::string& f) {
  if (type == "llama4" && (!top.contains("text_config") || !top["text_config"].is_object()))
    throw Error(f + ": model_type 'llama4' without a text_config object (num_local_experts, ...)");
  const nlohmann::json& j = type == "llama4" ? top["text_config"] : top;
  const std::string at = type == "llama4" ? "text_config." : "";
  MoeHints h;
  h.source = "config.json (model_type '" + type + "')";
  h.experts_field = at + "num_local_experts";
  h.top_k_field = at + "num_experts_per_tok";
  h.experts = json_field<int64_t>(j, "num_local_experts", f);
  h.top_k = json_field<int64_t>(j, "num_experts_per_tok", f);
  h.expert_hidden = json_field<int64_t>(j, "intermediate_size", f);
  h.shared_hidden = h.expert_hidden;
  h.scoring = RouterScoring::sigmoid_top_k;
  h.normalize_top_k = false;
  h.weight_input = true;
  const std::string act = json_field<std::string>(j, "hidden_act", f).value_or("silu");
  if (act != "silu")
    throw Error(f + ": " + at + "hidden_act '" + act + "': ffn reads Llama 4's experts as SiLU-gated only");
  h.activation = Activation::swish;
  h.activation_source = "config.json " + at + "hidden_act 'silu' (Llama 4)";
  return h;
}

MoeHints from_config_json(const nlohmann::json& j, const std::string& f) {
  const std::string type = json_field<std::string>(j, "model_type", f).value_or("");
  if (type == "dbrx") return from_dbrx_config(j, f);
  if (type == "llama4" || type == "llama4_text") return from_llama4_config(j, type, f);
  MoeHints h;
  h.source = "config.json (model_type '" + type + "')";
  for (const char* k : {"num_local_experts", "num_experts", "n_routed_experts"})
    if (auto v = json_field<int64_t>(j, k, f)) {
      h.experts = v;
      h.experts_field = k;
      break;
    }
  h.top_k = json_field<int64_t>(j, "num_experts_per_tok", f);
  h.top_k_field = "num_experts_per_tok";
  h.expert_hidden = json_field<int64_t>(j, "moe_intermediate_size", f);
  const bool granite = type == "granitemoe" || type == "granitemoeshared" || type == "granitemoehybrid";
  if (!h.expert_hidden && (type == "mixtral" || type == "olmoe" || granite))
    h.expert_hidden = json_field<int64_t>(j, "intermediate_size", f);
  h.shared_hidden = json_field<int64_t>(j, granite ? "shared_intermediate_size" : "shared_expert_intermediate_size", f);
  if (const auto n = json_field<int64_t>(j, "n_shared_experts", f); n && h.expert_hidden)
    h.shared_hidden = *n * *h.expert_hidden;
  h.groups = json_field<int64_t>(j, "n_group", f);
  h.top_groups = json_field<int64_t>(j, "topk_group", f);
  h.routed_scaling = json_field<double>(j, "routed_scaling_factor", f);
  h.normalize_top_k = json_field<bool>(j, "norm_topk_prob", f);
  const auto scoring = json_field<std::string>(j, "scoring_func", f);
  if (type == "mixtral") {
    h.normalize_top_k = true;
    h.scoring = RouterScoring::softmax;
  } else if (type == "qwen2_moe" || type == "qwen3_moe" || type == "olmoe") {
    if (!h.normalize_top_k) h.normalize_top_k = false;
    h.scoring = RouterScoring::softmax;
  } else if (granite) {
    h.scoring = RouterScoring::softmax_top_k;
    h.normalize_top_k = false;
    return h;
  } else if (type == "deepseek_v2") {
    return deepseek_v2(j, f, h);
  } else if (type == "deepseek_v3" || type == "kimi_k2" || type == "glm4_moe") {
    if (!h.normalize_top_k) h.normalize_top_k = true;
    h.scoring = RouterScoring::sigmoid;
  } else if (type == "gpt_oss") {
    h.scoring = RouterScoring::softmax_top_k;
    h.normalize_top_k = false;
    if (!h.top_k) h.top_k = json_field<int64_t>(j, "experts_per_token", f);
    if (!h.expert_hidden) h.expert_hidden = json_field<int64_t>(j, "intermediate_size", f);
    if (const auto limit = json_field<double>(j, "swiglu_limit", f); limit && *limit != 7.0)
      throw Error(f + ": swiglu_limit = " + std::to_string(*limit) +
                  ": ffn's clamped_swish activation clamps at 7 (gpt-oss's value); other limits are not supported");
    h.activation = Activation::clamped_swish;
    h.activation_source = "config.json model_type 'gpt_oss'";
    return h;
  } else if (!h.normalize_top_k) {
    throw Error(f + ": model_type '" + type +
                "' is not one whose routing ffn knows (mixtral, qwen2_moe, qwen3_moe, olmoe, dbrx, granitemoe, "
                "granitemoeshared, granitemoehybrid, deepseek_v2, deepseek_v3, kimi_k2, glm4_moe, gpt_oss), and "
                "norm_topk_prob is not given: add norm_topk_prob (and scoring_func if not softmax)");
  }
  if (scoring) {
    if (*scoring == "softmax") h.scoring = RouterScoring::softmax;
    else if (*scoring == "sigmoid") h.scoring = RouterScoring::sigmoid;
    else throw Error(f + ": scoring_func '" + *scoring + "': expected softmax or sigmoid");
  }
  if (!h.scoring) h.scoring = RouterScoring::softmax;
  return h;
}

}  // namespace

MoeHints find_moe_hints(const std::string& path, const TensorSource& source) {
  if (const auto arch = source.metadata_string("general.architecture")) return from_gguf(source, *arch);
  const nlohmann::json* config = source.config_json();
  if (!config)
    throw Error(path +
                ": a mixture of experts needs its routing rule and expert count, and there is no config.json beside "
                "the weights (num_experts_per_tok, num_experts, norm_topk_prob, ...)");
  return from_config_json(*config, source.config_json_path());
}

}  // namespace ffn::io
