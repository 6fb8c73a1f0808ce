// ffn info --preset for a mixture-of-experts preset: parameters per layer (all, and those
// one token uses), bytes one decoded token reads (the router and the chosen experts'), and
// how the bytes a batch reads grow with its size under uniform routing.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "ffn/accounting.hpp"
#include "ffn/moe.hpp"
#include "format.hpp"
#include "info_moe.hpp"

namespace ffn::cli {
namespace {

constexpr WeightType kTypes[] = {WeightType::f32, WeightType::bf16, WeightType::q8_0, WeightType::q4_K,
                                 WeightType::q4_0};
constexpr int64_t kBatches[] = {1, 2, 4, 8, 16, 64, 256, 1024};

std::string routing_text(const MoeConfig& c) {
  std::string s = std::string(router_scoring_name(c.scoring)) + ", top " + std::to_string(c.top_k) + " of " +
                  std::to_string(c.experts);
  if (c.groups > 1) s += " within the best " + std::to_string(c.top_groups) + " of " + std::to_string(c.groups) + " groups";
  if (c.normalize_top_k) s += ", renormalised";
  if (c.routed_scaling != 1.0) s += ", × " + fixed(c.routed_scaling, 2);
  if (c.choice_bias) s += ", choice bias";
  if (c.router_bias) s += ", router bias";
  return s;
}

}  // namespace

void print_moe_preset(const MoePreset& p, bool json) {
  const MoeConfig& c = p.config;
  const MoeAccounting a = account(c);
  const int64_t moe_layers = p.n_layers - p.dense_layers;
  if (json) {
    nlohmann::json out{{"preset", {{"name", p.name}, {"model", p.model}, {"source", p.source}, {"layers", p.n_layers},
                                   {"dense_layers", p.dense_layers}, {"dense_hidden", p.dense_hidden}}},
                       {"d_model", c.d_model()},
                       {"experts", c.experts},
                       {"top_k", c.top_k},
                       {"expert_hidden", c.expert.hidden},
                       {"shared_hidden", c.shared_hidden},
                       {"routing", routing_text(c)},
                       {"router_parameters", a.router_parameters},
                       {"expert_parameters", a.expert_parameters},
                       {"shared_parameters", a.shared_parameters},
                       {"total_parameters", a.total_parameters},
                       {"active_parameters", a.active_parameters},
                       {"active_matmul_flops_per_token", a.active_matmul_flops}};
    for (WeightType t : kTypes) {
      nlohmann::json rows = nlohmann::json::array();
      for (int64_t T : kBatches)
        if (const auto b = moe_batch_weight_bytes(c, {t, t, t}, T))
          rows.push_back({{"tokens", T}, {"experts_touched", expected_experts_touched(c, T)}, {"weight_bytes", *b}});
      out["batch_bytes"][std::string(weight_type_name(t))] = rows;
    }
    std::printf("%s\n", out.dump(2).c_str());
    return;
  }
  std::printf("preset       %s — %s (%s)\n", p.name.c_str(), p.model.c_str(), p.source.c_str());
  std::printf("layer        mixture of experts: %lld %s experts of d_model %lld, hidden %lld%s\n",
              static_cast<long long>(c.experts), variant_name(c.expert.variant).c_str(),
              static_cast<long long>(c.d_model()), static_cast<long long>(c.expert.hidden),
              c.expert.bias ? ", with biases" : "");
  if (c.shared_hidden > 0)
    std::printf("shared       experts of hidden %lld together%s\n", static_cast<long long>(c.shared_hidden),
                c.shared_gate ? ", output × σ(shared_gate·x)" : "");
  std::printf("routing      %s\n", routing_text(c).c_str());
  std::printf("parameters   router %s, one expert %s, shared %s\n", grouped(a.router_parameters).c_str(),
              grouped(a.expert_parameters).c_str(), grouped(a.shared_parameters).c_str());
  std::printf("per layer    total %s, active per token %s (%s%%)\n", grouped(a.total_parameters).c_str(),
              grouped(a.active_parameters).c_str(),
              fixed(100.0 * static_cast<double>(a.active_parameters) / static_cast<double>(a.total_parameters), 1).c_str());
  std::printf("model's MoE  %lld of %lld layers: %s parameters, %s active per token%s\n",
              static_cast<long long>(moe_layers), static_cast<long long>(p.n_layers),
              grouped(moe_layers * a.total_parameters).c_str(), grouped(moe_layers * a.active_parameters).c_str(),
              p.dense_layers > 0 ? (" (and " + std::to_string(p.dense_layers) + " dense layers of hidden " +
                                    std::to_string(p.dense_hidden) + ")")
                                       .c_str()
                                 : "");
  std::printf("FLOPs/token  %s (matrix products of the router, %lld experts and the shared experts)\n",
              grouped(a.active_matmul_flops).c_str(), static_cast<long long>(c.top_k));
  std::printf("\nWeight bytes a batch of T tokens reads under uniform routing (expected distinct experts\n"
              "E·(1 − (1 − k/E)^T); router in f32):\n%6s %9s", "T", "experts");
  for (WeightType t : kTypes) std::printf(" %12s", std::string(weight_type_name(t)).c_str());
  std::printf("\n");
  for (int64_t T : kBatches) {
    std::printf("%6lld %9s", static_cast<long long>(T), fixed(expected_experts_touched(c, T), 2).c_str());
    for (WeightType t : kTypes) {
      const auto b = moe_batch_weight_bytes(c, {t, t, t}, T);
      std::printf(" %12s", b ? (fixed(*b / 1e6, 1) + " MB").c_str() : "n/a");
    }
    std::printf("\n");
  }
}

}  // namespace ffn::cli
