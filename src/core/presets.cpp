#include "ffn/presets.hpp"

#include "ffn/accounting.hpp"
#include "ffn/error.hpp"

namespace ffn {
namespace {

constexpr Variant kSwiGLU{true, Activation::swish};

std::vector<Preset> make_presets() {
  std::vector<Preset> p;
  // Llama 2 (Touvron et al. 2023), Meta's params.json (dim, multiple_of,
  // ffn_dim_multiplier, n_heads, n_kv_heads) and Hugging Face config.json
  // (intermediate_size) of meta-llama/Llama-2-{7b,13b,70b}-hf.
  p.push_back({"llama2-7b",
               "Llama-2-7B",
               "Meta Llama 2 params.json; HF Llama-2-7b-hf config.json",
               kSwiGLU,
               4096,
               11008,
               false,
               256,
               std::nullopt,
               {32, 32, 128},
               2,
               false,
               32,
               ""});
  p.push_back({"llama2-13b",
               "Llama-2-13B",
               "Meta Llama 2 params.json; HF Llama-2-13b-hf config.json",
               kSwiGLU,
               5120,
               13824,
               false,
               256,
               std::nullopt,
               {40, 40, 128},
               2,
               false,
               40,
               ""});
  p.push_back({"llama2-70b",
               "Llama-2-70B",
               "Meta Llama 2 params.json; HF Llama-2-70b-hf config.json",
               kSwiGLU,
               8192,
               28672,
               false,
               4096,
               1.3,
               {64, 8, 128},
               2,
               false,
               80,
               "grouped-query attention, 8 KV heads"});
  // Llama 3 (Meta, 2024): params.json of Meta-Llama-3-{8B,70B}.
  p.push_back({"llama3-8b",
               "Llama-3-8B",
               "Meta Llama 3 params.json; HF Meta-Llama-3-8B config.json",
               kSwiGLU,
               4096,
               14336,
               false,
               1024,
               1.3,
               {32, 8, 128},
               2,
               false,
               32,
               "grouped-query attention, 8 KV heads"});
  p.push_back({"llama3-70b",
               "Llama-3-70B",
               "Meta Llama 3 params.json; HF Meta-Llama-3-70B config.json",
               kSwiGLU,
               8192,
               28672,
               false,
               4096,
               1.3,
               {64, 8, 128},
               2,
               false,
               80,
               "grouped-query attention, 8 KV heads"});
  // Mistral 7B (Jiang et al. 2023, Table 1): hidden_dim given directly, not by the rule.
  p.push_back({"mistral-7b",
               "Mistral-7B",
               "Mistral 7B paper, Table 1; params.json (hidden_dim 14336)",
               kSwiGLU,
               4096,
               14336,
               false,
               std::nullopt,
               std::nullopt,
               {32, 8, 128},
               2,
               false,
               32,
               "grouped-query attention, 8 KV heads"});
  // Qwen2-7B: HF Qwen/Qwen2-7B config.json (hidden_size 3584, intermediate_size 18944,
  // 28 heads, 4 KV heads); Q, K and V projections carry a bias, O does not.
  p.push_back({"qwen2-7b",
               "Qwen2-7B",
               "HF Qwen/Qwen2-7B config.json; Qwen2 technical report",
               kSwiGLU,
               3584,
               18944,
               false,
               std::nullopt,
               std::nullopt,
               {28, 4, 128, true, false},
               2,
               false,
               28,
               "grouped-query attention, 4 KV heads, bias on Q/K/V"});
  // PaLM 540B (Chowdhery et al. 2022, Table 1 and §2): SwiGLU with d_ff = 4·d, multi-query
  // attention with head size 256, no biases, a parallel block with a single LayerNorm.
  p.push_back({"palm-540b",
               "PaLM-540B",
               "PaLM paper (Chowdhery et al. 2022), Table 1 and section 2",
               kSwiGLU,
               18432,
               73728,
               false,
               std::nullopt,
               std::nullopt,
               {48, 1, 256},
               1,
               false,
               118,
               "multi-query attention (1 KV head), parallel block with one norm"});
  // T5 v1.1 base: HF google/t5-v1_1-base config.json (d_model 768, d_ff 2048, 12 heads of
  // d_kv 64, feed_forward_proj "gated-gelu", whose activation is gelu_new: the tanh form).
  p.push_back({"t5-v1.1-base",
               "T5 v1.1 base",
               "HF google/t5-v1_1-base config.json",
               {true, Activation::gelu_tanh},
               768,
               2048,
               false,
               std::nullopt,
               std::nullopt,
               {12, 12, 64},
               2,
               false,
               12,
               "encoder block (self-attention + FFN); decoder blocks add cross-attention"});
  // GPT-2 small: OpenAI gpt-2 model.py and HF gpt2 config.json (n_embd 768, n_inner =
  // 4·768, gelu_new), biases on every projection, LayerNorm with bias.
  p.push_back({"gpt2",
               "GPT-2 (124M)",
               "OpenAI gpt-2 model.py; HF gpt2 config.json",
               {false, Activation::gelu_tanh},
               768,
               3072,
               true,
               std::nullopt,
               std::nullopt,
               {12, 12, 64, true, true},
               2,
               true,
               12,
               "biases on every projection; LayerNorm with bias"});
  return p;
}

}  // namespace

const std::vector<Preset>& presets() {
  static const std::vector<Preset> all = make_presets();
  return all;
}

const Preset& find_preset(std::string_view name) {
  std::string names;
  for (const auto& p : presets()) {
    if (p.name == name) return p;
    names += (names.empty() ? "" : ", ") + p.name;
  }
  throw Error("preset = '" + std::string(name) + "' is unknown; presets: " + names);
}

BlockShare block_share(const Preset& p) {
  const auto& a = p.attention;
  const int64_t q_width = a.n_heads * a.head_dim;
  const int64_t kv_width = a.n_kv_heads * a.head_dim;
  BlockShare s;
  s.mlp = account(p.config()).parameters;
  s.attention = p.d_model * q_width         // W_q
                + 2 * p.d_model * kv_width  // W_k, W_v
                + q_width * p.d_model;      // W_o
  if (a.qkv_bias) s.attention += q_width + 2 * kv_width;
  if (a.out_bias) s.attention += p.d_model;
  s.norms = p.norms_per_block * p.d_model * (p.norm_has_shift ? 2 : 1);
  return s;
}

}  // namespace ffn
