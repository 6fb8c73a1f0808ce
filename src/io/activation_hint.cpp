#include "io/activation_hint.hpp"

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "ffn/error.hpp"
#include "io/families.hpp"

namespace ffn::io {
namespace {

// The keys transformers' configuration classes name the MLP's activation under, in the order
// a config.json of no known family is searched: Llama, Mistral, Qwen …: hidden_act; Gemma
// 2/3: hidden_activation; GPT-2, GPT-J: activation_function; T5: feed_forward_proj (and the
// dense_act_fn it is parsed into). A known family's row names its own (Falcon's activation).
constexpr const char* kGenericKeys = "hidden_act hidden_activation activation_function feed_forward_proj dense_act_fn";

// T5Config's parse of feed_forward_proj: "[gated-]<act>", the activation an ACT2FN name,
// except that "gated-gelu" means gelu_new (the tanh form), as T5Config has it.
std::string t5_activation_name(const std::string& value, bool& gated, const std::string& file) {
  const bool has_gated = value.rfind("gated-", 0) == 0;
  const std::string act = has_gated ? value.substr(6) : value;
  if (act.empty() || act.find('-') != std::string::npos)
    throw Error(file + ": feed_forward_proj '" + value +
                "' is not of the form '[gated-]<activation>' (e.g. 'gated-gelu', 'relu')");
  gated = has_gated;
  return value == "gated-gelu" ? "gelu_new" : act;
}

Activation hf_activation(const std::string& name, const std::string& where, const std::string& file) {
  if (const auto a = activation_from_hf_name(name)) return *a;
  const std::string reason = hf_activation_refusal(name);  // a transformers name ffn does not run, and why
  throw Error(file + ": " + where + " '" + name + "' is not supported: " +
              (reason.empty() ? "it is no activation name transformers or ffn knows (ffn knows " + hf_activation_names() + ")"
                              : reason));
}

ActivationHint from_config_json(const TensorSource& source, const nlohmann::json& config, bool gated) {
  const std::string& file = source.config_json_path();
  const std::string filename = std::filesystem::path(file).filename().string();
  const FamilyMatch family = find_family(source, false);
  const ModelFamily* f = family.family;
  // A multimodal config keeps its language model's settings in text_config.
  std::vector<std::pair<const nlohmann::json*, std::string>> places{{&config, ""}};
  if (config.contains("text_config") && config["text_config"].is_object())
    places.emplace_back(&config["text_config"], "text_config.");
  const std::string keys = f ? std::string(f->activation_keys) : std::string(kGenericKeys);
  for (const std::string_view word : list_words(keys)) {
    const std::string key(word);
    for (const auto& [json, prefix] : places) {
      if (!json->contains(key) || (*json)[key].is_null()) continue;
      const std::string where = filename + " " + prefix + key;
      if (!(*json)[key].is_string()) throw Error(file + ": " + prefix + key + " is not a string");
      const std::string value = (*json)[key].get<std::string>();
      std::string name = value;
      if (key == "feed_forward_proj") {
        bool says_gated = false;
        name = t5_activation_name(value, says_gated, file);
        if (says_gated != gated)
          throw Error(file + ": feed_forward_proj '" + value + "' means " + (says_gated ? "a gated" : "a 2-matrix") +
                      " block, but the checkpoint's block " + (gated ? "has" : "has no") + " gate projection");
      }
      return {hf_activation(name, prefix + key, file), where + " '" + value + "'", {}};
    }
  }
  if (f && f->default_activation) {
    const std::string how = f->activation_keys.empty() ? "fixed in the family's module"
                                                       : "the configuration's default; no " +
                                                             std::string(f->activation_keys) + " in " + filename;
    return {*f->default_activation,
            family.source + ": " + std::string(activation_name(*f->default_activation)) + " (" + how + ")", {}};
  }
  ActivationHint none;
  none.looked = filename + " (" + file + ") has none of the keys " + keys +
                (family.named.empty() ? " and no model_type"
                                      : (f ? "" : "; its model_type '" + family.named + "' is not in ffn's family table"));
  return none;
}

ActivationHint from_metadata(const TensorSource& source, bool gated) {
  // Files written by `ffn quantize` name their variant.
  if (const auto v = source.metadata_string("ffn.variant"))
    return {parse_variant(*v).activation, "ffn.variant '" + *v + "'", {}};
  if (!source.metadata_string("general.architecture")) return {};
  const FamilyMatch family = find_family(source, false);  // by the architecture, then
  ActivationHint h;
  const ModelFamily* f = family.family;
  if (f && f->gguf_activation) {
    // llama.cpp's T5 runs a block without a gate (T5 v1.0) with ReLU, a gated one with GELU.
    const bool t5_plain = f->gguf_architectures.find("t5") != std::string_view::npos && !gated;
    h.activation = t5_plain ? Activation::relu : *f->gguf_activation;
    h.source = family.source + " (" + std::string(f->name) + ")";
    return h;
  }
  h.looked = "the GGUF file names no activation, and its " + family.source +
             (f ? " is a family whose activation ffn does not fix" : " is not in ffn's family table");
  return h;
}

}  // namespace

ActivationHint find_activation_hint(const TensorSource& source, bool gated) {
  // A file's own metadata (GGUF) speaks for it before a config.json that merely lies nearby.
  ActivationHint hint = from_metadata(source, gated);
  if (hint.activation) return hint;
  if (const nlohmann::json* config = source.config_json()) return from_config_json(source, *config, gated);
  if (hint.looked.empty())
    hint.looked = "no config.json beside it (looked for " + source.config_json_path() + ")";
  return hint;
}

Activation choose_activation(const std::string& path, const TensorSource& src, const std::optional<Variant>& variant,
                             bool gated, std::string& source_out) {
  const ActivationHint hint = find_activation_hint(src, gated);
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
    throw Error(path + ": the checkpoint does not say its activation: " + hint.looked + "; give the variant (--variant), e.g. " +
                std::string(gated ? "swiglu, geglu" : "gelu, relu"));
  source_out = hint.source;
  return *hint.activation;
}

namespace {

bool has_listed_word(std::string_view list, std::string_view word) {
  for (const std::string_view w : list_words(list))
    if (w == word) return true;
  return false;
}

bool is_gemma3n(const FamilyMatch& m) {
  return m.family && (has_listed_word(m.family->model_types, "gemma3n") ||
                      has_listed_word(m.family->gguf_architectures, "gemma3n"));
}

// llama.cpp's gemma3n graph applies the top-k to layers [0, 10) with Φ⁻¹(0.95)
// (llama_model_gemma3n: n_layer_sparsity, f_sparsity_std_mul); Gemma3nTextConfig's default
// is the same ten layers.
constexpr int64_t kGemma3nSparseLayers = 10;
constexpr double kGemma3nSparsity = 0.95;

// A GGUF's sparsity: llama.cpp's converter writes each layer's Φ⁻¹(s) (Normal(0, 1).icdf in
// f32: ≈ 1.6448534 for 0.95, −inf for 0) as {arch}.activation_sparsity_scale; where the file
// has it, s = Φ(that), the pattern the weights were trained with. llama.cpp's graph ignores
// it and fixes 0.95 for layers 0–9, which a file without the key gets (for Gemma 3n's
// released models, 30 and 35 layers with the first 10 sparse, the two agree).
GateSparsityHint gguf_gate_sparsity(const TensorSource& source, const FamilyMatch& family, int64_t layer) {
  if (!is_gemma3n(family)) return {};
  const std::string key = *source.metadata_string("general.architecture") + ".activation_sparsity_scale";
  if (const auto scale = source.metadata_float_array(key)) {
    if (layer >= static_cast<int64_t>(scale->size()))
      throw Error(source.path() + ": metadata " + key + " has " + std::to_string(scale->size()) +
                  " entries, none for layer " + std::to_string(layer));
    const double m = (*scale)[static_cast<size_t>(layer)];
    if (std::isinf(m) && m < 0.0) return {0.0, ""};  // Φ⁻¹(0)
    const double s = std::isfinite(m) ? 0.5 * std::erfc(-m / std::sqrt(2.0)) : 1.0;
    if (!(s < 1.0))
      throw Error(source.path() + ": metadata " + key + "[" + std::to_string(layer) + "] = " + std::to_string(m) +
                  " is not the normal quantile of a sparsity in [0, 1)");
    return {s, "GGUF metadata " + key};
  }
  if (layer >= kGemma3nSparseLayers) return {};
  return {kGemma3nSparsity, family.source + ": llama.cpp's graph's 0.95 for layers 0–9 (the file has no " + key + ")"};
}

GateSparsityHint config_gate_sparsity(const TensorSource& source, const nlohmann::json& config,
                                      const FamilyMatch& family, int64_t layer) {
  const std::string& file = source.config_json_path();
  const std::string filename = std::filesystem::path(file).filename().string();
  const char* key = "activation_sparsity_pattern";
  std::vector<std::pair<const nlohmann::json*, std::string>> places{{&config, ""}};
  if (config.contains("text_config") && config["text_config"].is_object())
    places.emplace_back(&config["text_config"], "text_config.");
  for (const auto& [json, prefix] : places) {
    if (!json->contains(key) || (*json)[key].is_null()) continue;
    const nlohmann::json& pattern = (*json)[key];
    const std::string where = prefix + key;
    if (!pattern.is_array()) throw Error(file + ": " + where + " is not a list (one sparsity per layer)");
    if (layer >= static_cast<int64_t>(pattern.size()))
      throw Error(file + ": " + where + " has " + std::to_string(pattern.size()) + " entries, none for layer " +
                  std::to_string(layer));
    const nlohmann::json& v = pattern[static_cast<size_t>(layer)];
    if (!v.is_number()) throw Error(file + ": " + where + "[" + std::to_string(layer) + "] is not a number");
    const double s = v.get<double>();
    if (!std::isfinite(s) || s < 0.0 || s >= 1.0)
      throw Error(file + ": " + where + "[" + std::to_string(layer) + "] = " + v.dump() +
                  " is not a sparsity in [0, 1)");
    return {s, filename + " " + where};
  }
  if (!is_gemma3n(family)) return {};
  // Gemma3nTextConfig.__post_init__: [0.95] × 10 + [0] × (n − 10) when n > 10, else all 0.
  int64_t layers = 35;  // Gemma3nTextConfig's num_hidden_layers
  for (const auto& [json, prefix] : places)
    if (json->contains("num_hidden_layers") && (*json)["num_hidden_layers"].is_number_integer())
      layers = (*json)["num_hidden_layers"].get<int64_t>();
  const double s = layers > kGemma3nSparseLayers && layer < kGemma3nSparseLayers ? kGemma3nSparsity : 0.0;
  return {s, "Gemma3nTextConfig's default activation_sparsity_pattern (none in " + filename + ")"};
}

}  // namespace

GateSparsityHint find_gate_sparsity(const TensorSource& source, int64_t layer) {
  if (source.metadata_string("ffn.variant")) return {};  // written by ffn quantize: a plain block
  const FamilyMatch family = find_family(source, false);
  if (source.metadata_string("general.architecture")) return gguf_gate_sparsity(source, family, layer);
  if (const nlohmann::json* config = source.config_json()) return config_gate_sparsity(source, *config, family, layer);
  return {};
}

}  // namespace ffn::io
