// What a checkpoint says about its activation: Hugging Face's config.json beside the
// weights (hidden_act, activation_function, T5's feed_forward_proj / dense_act_fn), or a
// GGUF file's general.architecture.
#pragma once

#include <optional>
#include <string>

#include "ffn/config.hpp"
#include "io/tensor_source.hpp"

namespace ffn::io {

struct ActivationHint {
  std::optional<Activation> activation;
  std::string source;  // e.g. "config.json hidden_act 'silu'", for messages
};

// The source's own metadata (GGUF: ffn.variant, general.architecture) first, then its
// config.json. Empty when neither says. ffn::Error naming config.json when its activation is
// not a string or has no exact counterpart here (quick_gelu, gelu_10, ...).
ActivationHint find_activation_hint(const TensorSource& source);

// The activation of a block (gated or not) of the checkpoint at `path`: the hint's, checked
// against `variant` when one is given, else the variant's. ffn::Error when they disagree,
// when the variant's gating is not the block's, or when neither says. source_out tells
// where the activation came from, for messages.
Activation choose_activation(const std::string& path, const TensorSource& src, const std::optional<Variant>& variant,
                             bool gated, std::string& source_out);

}  // namespace ffn::io
