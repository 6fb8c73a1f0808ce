// ffn info: everything about one block — hidden size and its derivation, parameters,
// FLOPs per token, weight bytes per type, bytes read per decoded token — and, for a
// preset, the model's published numbers and the MLP's share of a transformer block; for a
// checkpoint (--weights), each layer's matrices with the type and bytes its file stores.
#include <cstdio>
#include <variant>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "ffn/accounting.hpp"
#include "ffn/checkpoint.hpp"
#include "ffn/config.hpp"
#include "ffn/error.hpp"
#include "ffn/presets.hpp"
#include "format.hpp"
#include "info_moe.hpp"
#include "io/families.hpp"

namespace ffn::cli {
namespace {

struct InfoOptions {
  std::string preset;
  std::string variant = "swiglu";
  std::optional<int64_t> d;
  std::optional<int64_t> hidden;
  std::optional<int64_t> multiple_of;
  std::optional<double> multiplier;
  bool bias = false;
  bool json = false;
  std::string weights;
  std::optional<int64_t> layer;
  std::optional<std::string> file_variant;
  bool families = false;
};

// The family table (io/families.hpp): Markdown, as the README shows it, or JSON.
void print_families(bool json) {
  if (!json) {
    std::printf("%s", io::families_markdown().c_str());
    return;
  }
  nlohmann::json out = nlohmann::json::array();
  for (const auto& f : io::model_families())
    out.push_back({{"family", f.name},
                   {"moe", f.moe},
                   {"model_types", f.model_types},
                   {"gguf_architectures", f.gguf_architectures},
                   {"hugging_face_names", f.hf_names},
                   {"gguf_names", f.gguf_names},
                   {"activation_keys", f.activation_keys},
                   {"default_activation", f.default_activation ? activation_name(*f.default_activation) : ""},
                   {"supported", f.refusal.empty()},
                   {"refusal", f.refusal}});
  std::printf("%s\n", out.dump(2).c_str());
}

// A checkpoint's layers as stored: per layer the block and each matrix's type and bytes.
void print_checkpoint(const InfoOptions& o) {
  const Checkpoint ckpt(o.weights);
  const std::vector<int64_t> layers = o.layer ? std::vector<int64_t>{*o.layer} : ckpt.layers();
  if (layers.empty()) throw Error(o.weights + ": no feed-forward block found");
  nlohmann::json out = nlohmann::json::array();
  int64_t total = 0;
  LoadOptions first;
  first.layer = layers.front();
  if (o.file_variant) first.variant = parse_variant(*o.file_variant);
  const std::string family = ckpt.inspect(first).family;
  if (!o.json)
    std::printf("%s\nfamily: %s\n%-6s %-8s %7s %7s   %-18s %-18s %-18s %10s\n", o.weights.c_str(),
                family.empty() ? "not named by the checkpoint" : family.c_str(), "layer", "variant", "d_model",
                "hidden", "gate", "up", "down", "bytes");
  for (const int64_t layer : layers) {
    LoadOptions lo;
    lo.layer = layer;
    if (o.file_variant) lo.variant = parse_variant(*o.file_variant);
    const LayerInfo info = ckpt.inspect(lo);
    if (const auto* m = std::get_if<MoeConfig>(&info.config)) {
      const auto a = account(*m);
      const std::string types = matrix_types_name(info.file_types, true);  // the routed experts'
      out.push_back({{"layer", layer},
                     {"moe", true},
                     {"experts", m->experts},
                     {"top_k", m->top_k},
                     {"d_model", m->d_model()},
                     {"expert_hidden", m->expert.hidden},
                     {"shared_hidden", m->shared_hidden},
                     {"expert_types", types},
                     {"parameters", a.total_parameters},
                     {"active_parameters", a.active_parameters}});
      if (!o.json)
        std::printf(
            "%-6lld %-8s %7lld %7lld   mixture of %lld experts (%s), top %lld, %s, shared hidden %lld; %s "
            "parameters, %s active\n",
            static_cast<long long>(layer), "moe", static_cast<long long>(m->d_model()),
            static_cast<long long>(m->expert.hidden), static_cast<long long>(m->experts), types.c_str(),
            static_cast<long long>(m->top_k), std::string(router_scoring_name(m->scoring)).c_str(),
            static_cast<long long>(m->shared_hidden), grouped(a.total_parameters).c_str(),
            grouped(a.active_parameters).c_str());
      continue;
    }
    const BlockConfig& c = std::get<BlockConfig>(info.config);
    const MatrixTypes& t = info.file_types;
    const int64_t rows_in[3] = {c.hidden, c.hidden, c.d_model}, cols_in[3] = {c.d_model, c.d_model, c.hidden};
    const WeightType types[3] = {t.gate, t.up, t.down};
    const char* names[3] = {"gate", "up", "down"};
    nlohmann::json j{{"layer", layer},
                     {"variant", variant_name(c.variant)},
                     {"d_model", c.d_model},
                     {"hidden", c.hidden},
                     {"types", matrix_types_name(t, c.variant.gated)}};
    if (c.gate_sparsity > 0.0) j["gate_sparsity"] = c.gate_sparsity;
    int64_t bytes = 0;
    std::string cells[3];
    for (int m = c.variant.gated ? 0 : 1; m < 3; ++m) {
      const int64_t b = rows_in[m] * weight_type_info(types[m]).row_bytes(cols_in[m]);
      bytes += b;
      j["matrices"][names[m]] = {{"type", std::string(weight_type_name(types[m]))}, {"bytes", b}};
      cells[m] = std::string(weight_type_name(types[m])) + " " + megabytes(b);
    }
    total += bytes;
    j["weight_bytes"] = bytes;
    out.push_back(j);
    if (!o.json)
      std::printf("%-6lld %-8s %7lld %7lld   %-18s %-18s %-18s %10s\n", static_cast<long long>(layer),
                  variant_name(c.variant).c_str(), static_cast<long long>(c.d_model), static_cast<long long>(c.hidden),
                  c.variant.gated ? cells[0].c_str() : "-", cells[1].c_str(), cells[2].c_str(),
                  megabytes(bytes).c_str());
    if (!o.json && !info.gate_sparsity_source.empty())
      std::printf("%-6s gate sparsity %s\n", "", info.gate_sparsity_source.c_str());
  }
  if (o.json) {
    std::printf("%s\n", nlohmann::json{{"path", o.weights}, {"family", family}, {"layers", out}, {"weight_bytes", total}}.dump(2).c_str());
    return;
  }
  std::printf("MLP weights of %zu layer%s: %s (f32 biases not counted)\n", layers.size(), layers.size() == 1 ? "" : "s",
              megabytes(total).c_str());
}

nlohmann::json block_json(const BlockConfig& c, const HiddenDerivation& der) {
  const Accounting a = account(c);
  nlohmann::json j;
  j["variant"] = variant_name(c.variant);
  j["gated"] = c.variant.gated;
  j["activation"] = std::string(activation_name(c.variant.activation));
  j["d_model"] = c.d_model;
  j["hidden"] = c.hidden;
  j["bias"] = c.bias;
  j["hidden_derivation"] = der.text;
  j["matrices"] = c.matrices();
  j["parameters"] = a.parameters;
  j["weight_parameters"] = a.weight_parameters;
  j["bias_parameters"] = a.bias_parameters;
  j["matmul_flops_per_token"] = {{"forward", a.matmul_flops_forward},
                                 {"forward_backward", a.matmul_flops_forward_backward}};
  j["activations_per_token"] = a.activations_per_token;
  j["elementwise_products_per_token"] = a.elementwise_products_per_token;
  for (const auto& t : weight_types()) {
    const auto w = weight_bytes(c, t.type);
    const auto dec = decode_bytes_per_token(c, t.type);
    j["weight_bytes"][std::string(t.name)] = w ? nlohmann::json(*w) : nlohmann::json(nullptr);
    j["decode_bytes_per_token"][std::string(t.name)] = dec ? nlohmann::json(*dec) : nlohmann::json(nullptr);
  }
  return j;
}

void print_block(const BlockConfig& c, const HiddenDerivation& der) {
  const Accounting a = account(c);
  std::printf("block        %s (%s, activation %s), d_model %lld, hidden %lld, %s\n", variant_name(c.variant).c_str(),
              c.variant.gated ? "gated" : "2-matrix", std::string(activation_name(c.variant.activation)).c_str(),
              static_cast<long long>(c.d_model), static_cast<long long>(c.hidden), c.bias ? "with bias" : "no bias");
  std::printf("hidden       %s\n", der.text.c_str());
  std::printf("parameters   %s  (%lld matrices of %lld × %lld%s)\n", grouped(a.parameters).c_str(),
              static_cast<long long>(c.matrices()), static_cast<long long>(c.hidden), static_cast<long long>(c.d_model),
              c.bias ? (", + " + grouped(a.bias_parameters) + " bias").c_str() : "");
  std::printf(
      "FLOPs/token  forward %s, forward+backward %s (matrix products, 2 per multiply-add; plus %s activations%s)\n",
      grouped(a.matmul_flops_forward).c_str(), grouped(a.matmul_flops_forward_backward).c_str(),
      grouped(a.activations_per_token).c_str(),
      c.variant.gated ? (" and " + grouped(a.elementwise_products_per_token) + " gate products").c_str() : "");
  std::printf("\n%-7s %14s %22s %14s\n", "weights", "bytes", "decode bytes/token", "FLOP/byte");
  for (const auto& t : weight_types()) {
    const auto w = weight_bytes(c, t.type);
    const auto dec = decode_bytes_per_token(c, t.type);
    std::printf("%-7s %14s %22s %14s\n", std::string(t.name).c_str(), megabytes(w).c_str(),
                dec ? grouped(*dec).c_str()
                    : ("n/a (rows not whole blocks of " + std::to_string(t.block_elements) + ")").c_str(),
                dec ? fixed(static_cast<double>(a.matmul_flops_forward) / static_cast<double>(*dec), 3).c_str() : "");
  }
  std::printf(
      "\nAt T = 1 a decode step reads every weight once for %s FLOPs: it is bound by memory\n"
      "bandwidth, and its cost is the weight bytes above — proportional to the parameter count,\n"
      "not to the number of matrices. Batching T tokens divides the weight bytes per token by T.\n",
      grouped(a.matmul_flops_forward).c_str());
  if (c.variant.gated) {
    const BlockConfig two{{false, Activation::gelu}, c.d_model, 4 * c.d_model, c.bias, 0.0};
    std::printf(
        "Against a GELU MLP at this d (hidden 4·d = %lld, %s parameters): parameters, FLOPs and\n"
        "decode bytes ×%s; the gated block does its work in 3 matrices of width %lld instead of 2 of %lld.\n",
        static_cast<long long>(two.hidden), grouped(account(two).parameters).c_str(),
        fixed(static_cast<double>(a.parameters) / static_cast<double>(account(two).parameters), 4).c_str(),
        static_cast<long long>(c.hidden), static_cast<long long>(two.hidden));
  }
}

void run_info(const InfoOptions& o) {
  if (o.families) return print_families(o.json);
  if (!o.weights.empty()) return print_checkpoint(o);
  nlohmann::json out;
  if (const MoePreset* moe = find_moe_preset(o.preset)) return print_moe_preset(*moe, o.json);
  if (!o.preset.empty()) {
    const Preset& p = find_preset(o.preset);
    const BlockConfig c = p.config();
    validate(c);
    HiddenDerivation der;
    der.explicit_size = true;
    der.hidden = c.hidden;
    der.text = std::to_string(c.hidden) + " (published)";
    std::optional<int64_t> by_rule;
    if (p.multiple_of) {
      const BlockSpec spec{p.variant, p.d_model, std::nullopt, {p.multiple_of, p.ffn_dim_multiplier}, false};
      der = derive_hidden(spec);
      by_rule = der.hidden;
      der.text += by_rule == p.hidden ? "  = published " + std::to_string(p.hidden)
                                      : "  ≠ published " + std::to_string(p.hidden);
    }
    const BlockShare share = block_share(p);
    if (o.json) {
      out = block_json(c, der);
      out["preset"] = {{"name", p.name}, {"model", p.model},    {"source", p.source}, {"published_hidden", p.hidden},
                       {"note", p.note}, {"layers", p.n_layers}};
      if (by_rule)
        out["preset"]["rule"] = {{"multiple_of", *p.multiple_of},
                                 {"ffn_dim_multiplier", p.ffn_dim_multiplier ? nlohmann::json(*p.ffn_dim_multiplier)
                                                                             : nlohmann::json(nullptr)},
                                 {"hidden", *by_rule},
                                 {"matches_published", *by_rule == p.hidden}};
      out["transformer_block"] = {{"mlp_parameters", share.mlp},          {"attention_parameters", share.attention},
                                  {"norm_parameters", share.norms},       {"total_parameters", share.total()},
                                  {"mlp_share", share.mlp_share()},       {"n_heads", p.attention.n_heads},
                                  {"n_kv_heads", p.attention.n_kv_heads}, {"head_dim", p.attention.head_dim}};
      std::printf("%s\n", out.dump(2).c_str());
      return;
    }
    std::printf("preset       %s — %s (%s)\n", p.name.c_str(), p.model.c_str(), p.source.c_str());
    if (p.multiple_of)
      std::printf("Llama rule   multiple_of %lld, ffn_dim_multiplier %s → %lld (%s)\n",
                  static_cast<long long>(*p.multiple_of),
                  p.ffn_dim_multiplier ? fixed(*p.ffn_dim_multiplier, 2).c_str() : "none",
                  static_cast<long long>(*by_rule), *by_rule == p.hidden ? "matches the published size" : "MISMATCH");
    print_block(c, der);
    std::printf("\nOne transformer block of %s (%lld heads, %lld KV heads, head_dim %lld):\n", p.model.c_str(),
                static_cast<long long>(p.attention.n_heads), static_cast<long long>(p.attention.n_kv_heads),
                static_cast<long long>(p.attention.head_dim));
    if (!p.note.empty()) std::printf("  (%s)\n", p.note.c_str());
    std::printf("  MLP %s + attention %s + norms %s = %s weights; the MLP holds %s%% %s\n", grouped(share.mlp).c_str(),
                grouped(share.attention).c_str(), grouped(share.norms).c_str(), grouped(share.total()).c_str(),
                fixed(100.0 * share.mlp_share(), 1).c_str(),
                share.mlp_share() > 0.70   ? "— well above \"roughly two thirds\""
                : share.mlp_share() < 0.63 ? "— below \"roughly two thirds\""
                                           : "— \"roughly two thirds\" holds");
    return;
  }
  if (!o.d) throw Error("info: give --preset P, or --d N (with --variant V)");
  const BlockSpec spec{parse_variant(o.variant), *o.d, o.hidden, {o.multiple_of, o.multiplier}, o.bias};
  const BlockConfig c = resolve(spec);
  const HiddenDerivation der = derive_hidden(spec);
  if (o.json) {
    std::printf("%s\n", block_json(c, der).dump(2).c_str());
    return;
  }
  print_block(c, der);
}

}  // namespace

void add_info_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("info", "Hidden size, parameters, FLOPs and bytes per token of one block or preset");
  auto o = std::make_shared<InfoOptions>();
  auto* preset = cmd->add_option("--preset", o->preset,
                                 "a real model's MLP: llama2-7b, llama2-13b, llama2-70b, llama3-8b, "
                                 "llama3-70b, mistral-7b, qwen2-7b, palm-540b, t5-v1.1-base, gpt2; or a mixture of "
                                 "experts: mixtral-8x7b, mixtral-8x22b, qwen1.5-moe-a2.7b, qwen3-30b-a3b, "
                                 "qwen3-235b-a22b, deepseek-v3, gpt-oss-20b, gpt-oss-120b");
  auto* variant = cmd->add_option("--variant", o->variant,
                                  "relu, gelu, gelu_tanh, swish, glu, bilinear, reglu, geglu, "
                                  "swiglu, swiglu_oai (gpt-oss), or gated_<activation>")
                      ->capture_default_str();
  auto* d = cmd->add_option("--d", o->d, "model width d_model");
  auto* hidden = cmd->add_option("--hidden", o->hidden, "explicit hidden size (wins over the rule)");
  auto* mult_of = cmd->add_option("--multiple-of", o->multiple_of,
                                  "round the hidden size up to a multiple of this "
                                  "(default 256 for gated blocks, 1 otherwise)");
  auto* mult = cmd->add_option("--ffn-dim-multiplier", o->multiplier, "Llama's ffn_dim_multiplier");
  auto* bias = cmd->add_flag("--bias", o->bias, "a bias on every projection");
  cmd->add_flag("--json", o->json, "print JSON");
  auto* weights = cmd->add_option("--weights", o->weights,
                                  "a checkpoint (safetensors, GGUF, a folder): each layer's matrices with the type and "
                                  "bytes the file stores")
                      ->check(CLI::ExistingPath);
  auto* layer = cmd->add_option("--layer", o->layer, "with --weights: only this layer (default: every layer)")
                    ->check(CLI::NonNegativeNumber);
  auto* file_variant = cmd->add_option("--weights-variant", o->file_variant,
                                       "with --weights: the variant, when the checkpoint does not say its activation");
  auto* families = cmd->add_flag("--families", o->families,
                                 "the model families whose MLP checkpoints ffn reads: their tensor names in Hugging "
                                 "Face and GGUF files, where the activation comes from, and whether ffn runs them "
                                 "(a Markdown table; --json for JSON)");
  for (auto* opt : {static_cast<CLI::Option*>(preset), variant, d, hidden, mult_of, mult, bias, weights})
    families->excludes(opt);
  for (auto* opt : {variant, d, hidden, mult_of, mult, bias}) preset->excludes(opt);
  for (auto* opt : {static_cast<CLI::Option*>(preset), d, hidden, mult_of, mult, bias}) weights->excludes(opt);
  layer->needs(weights);
  file_variant->needs(weights);
  cmd->callback([o] { run_info(*o); });
}

}  // namespace ffn::cli
