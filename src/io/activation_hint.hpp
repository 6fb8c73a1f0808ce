// What a checkpoint says about its activation: Hugging Face's config.json beside the
// weights (hidden_act, hidden_activation, activation_function, T5's feed_forward_proj /
// dense_act_fn, Falcon's activation, or the family's default), or a GGUF file's
// general.architecture (the family's function).
#pragma once

#include <optional>
#include <string>

#include "ffn/config.hpp"
#include "io/tensor_source.hpp"

namespace ffn::io {

struct ActivationHint {
  std::optional<Activation> activation;
  std::string source;  // e.g. "config.json hidden_act 'silu'", for messages
  // When activation is empty: what was looked at and not found, for the error.
  std::string looked;
};

// The source's own metadata (GGUF: ffn.variant, general.architecture) first, then its
// config.json: the keys its family's class reads (families.hpp), in text_config too for a
// multimodal config, else the family's default. Empty, with `looked` saying what was
// searched, when neither says. ffn::Error naming config.json and the key when its activation
// is not a string, has no exact counterpart here, or (T5's feed_forward_proj) disagrees with
// `gated`, whether the block has a gate.
ActivationHint find_activation_hint(const TensorSource& source, bool gated);

// The activation of a block (gated or not) of the checkpoint at `path`: the hint's, checked
// against `variant` when one is given, else the variant's. ffn::Error when they disagree,
// when the variant's gating is not the block's, or when neither says. source_out tells
// where the activation came from, for messages.
Activation choose_activation(const std::string& path, const TensorSource& src, const std::optional<Variant>& variant,
                             bool gated, std::string& source_out);

// Gemma 3n's Gaussian top-k on the gate of one layer (BlockConfig::gate_sparsity).
struct GateSparsityHint {
  double sparsity = 0.0;
  std::string source;  // e.g. "config.json text_config.activation_sparsity_pattern"; empty when 0 by default
};
// The layer's target sparsity:
//   config.json: activation_sparsity_pattern[layer] (at the top or in text_config), whatever
//     the family; absent or null in a Gemma 3n config, the default of Gemma3nTextConfig:
//     0.95 for the first 10 layers when num_hidden_layers (default 35) exceeds 10, else 0;
//   GGUF of architecture gemma3n: Φ(gemma3n.activation_sparsity_scale[layer]) where the file
//     has the key (llama.cpp's converter writes Φ⁻¹ of each layer's sparsity, −inf for 0);
//     else 0.95 for layers 0–9 and 0 after, as llama.cpp's graph fixes it (n_layer_sparsity);
//   otherwise 0.
// ffn::Error naming the file and key when the pattern is not a list of numbers in [0, 1), is
// shorter than layer + 1, or a GGUF's scale is shorter or NaN or +inf.
GateSparsityHint find_gate_sparsity(const TensorSource& source, int64_t layer);

}  // namespace ffn::io
