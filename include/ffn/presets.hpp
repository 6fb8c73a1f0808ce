// Presets: the MLP shapes of real models, with enough of the attention shape to say what
// share of a transformer block's weights the MLP holds.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ffn/config.hpp"

namespace ffn {

struct AttentionShape {
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;  // < n_heads: grouped-query; 1: multi-query
  int64_t head_dim = 0;
  bool qkv_bias = false;   // Qwen2, GPT-2
  bool out_bias = false;   // GPT-2
};

struct Preset {
  std::string name;
  std::string model;   // human name
  std::string source;  // where the numbers come from
  Variant variant;
  int64_t d_model = 0;
  int64_t hidden = 0;  // the published size
  bool bias = false;
  // The published Llama-rule inputs, for models whose hidden size comes from the rule.
  std::optional<int64_t> multiple_of;
  std::optional<double> ffn_dim_multiplier;
  AttentionShape attention;
  int64_t norms_per_block = 2;  // PaLM's parallel block has one
  bool norm_has_shift = false;  // LayerNorm with bias (GPT-2): 2·D parameters, else D
  int64_t n_layers = 0;
  std::string note;  // e.g. which half of an encoder-decoder block is counted

  BlockConfig config() const { return BlockConfig{variant, d_model, hidden, bias, 0.0}; }
};

const std::vector<Preset>& presets();
const Preset& find_preset(std::string_view name);  // throws ffn::Error listing the names

// Weights of one transformer block of the preset, by part.
struct BlockShare {
  int64_t mlp = 0;
  int64_t attention = 0;  // Q, K, V, O projections (+ their biases)
  int64_t norms = 0;      // norm scales (+ shifts for LayerNorm)
  int64_t total() const { return mlp + attention + norms; }
  double mlp_share() const { return static_cast<double>(mlp) / static_cast<double>(total()); }
};
BlockShare block_share(const Preset& p);

}  // namespace ffn
