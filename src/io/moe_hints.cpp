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
// GGUF (llama.cpp's build_moe_ffn): expert_weights_norm defaults to true for llama
// (Mixtral) and qwen3moe, false for qwen2moe and deepseek2; expert_gating_func 1 softmax,
// 2 sigmoid, 3 softmax over the chosen (gpt-oss), default softmax.
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

MoeHints from_config_json(const nlohmann::json& j, const std::string& f) {
  const std::string type = json_field<std::string>(j, "model_type", f).value_or("");
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
  if (!h.expert_hidden && type == "mixtral") h.expert_hidden = json_field<int64_t>(j, "intermediate_size", f);
  h.shared_hidden = json_field<int64_t>(j, "shared_expert_intermediate_size", f);
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
  } else if (type == "qwen2_moe" || type == "qwen3_moe") {
    if (!h.normalize_top_k) h.normalize_top_k = false;
    h.scoring = RouterScoring::softmax;
  } else if (type == "deepseek_v3" || type == "kimi_k2") {
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
                "' is not one whose routing ffn knows (mixtral, qwen2_moe, qwen3_moe, deepseek_v3, kimi_k2, "
                "gpt_oss), and "
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
