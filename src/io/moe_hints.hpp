// What a checkpoint says about its mixture of experts beyond the tensor shapes: the routing
// rule and the counts, from Hugging Face's config.json beside the weights or a GGUF file's
// metadata. Every field is what the source states (or its family's default, named in
// `source`); the loader checks them against the tensors.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "ffn/moe.hpp"
#include "io/tensor_source.hpp"

namespace ffn::io {

struct MoeHints {
  std::string source;  // e.g. "config.json (model_type 'qwen2_moe')", "GGUF metadata (qwen2moe)"
  std::string experts_field, top_k_field;  // the keys that gave the counts, for messages
  std::optional<int64_t> experts, top_k, expert_hidden, shared_hidden, groups, top_groups;
  std::optional<bool> normalize_top_k;
  std::optional<double> routed_scaling;
  std::optional<RouterScoring> scoring;
  std::optional<bool> weight_input;  // Llama 4: the routing weight on the experts' inputs
  // The experts' activation when the family fixes it whatever hidden_act says (gpt-oss:
  // clamped_swish, its config.json's hidden_act being "silu"), and what said so.
  std::optional<Activation> activation;
  std::string activation_source;
};

// The GGUF file's own metadata when it has general.architecture, else the source's
// config.json. ffn::Error when neither exists (naming `path` and what is needed), or a field
// has the wrong JSON type, or a family's routing cannot be told (an unknown model_type
// without norm_topk_prob).
MoeHints find_moe_hints(const std::string& path, const TensorSource& source);

}  // namespace ffn::io
