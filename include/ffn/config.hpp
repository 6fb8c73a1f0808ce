// Block configuration: which feed-forward block, at what width.
//
// A block is a pair (gated or not) × activation:
//   2-matrix  y = W_down · act(W_up · x)                      hidden = 4·d by default
//   gated     y = W_down · (act(W_gate · x) ⊙ (W_up · x))     hidden by the Llama rule
// The named variants are the common pairs (Shazeer 2020): relu, gelu, gelu_tanh, swish
// (2-matrix) and glu (σ), bilinear (identity), reglu, geglu, swiglu (gated). gpt-oss's
// experts are a gated pair of their own, swiglu_oai (clamped_swish below).
// Shapes: D = d_model, H = hidden. Weights follow nn.Linear: weight[out][in].
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ffn {

enum class Activation {
  relu,
  gelu,       // exact: x·Φ(x) = 0.5·x·(1 + erf(x/√2))
  gelu_tanh,  // 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), GPT-2's and T5 v1.1's
  swish,      // x·σ(x) (SiLU, β = 1)
  sigmoid,    // σ(x), the gate of the original GLU
  identity,   // the gate of the Bilinear variant
  // gpt-oss's gated activation (HF GptOssExperts; llama.cpp's swiglu_oai), gated blocks only:
  //   h = act(g)·(clamp(u, −7, 7) + 1),  act(g) = m·σ(1.702·m),  m = min(g, 7)
  // The gate is clamped from above only, the up value on both sides and shifted by one.
  // The limit 7 (gpt-oss's swiglu_limit) and α = 1.702 are fixed in the activation, not
  // parameters: a checkpoint with another swiglu_limit is not this activation.
  clamped_swish,
  quick_gelu,  // x·σ(1.702·x) (transformers' QuickGELUActivation; CLIP); clamped_swish without the clamp
  relu2,       // relu(x)² (transformers' ReLUSquaredActivation; Nemotron, Primer)
  relu6,       // min(max(x, 0), 6) (torch.nn.ReLU6; 6 is fixed, not a parameter)
};

struct Variant {
  bool gated = true;
  Activation activation = Activation::swish;
  friend bool operator==(const Variant&, const Variant&) = default;
};

std::string_view activation_name(Activation a);
// Canonical name: a named variant ("swiglu"), else "<act>" or "gated_<act>".
std::string variant_name(Variant v);
// Accepts the named variants, "silu" for swish, "swiglu_oai" for {gated, clamped_swish},
// "<act>" and "gated_<act>" / "gated-<act>" for every activation. Throws ffn::Error listing
// the accepted names. ({false, clamped_swish} parses, and validate() then refuses it.)
Variant parse_variant(std::string_view name);
// The nine named variants, in Shazeer's order of presentation (swiglu_oai is named by
// variant_name and parse_variant, but is not one of them).
const std::vector<Variant>& named_variants();

// Hugging Face's name of an activation (transformers' ACT2FN keys, as config.json's
// hidden_act, activation_function or dense_act_fn give it) as ffn's, where the two are the
// same function; nullopt otherwise (gelu_10, mish, an unknown name, ...). The checkpoint
// loader, ffn.load and ffn.torch.patch all read names through it.
std::optional<Activation> activation_from_hf_name(std::string_view name);
// For an ACT2FN key that ffn knows but does not run (gelu_10, mish, prelu, ...): why, in a
// phrase fit to follow "hidden_act 'gelu_10': ". Empty for a name activation_from_hf_name
// maps and for a name that is not an ACT2FN key at all.
std::string hf_activation_refusal(std::string_view name);
// The names activation_from_hf_name knows, sorted and comma-separated (for messages).
std::string hf_activation_names();

// How a hidden size is derived when none is given.
struct HiddenRule {
  // Round the hidden size up to a multiple of this. Default: 256 for gated blocks
  // (Llama's default), 1 (no rounding) for 2-matrix blocks (hidden = 4·d exactly).
  std::optional<int64_t> multiple_of;
  // Llama's ffn_dim_multiplier: h = floor(m · h) before rounding. Must be > 0.
  std::optional<double> ffn_dim_multiplier;
};

// What the user asks for; resolve() turns it into a checked BlockConfig.
struct BlockSpec {
  Variant variant;
  int64_t d_model = 0;
  std::optional<int64_t> hidden;  // an explicit hidden size always wins over the rule
  HiddenRule rule;
  bool bias = false;
};

// How the hidden size came about, step by step, for printing.
struct HiddenDerivation {
  bool explicit_size = false;
  int64_t start = 0;                      // 4·d, or floor(2·(4·d)/3) for gated blocks
  std::optional<int64_t> after_multiplier;  // floor(m · start)
  int64_t multiple_of = 1;
  int64_t hidden = 0;                     // the result
  std::string text;                       // e.g. "8/3·4096 = 10922.67 → 10922 → ×256 → 11008"
};

struct BlockConfig {
  Variant variant;
  int64_t d_model = 0;
  int64_t hidden = 0;
  bool bias = false;
  // Gemma 3n's Gaussian top-k on the gate (transformers' Gemma3nTextMLP._gaussian_topk):
  // the target fraction s of gate channels set to zero, per token g ← relu(g − (mean(g) +
  // std(g)·Φ⁻¹(s))) over the H gate values (biased std) before the activation; 0: none.
  double gate_sparsity = 0.0;
  int64_t matrices() const { return variant.gated ? 3 : 2; }
};

// Φ⁻¹(s), the standard normal quantile, to double precision (for gate_sparsity's cutoff).
// ffn::Error for s outside (0, 1) or not finite.
double normal_quantile(double s);

// Llama's reference rule (llama/model.py, FeedForward.__init__):
//   h = int(2·(4d)/3); if m: h = int(m·h); h = multiple_of·ceil(h / multiple_of).
int64_t llama_hidden(int64_t d_model, int64_t multiple_of, std::optional<double> ffn_dim_multiplier);

// Validates every field and derives the hidden size. Throws ffn::Error naming the field
// and its value: d_model ≤ 0, hidden ≤ 0, multiple_of ≤ 0, multiplier ≤ 0 or not finite,
// and sizes whose parameter count would overflow 64 bits. Also refuses an activation that
// needs a gated block (clamped_swish) in a 2-matrix one, naming variant.gated.
HiddenDerivation derive_hidden(const BlockSpec& spec);
BlockConfig resolve(const BlockSpec& spec);
// Checks an already resolved configuration (e.g. one read from a file). Also refuses a
// gate_sparsity outside [0, 1) or not finite, and one > 0 in a 2-matrix block (no gate),
// naming gate_sparsity.
void validate(const BlockConfig& config);

}  // namespace ffn
