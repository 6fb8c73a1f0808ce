// Saving blocks (ffn/save.hpp): save_gguf writes layers under llama.cpp's names, each matrix
// in its type, and Checkpoint loads them back as the same blocks; llama_mix_types is the
// rule `ffn quantize` applies per layer.
#include <gtest/gtest.h>

#include <vector>

#include "core/quant_mix.hpp"
#include "expect_error.hpp"
#include "ffn/checkpoint.hpp"
#include "ffn/save.hpp"
#include "io/gguf.hpp"
#include "random_data.hpp"
#include "same_bits.hpp"
#include "test_files.hpp"

namespace ffn {
namespace {

// The two blocks' outputs on x, bit for bit.
bool same_forward(const InferenceBlock& a, const InferenceBlock& b, const Matrix& x) {
  Matrix ya(x.rows(), x.cols()), yb(x.rows(), x.cols());
  a.forward(x.view(), ya.view());
  b.forward(x.view(), yb.view());
  return test::same_bits(ya, yb);
}

// Two layers in their own types load back as stored: the same forward, bit for bit, as the
// InferenceBlock of the f32 weights in those types; the f32 biases and the variant survive.
TEST(Save, LayersLoadBackInTheirTypes) {
  const BlockConfig c{{true, Activation::gelu_tanh}, 256, 512, true, 0.0};
  const Block b3 = Block::random(c, 3), b7 = Block::random(c, 7);
  const MatrixTypes t3{WeightType::q4_K, WeightType::q4_K, WeightType::q6_K};
  const MatrixTypes t7 = MatrixTypes::all(WeightType::q8_0);
  test::TempDir dir("save");
  const std::string path = dir.file("two.gguf");
  save_gguf(path, {{3, &b3, t3}, {7, &b7, t7}}, {.name = "test", .quantization = "mixed"});

  const Checkpoint file(path);
  EXPECT_EQ(file.layers(), (std::vector<int64_t>{3, 7}));
  const Layer l3 = file.load_layer({.layer = 3}), l7 = file.load_layer({.layer = 7});
  EXPECT_EQ(l3.dense().types(), t3);
  EXPECT_EQ(l7.dense().types(), t7);
  EXPECT_EQ(l3.dense().config().variant, c.variant);  // from ffn.variant: GGUF has no activation of its own here
  const Matrix x = test::random_matrix(3, c.d_model, 1);
  EXPECT_TRUE(same_forward(l3.dense(), InferenceBlock(b3, t3), x));
  EXPECT_TRUE(same_forward(l7.dense(), InferenceBlock(b7, t7), x));

  const GgufFile g(path);
  EXPECT_EQ(g.metadata_string("general.name"), "test");
  EXPECT_EQ(g.metadata_string("ffn.quantization"), "mixed");
  EXPECT_EQ(g.metadata_int("ffn.layer_count"), 2);
}

TEST(Save, RefusesWhatCannotBeStored) {
  const Block gated = Block::random({{true, Activation::swish}, 64, 96, false}, 1);
  const Block plain = Block::random({{false, Activation::gelu}, 64, 96, false}, 1);
  test::TempDir dir("save_errors");
  const std::string path = dir.file("bad.gguf");
  test::expect_error([&] { save_gguf(path, {}); }, {"no layer"});
  // gate's rows are D = 64 long: not whole q4_K blocks of 256.
  test::expect_error([&] { save_gguf(path, {{0, &gated, MatrixTypes::all(WeightType::q4_K)}}); },
                     {"blk.0.ffn_gate.weight", "64", "256"});
  test::expect_error([&] { save_gguf(path, {{0, &gated, {}}, {1, &plain, {}}}); }, {"layer 1", "gelu", "swiglu"});
  test::expect_error([&] { save_gguf(path, {{0, &gated, {}}, {0, &gated, {}}}); }, {"blk.0.ffn_gate.weight"});
}

// The public rule is the one `ffn quantize` prints, for every mix and layer.
TEST(Save, LlamaMixTypesFollowTheMixes) {
  for (const QuantMix& mix : quant_mixes())
    for (int64_t layer = 0; layer < 32; ++layer)
      EXPECT_EQ(llama_mix_types(mix.name, layer, 32), quant_mix_types(mix, layer, 32).types) << mix.name << layer;
  // Q4_K_M: down in q6_K where use_more_bits (the first eighth), q4_K elsewhere.
  EXPECT_EQ(llama_mix_types("Q4_K_M", 0, 32), (MatrixTypes{WeightType::q4_K, WeightType::q4_K, WeightType::q6_K}));
  EXPECT_EQ(llama_mix_types("q4_k_m", 4, 32), MatrixTypes::all(WeightType::q4_K));
  test::expect_error([] { (void)llama_mix_types("q4_k_x", 0, 32); }, {"q4_k_x", "q4_k_m", "q2_k"});
}

}  // namespace
}  // namespace ffn
