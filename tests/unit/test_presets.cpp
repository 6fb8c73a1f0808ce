#include <gtest/gtest.h>

#include <map>

#include "ffn/accounting.hpp"
#include "ffn/error.hpp"
#include "ffn/presets.hpp"

namespace ffn {
namespace {

TEST(Presets, PublishedSizes) {
  // d_model → hidden as published by each model's authors.
  const std::map<std::string, std::pair<int64_t, int64_t>> published{
      {"llama2-7b", {4096, 11008}},   {"llama2-13b", {5120, 13824}}, {"llama2-70b", {8192, 28672}},
      {"llama3-8b", {4096, 14336}},   {"llama3-70b", {8192, 28672}}, {"mistral-7b", {4096, 14336}},
      {"qwen2-7b", {3584, 18944}},    {"palm-540b", {18432, 73728}}, {"t5-v1.1-base", {768, 2048}},
      {"gpt2", {768, 3072}}};
  EXPECT_EQ(presets().size(), published.size());
  for (const auto& [name, dims] : published) {
    const Preset& p = find_preset(name);
    EXPECT_EQ(p.d_model, dims.first) << name;
    EXPECT_EQ(p.hidden, dims.second) << name;
    EXPECT_NO_THROW(validate(p.config())) << name;
  }
  EXPECT_EQ(find_preset("t5-v1.1-base").variant, (Variant{true, Activation::gelu_tanh}));
  EXPECT_EQ(find_preset("gpt2").variant, (Variant{false, Activation::gelu_tanh}));
  EXPECT_TRUE(find_preset("gpt2").bias);
  EXPECT_EQ(find_preset("palm-540b").variant, (Variant{true, Activation::swish}));
}

TEST(Presets, LlamaRuleReproducesPublishedSizes) {
  // Published multiple_of and ffn_dim_multiplier: Llama-2 7B/13B 256, none; Llama-2-70B
  // 4096, 1.3; Llama-3-8B 1024, 1.3; Llama-3-70B 4096, 1.3.
  int with_rule = 0;
  for (const Preset& p : presets()) {
    if (!p.multiple_of) continue;
    ++with_rule;
    EXPECT_EQ(llama_hidden(p.d_model, *p.multiple_of, p.ffn_dim_multiplier), p.hidden) << p.name;
  }
  EXPECT_EQ(with_rule, 5);
  EXPECT_EQ(find_preset("llama2-70b").multiple_of, 4096);
  EXPECT_EQ(find_preset("llama3-8b").ffn_dim_multiplier, 1.3);
}

TEST(Presets, TransformerBlockWeightsMatchPublishedModelSizes) {
  // Per-layer weights that, with embeddings, give the published totals:
  // GPT-2 small 124,439,808 = 12 · 7,087,872 + (50257 + 1024) · 768 + 2 · 768;
  // Llama-2-7B 6,738,415,616 = 32 · 202,383,360 + 2 · 32000 · 4096 + 4096;
  // Llama-3-8B 8,030,261,248 = 32 · 218,112,000 + 2 · 128256 · 4096 + 4096;
  // Qwen2-7B 7,615,616,512 = 28 · 233,057,792 + 2 · 152064 · 3584 + 3584 (bias on Q, K, V).
  EXPECT_EQ(block_share(find_preset("gpt2")).total(), 7087872);
  EXPECT_EQ(block_share(find_preset("llama2-7b")).total(), 202383360);
  EXPECT_EQ(block_share(find_preset("llama3-8b")).total(), 218112000);
  EXPECT_EQ(block_share(find_preset("qwen2-7b")).total(), 233057792);
}

TEST(Presets, WhereTwoThirdsHolds) {
  // Full multi-head attention: the MLP is about two thirds of a block.
  EXPECT_NEAR(block_share(find_preset("llama2-7b")).mlp_share(), 2.0 / 3.0, 0.01);
  EXPECT_NEAR(block_share(find_preset("gpt2")).mlp_share(), 2.0 / 3.0, 0.01);
  // Grouped-query and multi-query attention shrink attention: the MLP holds far more.
  EXPECT_GT(block_share(find_preset("llama2-70b")).mlp_share(), 0.8);
  EXPECT_GT(block_share(find_preset("qwen2-7b")).mlp_share(), 0.85);
  EXPECT_GT(block_share(find_preset("palm-540b")).mlp_share(), 0.88);
}

TEST(Presets, UnknownNameListsTheKnownOnes) {
  try {
    find_preset("llama4");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("llama4"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("mistral-7b"), std::string::npos);
  }
}

}  // namespace
}  // namespace ffn
