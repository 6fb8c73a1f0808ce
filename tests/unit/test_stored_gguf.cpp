// GGUF weights used as stored: load_block with keep_stored_type gives the block that
// stored_as gives from the f32 weights — the same bytes (ggml's quantisers and ours round
// alike), so the same forward bit for bit — without widening or re-quantising.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "expect_error.hpp"
#include "ffn/block.hpp"
#include "ffn/checkpoint.hpp"
#include "ffn/gguf.hpp"
#include "test_files.hpp"

namespace ffn {
namespace {

GgmlType ggml_type_of(WeightType t) {
  switch (t) {
    case WeightType::f32:
      return GgmlType::f32;
    case WeightType::bf16:
      return GgmlType::bf16;
    case WeightType::f16:
      return GgmlType::f16;
    case WeightType::q8_0:
      return GgmlType::q8_0;
    case WeightType::q4_0:
      return GgmlType::q4_0;
  }
  return GgmlType::f32;
}

TEST(StoredGguf, LoadsWithoutRequantisingAndRunsAsStoredAs) {
  const int64_t D = 64, H = 96;
  const BlockConfig c{{true, Activation::swish}, D, H, true};
  const Block f32 = Block::random(c, 5);
  const auto& w = f32.weights();
  Matrix x(3, D), y_loaded(3, D), y_converted(3, D);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int64_t i = 0; i < x.size(); ++i) x.data()[i] = dist(rng);
  for (WeightType t : {WeightType::bf16, WeightType::f16, WeightType::q8_0, WeightType::q4_0}) {
    test::TempDir dir("stored_gguf");
    GgufWriter g;
    g.set_string("general.architecture", "llama");
    g.add_tensor("blk.0.ffn_gate.weight", ggml_type_of(t), {D, H}, w.gate.data());
    g.add_tensor("blk.0.ffn_up.weight", ggml_type_of(t), {D, H}, w.up.data());
    g.add_tensor("blk.0.ffn_down.weight", ggml_type_of(t), {H, D}, w.down.data());
    g.add_tensor("blk.0.ffn_gate.bias", GgmlType::f32, {H}, w.gate_bias.data());
    g.add_tensor("blk.0.ffn_up.bias", GgmlType::f32, {H}, w.up_bias.data());
    g.add_tensor("blk.0.ffn_down.bias", GgmlType::f32, {D}, w.down_bias.data());
    g.write(dir.file("m.gguf"));

    LoadOptions keep;
    keep.keep_stored_type = true;
    const LoadedBlock loaded = load_block(dir.file("m.gguf"), keep);
    const Block converted = f32.stored_as(t);
    const char* name = weight_type_info(t).name.data();
    ASSERT_EQ(loaded.block.weight_type(), t) << name;
    const auto &a = loaded.block.typed_weights(), &b = converted.typed_weights();
    for (auto [m, n] : {std::pair{&a.gate, &b.gate}, {&a.up, &b.up}, {&a.down, &b.down}})
      EXPECT_TRUE(m->bytes == n->bytes) << name;
    loaded.block.forward(x.view(), y_loaded.view());
    converted.forward(x.view(), y_converted.view());
    EXPECT_EQ(0, std::memcmp(y_loaded.data(), y_converted.data(), sizeof(float) * size_t(x.size()))) << name;

    // Without the option the same file loads widened to f32, as before.
    EXPECT_EQ(load_block(dir.file("m.gguf")).block.weight_type(), WeightType::f32);
  }
}

TEST(StoredGguf, FromStoredChecksShapesAndTypes) {
  const BlockConfig c{{true, Activation::swish}, 64, 96, false};
  const Block q8 = Block::random(c, 1).stored_as(WeightType::q8_0);
  auto copy = [&] {
    const auto& s = q8.typed_weights();
    TypedWeights w;
    w.gate = s.gate;
    w.up = s.up;
    w.down = s.down;
    return w;
  };
  EXPECT_NO_THROW(Block::from_stored(c, copy()));
  TypedWeights short_down = copy();
  short_down.down.bytes.pop_back();
  test::expect_error([&] { Block::from_stored(c, std::move(short_down)); }, {"down holds", "bytes"});
  TypedWeights wrong_shape = copy();
  std::swap(wrong_shape.up.rows, wrong_shape.up.cols);
  test::expect_error([&] { Block::from_stored(c, std::move(wrong_shape)); }, {"up is [64, 96]", "[96, 64]"});
  TypedWeights mixed = copy();
  mixed.gate.type = WeightType::q4_0;
  test::expect_error([&] { Block::from_stored(c, std::move(mixed)); }, {"gate is stored as q4_0"});
}

}  // namespace
}  // namespace ffn
