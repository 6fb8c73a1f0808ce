// MoE configurations: checking one, counting its parameters and bytes, and the presets of
// released models.
#include <cmath>
#include <string>

#include "block/gate_sparsity_checks.hpp"
#include "ffn/accounting.hpp"
#include "ffn/error.hpp"
#include "ffn/moe.hpp"

namespace ffn {

std::string_view router_scoring_name(RouterScoring s) {
  switch (s) {
    case RouterScoring::softmax: return "softmax";
    case RouterScoring::sigmoid: return "sigmoid";
    case RouterScoring::softmax_top_k: return "softmax_top_k";
    case RouterScoring::sigmoid_top_k: return "sigmoid_top_k";
  }
  return "?";
}

RouterScoring parse_router_scoring(std::string_view name) {
  for (RouterScoring s :
       {RouterScoring::softmax, RouterScoring::sigmoid, RouterScoring::softmax_top_k, RouterScoring::sigmoid_top_k})
    if (name == router_scoring_name(s)) return s;
  throw Error("router scoring '" + std::string(name) + "': expected softmax, sigmoid, softmax_top_k or sigmoid_top_k");
}

void validate(const MoeConfig& c) {
  auto field = [](const char* name, int64_t v, const std::string& why) {
    throw Error(std::string(name) + " = " + std::to_string(v) + ": " + why);
  };
  if (c.experts < 1) field("experts", c.experts, "a mixture needs at least one expert");
  if (c.top_k < 1 || c.top_k > c.experts)
    field("top_k (experts per token)", c.top_k, "must be between 1 and the " + std::to_string(c.experts) + " experts");
  if (c.groups < 1 || c.experts % c.groups != 0)
    field("groups (n_group)", c.groups, "must divide the " + std::to_string(c.experts) + " experts");
  if (c.groups > 1 && c.scoring == RouterScoring::sigmoid && c.experts / c.groups < 2)
    field("groups (n_group)", c.groups, "a group's score is the sum of its two best experts; groups need ≥ 2");
  if (c.groups > 1 && (c.scoring == RouterScoring::softmax_top_k || c.scoring == RouterScoring::sigmoid_top_k))
    field("groups (n_group)", c.groups,
          std::string(router_scoring_name(c.scoring)) + " routing has no expert groups");
  if (c.top_groups < 1 || c.top_groups > c.groups)
    field("top_groups (topk_group)", c.top_groups, "must be between 1 and the " + std::to_string(c.groups) + " groups");
  if (c.top_groups * (c.experts / c.groups) < c.top_k)
    field("top_k (experts per token)", c.top_k,
          "more than the " + std::to_string(c.top_groups * (c.experts / c.groups)) + " experts of the top groups");
  if (!std::isfinite(c.routed_scaling) || c.routed_scaling <= 0)
    throw Error("routed_scaling = " + std::to_string(c.routed_scaling) + ": must be finite and > 0");
  if (c.shared_hidden < 0) field("shared_hidden", c.shared_hidden, "must be ≥ 0");
  if (c.shared_gate && c.shared_hidden == 0)
    throw Error("shared_gate: a shared-expert gate without shared experts (shared_hidden = 0)");
  validate(c.expert);
  refuse_gate_sparsity(c.expert, "a mixture of experts", "its experts run the plain gated block (no family has sparse experts)");
}

MoeAccounting account(const MoeConfig& c) {
  validate(c);
  const int64_t D = c.d_model(), E = c.experts;
  MoeAccounting a;
  a.router_parameters = E * D + (c.router_bias ? E : 0) + (c.choice_bias ? E : 0) + (c.shared_gate ? D : 0);
  a.expert_parameters = account(c.expert).parameters;
  if (c.shared_hidden > 0)
    a.shared_parameters = account(BlockConfig{c.expert.variant, D, c.shared_hidden, c.expert.bias, 0.0}).parameters;
  a.total_parameters = a.router_parameters + E * a.expert_parameters + a.shared_parameters;
  a.active_parameters = a.router_parameters + c.top_k * a.expert_parameters + a.shared_parameters;
  const int64_t shared_matmul =
      c.shared_hidden > 0 ? account(BlockConfig{c.expert.variant, D, c.shared_hidden, false, 0.0}).matmul_flops_forward : 0;
  a.active_matmul_flops = 2 * E * D + c.top_k * account(c.expert).matmul_flops_forward + shared_matmul;
  return a;
}

double expected_experts_touched(const MoeConfig& c, int64_t tokens) {
  const double E = static_cast<double>(c.experts), k = static_cast<double>(c.top_k);
  if (tokens <= 0) return 0.0;
  return E * (1.0 - std::pow(1.0 - k / E, static_cast<double>(tokens)));
}

std::optional<double> moe_batch_weight_bytes(const MoeConfig& c, const MatrixTypes& types, int64_t tokens) {
  const auto expert = weight_bytes(c.expert, types);
  if (!expert) return std::nullopt;
  double bytes = 4.0 * static_cast<double>(account(c).router_parameters);
  if (c.shared_hidden > 0) {
    const auto shared = weight_bytes(BlockConfig{c.expert.variant, c.d_model(), c.shared_hidden, c.expert.bias, 0.0}, types);
    if (!shared) return std::nullopt;
    bytes += static_cast<double>(*shared);
  }
  return bytes + expected_experts_touched(c, tokens) * static_cast<double>(*expert);
}

namespace {

MoeConfig swiglu_moe(int64_t d, int64_t expert_hidden, int64_t experts, int64_t k) {
  MoeConfig c;
  c.expert = BlockConfig{{true, Activation::swish}, d, expert_hidden, false, 0.0};
  c.experts = experts;
  c.top_k = k;
  return c;
}

std::vector<MoePreset> make_presets() {
  std::vector<MoePreset> p;
  p.push_back({"mixtral-8x7b", "Mixtral 8x7B", "mistralai/Mixtral-8x7B-v0.1 config.json", swiglu_moe(4096, 14336, 8, 2),
               32, 0, 0});
  p.push_back({"mixtral-8x22b", "Mixtral 8x22B", "mistralai/Mixtral-8x22B-v0.1 config.json",
               swiglu_moe(6144, 16384, 8, 2), 56, 0, 0});
  {
    MoeConfig c = swiglu_moe(2048, 1408, 60, 4);
    c.normalize_top_k = false;  // norm_topk_prob: false
    c.shared_hidden = 5632;     // shared_expert_intermediate_size
    c.shared_gate = true;
    p.push_back({"qwen1.5-moe-a2.7b", "Qwen1.5-MoE-A2.7B", "Qwen/Qwen1.5-MoE-A2.7B config.json", c, 24, 0, 0});
  }
  p.push_back({"qwen3-30b-a3b", "Qwen3-30B-A3B", "Qwen/Qwen3-30B-A3B config.json", swiglu_moe(2048, 768, 128, 8), 48,
               0, 0});
  p.push_back({"qwen3-235b-a22b", "Qwen3-235B-A22B", "Qwen/Qwen3-235B-A22B config.json",
               swiglu_moe(4096, 1536, 128, 8), 94, 0, 0});
  {
    MoeConfig c = swiglu_moe(7168, 2048, 256, 8);
    c.scoring = RouterScoring::sigmoid;
    c.routed_scaling = 2.5;
    c.groups = 8;
    c.top_groups = 4;
    c.choice_bias = true;
    c.shared_hidden = 2048;  // n_shared_experts 1 × moe_intermediate_size
    p.push_back({"deepseek-v3", "DeepSeek-V3 (and Kimi K2's shape of layer)", "deepseek-ai/DeepSeek-V3 config.json", c,
                 61, 3, 18432});
  }
  for (const auto& [name, model, experts, layers] :
       {std::tuple{"gpt-oss-20b", "gpt-oss-20b", int64_t{32}, int64_t{24}},
        std::tuple{"gpt-oss-120b", "gpt-oss-120b", int64_t{128}, int64_t{36}}}) {
    MoeConfig c = swiglu_moe(2880, 2880, experts, 4);
    c.expert.variant.activation = Activation::clamped_swish;  // swiglu_oai: swiglu_limit 7, alpha 1.702
    c.expert.bias = true;
    c.scoring = RouterScoring::softmax_top_k;
    c.router_bias = true;
    p.push_back({name, model,
                 std::string("openai/") + name +
                     " config.json (experts swiglu_oai: (clamp(up, ±7) + 1)·m·σ(1.702·m), m = min(gate, 7))",
                 c, layers, 0, 0});
  }
  return p;
}

}  // namespace

const std::vector<MoePreset>& moe_presets() {
  static const std::vector<MoePreset> presets = make_presets();
  return presets;
}

const MoePreset* find_moe_preset(std::string_view name) {
  for (const auto& p : moe_presets())
    if (p.name == name) return &p;
  return nullptr;
}

}  // namespace ffn
