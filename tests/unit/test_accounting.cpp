#include <gtest/gtest.h>

#include "ffn/accounting.hpp"
#include "ffn/error.hpp"

namespace ffn {
namespace {

const BlockConfig kGelu4096{{false, Activation::gelu}, 4096, 16384, false, 0.0};
const BlockConfig kSwiGLU4096{{true, Activation::swish}, 4096, 11008, false, 0.0};

TEST(Accounting, TheSeedsNumbers) {
  EXPECT_EQ(account(kGelu4096).parameters, 134217728);
  EXPECT_EQ(account(kSwiGLU4096).parameters, 135266304);
}

TEST(Accounting, FlopsCountMultiplyAddAsTwo) {
  const Accounting a = account(kSwiGLU4096);
  EXPECT_EQ(a.matmul_flops_forward, 2 * 135266304);
  EXPECT_EQ(a.matmul_flops_forward_backward, 6 * 135266304);
  EXPECT_EQ(a.activations_per_token, 11008);
  EXPECT_EQ(a.elementwise_products_per_token, 11008);
  EXPECT_EQ(account(kGelu4096).elementwise_products_per_token, 0);
}

TEST(Accounting, BiasParameters) {
  // GPT-2's MLP: c_fc 768→3072 with bias, c_proj 3072→768 with bias.
  const BlockConfig gpt2{{false, Activation::gelu_tanh}, 768, 3072, true, 0.0};
  EXPECT_EQ(account(gpt2).bias_parameters, 3072 + 768);
  EXPECT_EQ(account(gpt2).parameters, 2 * 768 * 3072 + 3072 + 768);
  const BlockConfig gated{{true, Activation::swish}, 10, 20, true, 0.0};
  EXPECT_EQ(account(gated).parameters, 3 * 10 * 20 + 2 * 20 + 10);
}

TEST(Accounting, WeightBytesPerType) {
  EXPECT_EQ(weight_bytes(kSwiGLU4096, WeightType::f32), 4 * 135266304);
  EXPECT_EQ(weight_bytes(kSwiGLU4096, WeightType::bf16), 2 * 135266304);
  EXPECT_EQ(weight_bytes(kSwiGLU4096, WeightType::f16), 2 * 135266304);
  EXPECT_EQ(weight_bytes(kSwiGLU4096, WeightType::q8_0), 135266304 / 32 * 34);  // 143,720,448
  EXPECT_EQ(weight_bytes(kSwiGLU4096, WeightType::q4_0), 135266304 / 32 * 18);  // 76,087,296
  // Biases stay f32 in every type.
  const BlockConfig gpt2{{false, Activation::gelu_tanh}, 768, 3072, true, 0.0};
  EXPECT_EQ(weight_bytes(gpt2, WeightType::q8_0), 2 * 768 * 3072 / 32 * 34 + 4 * (3072 + 768));
}

TEST(Accounting, BlockFormatsNeedRowsOfWholeBlocks) {
  const BlockConfig odd{{true, Activation::swish}, 100, 256, false, 0.0};  // gate/up rows of 100
  EXPECT_FALSE(weight_bytes(odd, WeightType::q8_0).has_value());
  EXPECT_FALSE(weight_bytes(odd, WeightType::q4_0).has_value());
  EXPECT_TRUE(weight_bytes(odd, WeightType::f16).has_value());
  const BlockConfig odd_hidden{{false, Activation::gelu}, 64, 100, false, 0.0};  // down rows of 100
  EXPECT_FALSE(decode_bytes_per_token(odd_hidden, WeightType::q4_0).has_value());
}

TEST(Accounting, DecodeBytesAreWeightsPlusInputAndOutput) {
  EXPECT_EQ(decode_bytes_per_token(kSwiGLU4096, WeightType::f32), 4 * 135266304 + 8 * 4096);
  EXPECT_EQ(decode_bytes_per_token(kGelu4096, WeightType::bf16), 2 * 134217728 + 8 * 4096);
}

TEST(Accounting, WeightTypeNames) {
  EXPECT_EQ(parse_weight_type("q4_0"), WeightType::q4_0);
  EXPECT_EQ(parse_weight_type("q4_K"), WeightType::q4_K);  // ggml's spelling
  EXPECT_EQ(parse_weight_type("Q5_k"), WeightType::q5_K);  // case does not matter
  EXPECT_THROW(parse_weight_type("iq2_xxs"), Error);
}

}  // namespace
}  // namespace ffn
