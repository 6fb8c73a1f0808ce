#include "io/activation_hint.hpp"

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "ffn/error.hpp"

namespace ffn::io {
namespace {

ActivationHint from_config_json(const nlohmann::json& config, const std::string& file) {
  // Llama, Mistral, Qwen2: hidden_act; GPT-2: activation_function; T5 v1.1: dense_act_fn.
  for (const char* key : {"hidden_act", "activation_function", "dense_act_fn"}) {
    if (!config.contains(key)) continue;
    if (!config[key].is_string()) throw Error(file + ": " + key + " is not a string");
    const std::string name = config[key].get<std::string>();
    const auto activation = activation_from_hf_name(name);
    if (!activation)
      throw Error(file + ": activation '" + name + "' is not supported; supported: " + hf_activation_names());
    return {*activation, std::filesystem::path(file).filename().string() + " " + key + " '" + name + "'"};
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
  // Files written by `ffn quantize` name their variant.
  if (const auto v = source.metadata_string("ffn.variant"))
    return {parse_variant(*v).activation, "ffn.variant '" + *v + "'"};
  const auto arch = source.metadata_string("general.architecture");
  if (!arch) return {};
  const auto it = kArchitectures.find(*arch);
  if (it == kArchitectures.end()) return {};
  return {it->second, "general.architecture '" + *arch + "'"};
}

}  // namespace

ActivationHint find_activation_hint(const TensorSource& source) {
  // A file's own metadata (GGUF) speaks for it before a config.json that merely lies nearby.
  if (auto hint = from_metadata(source); hint.activation) return hint;
  const nlohmann::json* config = source.config_json();
  return config ? from_config_json(*config, source.config_json_path()) : ActivationHint{};
}

Activation choose_activation(const std::string& path, const TensorSource& src, const std::optional<Variant>& variant,
                             bool gated, std::string& source_out) {
  const ActivationHint hint = find_activation_hint(src);
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
