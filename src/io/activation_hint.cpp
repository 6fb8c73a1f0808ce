#include "io/activation_hint.hpp"

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

}  // namespace ffn::io
