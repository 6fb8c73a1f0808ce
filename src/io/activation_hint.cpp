#include "io/activation_hint.hpp"

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "ffn/error.hpp"

namespace ffn::io {
namespace {

ActivationHint from_config_json(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) return {};
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json config;
  try {
    config = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::exception& e) {
    throw Error(file.string() + ": not valid JSON: " + e.what());
  }
  if (!config.is_object()) throw Error(file.string() + ": not a JSON object");
  // Llama, Mistral, Qwen2: hidden_act; GPT-2: activation_function; T5 v1.1: dense_act_fn.
  for (const char* key : {"hidden_act", "activation_function", "dense_act_fn"}) {
    if (!config.contains(key)) continue;
    if (!config[key].is_string()) throw Error(file.string() + ": " + key + " is not a string");
    const std::string name = config[key].get<std::string>();
    const std::string where = file.filename().string() + " " + key + " '" + name + "'";
    return {activation_from_hf_name(name, file.string()), where};
  }
  return {};
}

ActivationHint from_metadata(const TensorSource& source) {
  // llama.cpp's architectures whose feed-forward activation is fixed by the architecture.
  static const std::map<std::string, Activation> kArchitectures{
      {"llama", Activation::swish}, {"mistral", Activation::swish}, {"qwen2", Activation::swish},
      {"qwen3", Activation::swish}, {"qwen2moe", Activation::swish}, {"qwen3moe", Activation::swish},
      {"deepseek2", Activation::swish}, {"gpt2", Activation::gelu_tanh}, {"gemma", Activation::gelu_tanh},
      {"gemma2", Activation::gelu_tanh}};
  const auto meta = source.metadata();
  // Files written by `ffn quantize` name their variant.
  if (const auto v = meta.find("ffn.variant"); v != meta.end())
    return {parse_variant(v->second).activation, "ffn.variant '" + v->second + "'"};
  const auto arch = meta.find("general.architecture");
  if (arch == meta.end()) return {};
  const auto it = kArchitectures.find(arch->second);
  if (it == kArchitectures.end()) return {};
  return {it->second, "general.architecture '" + arch->second + "'"};
}

}  // namespace

Activation activation_from_hf_name(const std::string& name, const std::string& where) {
  static const std::map<std::string, Activation> kNames{
      {"relu", Activation::relu},          {"gelu", Activation::gelu},
      {"gelu_new", Activation::gelu_tanh}, {"gelu_pytorch_tanh", Activation::gelu_tanh},
      // gelu_fast is 0.5·x·(1 + tanh(0.79788456·x·(1 + 0.044715·x²))): the tanh form, regrouped.
      {"gelu_fast", Activation::gelu_tanh}, {"silu", Activation::swish},
      {"swish", Activation::swish},        {"sigmoid", Activation::sigmoid},
      {"linear", Activation::identity},    {"identity", Activation::identity}};
  const auto it = kNames.find(name);
  if (it != kNames.end()) return it->second;
  std::string known;
  for (const auto& [k, v] : kNames) known += (known.empty() ? "" : ", ") + k;
  throw Error(where + ": activation '" + name + "' is not supported; supported: " + known);
}

ActivationHint find_activation_hint(const std::string& weights_path, const TensorSource& source) {
  // A file's own metadata (GGUF) speaks for it before a config.json that merely lies nearby.
  if (auto hint = from_metadata(source); hint.activation) return hint;
  std::error_code ec;
  const auto p = std::filesystem::path(weights_path);
  const auto dir = std::filesystem::is_directory(p, ec) ? p : p.parent_path();
  return from_config_json(dir / "config.json");
}

Activation choose_activation(const std::string& path, const TensorSource& src, const std::optional<Variant>& variant,
                             bool gated, std::string& source_out) {
  const ActivationHint hint = find_activation_hint(path, src);
  if (variant) {
    if (variant->gated != gated)
      throw Error(path + (gated ? ": the block has a gate projection (a gated block) but variant " +
                                      variant_name(*variant) + " has two matrices; choose a gated variant"
                                : ": the block has no gate projection but variant " + variant_name(*variant) +
                                      " is gated; choose a 2-matrix variant"));
    if (hint.activation && *hint.activation != variant->activation)
      throw Error(path + ": " + hint.source + " means activation " + std::string(activation_name(*hint.activation)) +
                  ", but variant " + variant_name(*variant) + " uses " +
                  std::string(activation_name(variant->activation)));
    source_out = hint.activation ? hint.source + " (agrees with the variant given)" : "the variant given";
    return variant->activation;
  }
  if (!hint.activation)
    throw Error(path +
                ": the checkpoint does not say its activation (no config.json beside it); give the variant "
                "(--variant), e.g. " +
                std::string(gated ? "swiglu, geglu" : "gelu, relu"));
  source_out = hint.source;
  return *hint.activation;
}

}  // namespace ffn::io
