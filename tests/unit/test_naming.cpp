// Checkpoints in the naming schemes of real models, made here byte by byte: each must load
// as the same block, whichever scheme, shard layout or storage order it uses.
#include <gtest/gtest.h>

#include "expect_error.hpp"
#include "ffn/checkpoint.hpp"
#include "ffn/error.hpp"
#include "io/gguf.hpp"
#include "test_files.hpp"

namespace ffn {
namespace {

using test::expect_error;
using test::f32_bytes;
using test::safetensors_bytes;
using test::StTensor;
using test::TempDir;
using test::write_bytes;
using test::write_text;

constexpr int64_t D = 4, H = 6;

// Row-major values start, start + 0.01, ... for a tensor of `shape`.
std::vector<float> ramp(int64_t n, float start) {
  std::vector<float> v(static_cast<size_t>(n));
  for (size_t i = 0; i < v.size(); ++i) v[i] = start + 0.01f * float(i);
  return v;
}

StTensor st(const std::string& name, std::vector<int64_t> shape, const std::vector<float>& v) {
  return {name, "F32", std::move(shape), f32_bytes(v)};
}

// [rows][cols] → [cols][rows]
std::vector<float> transpose(const std::vector<float>& v, int64_t rows, int64_t cols) {
  std::vector<float> t(v.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) t[size_t(c * rows + r)] = v[size_t(r * cols + c)];
  return t;
}

const std::vector<float> kGate = ramp(H * D, 1.0f), kUp = ramp(H * D, 2.0f), kDown = ramp(D * H, 3.0f);

void expect_weights(const Block& b, bool gated) {
  ASSERT_EQ(b.config().d_model, D);
  ASSERT_EQ(b.config().hidden, H);
  EXPECT_EQ(b.config().variant.gated, gated);
  for (int64_t i = 0; i < H * D; ++i) {
    ASSERT_EQ(b.weights().up.data()[i], kUp[size_t(i)]);
    ASSERT_EQ(b.weights().down.data()[i], kDown[size_t(i)]);
    if (gated) {
      ASSERT_EQ(b.weights().gate.data()[i], kGate[size_t(i)]);
    }
  }
}

TEST(Naming, HuggingFaceLayersWithConfigJson) {
  TempDir dir("hf");
  std::vector<StTensor> tensors;
  for (int layer : {0, 1}) {
    const std::string p = "model.layers." + std::to_string(layer) + ".mlp.";
    tensors.push_back(st(p + "gate_proj.weight", {H, D}, layer == 1 ? kGate : ramp(H * D, 9)));
    tensors.push_back(st(p + "up_proj.weight", {H, D}, kUp));
    tensors.push_back(st(p + "down_proj.weight", {D, H}, kDown));
  }
  tensors.push_back(st("model.embed_tokens.weight", {3, D}, ramp(3 * D, 0)));
  write_bytes(dir.file("model.safetensors"), safetensors_bytes(tensors));
  write_text(dir.file("config.json"), R"({"hidden_act": "silu", "mlp_bias": false})");

  const LoadedBlock loaded = Checkpoint(dir.str()).load_trainable({1, std::nullopt});  // the folder itself
  EXPECT_EQ(loaded.scheme, "hugging face");
  EXPECT_EQ(loaded.block.config().variant, (Variant{true, Activation::swish}));
  EXPECT_NE(loaded.activation_source.find("hidden_act 'silu'"), std::string::npos);
  expect_weights(loaded.block, true);

  expect_error([&] { Checkpoint(dir.file("model.safetensors")).load_trainable({7, std::nullopt}); },
               {"layer 7 not found", "hugging face", "2 layers, 0 to 1"});
  // A variant that contradicts config.json is an error, not a silently different block.
  expect_error([&] { Checkpoint(dir.str()).load_trainable({0, Variant{true, Activation::gelu}}); },
               {"hidden_act 'silu'", "swish", "geglu"});
  EXPECT_NO_THROW(Checkpoint(dir.str()).load_trainable({0, Variant{true, Activation::swish}}));

  write_text(dir.file("config.json"), R"({"hidden_act": "quick_gelu"})");  // CLIP's, an ffn activation too
  EXPECT_EQ(Checkpoint(dir.str()).load_trainable({0, std::nullopt}).block.config().variant,
            (Variant{true, Activation::quick_gelu}));
  write_text(dir.file("config.json"), R"({"hidden_act": "gelu_10"})");  // an ACT2FN key ffn does not run
  expect_error([&] { Checkpoint(dir.str()).load_trainable({0, std::nullopt}); }, {"hidden_act 'gelu_10' is not supported", "clips"});
}

TEST(Naming, MetaConsolidatedW1IsGateW3IsUp) {
  TempDir dir("meta");
  write_bytes(dir.file("consolidated.00.safetensors"),
              safetensors_bytes({st("layers.0.feed_forward.w1.weight", {H, D}, kGate),
                                 st("layers.0.feed_forward.w2.weight", {D, H}, kDown),
                                 st("layers.0.feed_forward.w3.weight", {H, D}, kUp)}));
  // No config.json: the activation must be given.
  expect_error([&] { Checkpoint(dir.file("consolidated.00.safetensors")).load_trainable(); }, {"does not say its activation", "--variant"});
  const LoadedBlock loaded = Checkpoint(dir.file("consolidated.00.safetensors")).load_trainable({0, Variant{true, Activation::swish}});
  EXPECT_EQ(loaded.scheme, "meta");
  expect_weights(loaded.block, true);
}

TEST(Naming, Gpt2Conv1dIsTransposedWithBiases) {
  TempDir dir("gpt2");
  for (const std::string prefix : {"", "transformer."}) {
    write_bytes(dir.file("model.safetensors"),
                safetensors_bytes({st(prefix + "h.0.mlp.c_fc.weight", {D, H}, transpose(kUp, H, D)),
                                   st(prefix + "h.0.mlp.c_fc.bias", {H}, ramp(H, 5)),
                                   st(prefix + "h.0.mlp.c_proj.weight", {H, D}, transpose(kDown, D, H)),
                                   st(prefix + "h.0.mlp.c_proj.bias", {D}, ramp(D, 6))}));
    write_text(dir.file("config.json"), R"({"activation_function": "gelu_new", "n_embd": 4})");
    const LoadedBlock loaded = Checkpoint(dir.file("model.safetensors")).load_trainable();
    EXPECT_EQ(loaded.scheme, "gpt-2");
    EXPECT_EQ(loaded.block.config().variant, (Variant{false, Activation::gelu_tanh}));
    EXPECT_TRUE(loaded.block.config().bias);
    expect_weights(loaded.block, false);
    EXPECT_EQ(loaded.block.weights().down_bias.data()[3], ramp(D, 6)[3]);
  }
}

TEST(Naming, ShardedIndex) {
  TempDir dir("sharded");
  write_bytes(dir.file("model-00001-of-00002.safetensors"),
              safetensors_bytes({st("model.layers.0.mlp.gate_proj.weight", {H, D}, kGate),
                                 st("model.layers.0.mlp.up_proj.weight", {H, D}, kUp)}));
  write_bytes(dir.file("model-00002-of-00002.safetensors"),
              safetensors_bytes({st("model.layers.0.mlp.down_proj.weight", {D, H}, kDown)}));
  write_text(dir.file("model.safetensors.index.json"), R"({"metadata": {"total_size": 288}, "weight_map": {
      "model.layers.0.mlp.gate_proj.weight": "model-00001-of-00002.safetensors",
      "model.layers.0.mlp.up_proj.weight": "model-00001-of-00002.safetensors",
      "model.layers.0.mlp.down_proj.weight": "model-00002-of-00002.safetensors"}})");
  write_text(dir.file("config.json"), R"({"hidden_act": "silu"})");
  expect_weights(Checkpoint(dir.str()).load_trainable().block, true);
  expect_weights(Checkpoint(dir.file("model.safetensors.index.json")).load_trainable().block, true);

  // An index may only name files beside it, and only tensors they hold.
  write_text(dir.file("model.safetensors.index.json"), R"({"weight_map": {"x": "../../etc/passwd"}})");
  expect_error([&] { Checkpoint(dir.str()).load_trainable(); }, {"not a plain file name"});
  write_text(dir.file("model.safetensors.index.json"),
             R"({"weight_map": {"model.layers.0.mlp.down_proj.weight": "model-00001-of-00002.safetensors"}})");
  expect_error([&] { Checkpoint(dir.str()).load_trainable(); }, {"does not hold it"});
  write_text(dir.file("model.safetensors.index.json"), R"({"weight_map": [1]})");
  expect_error([&] { Checkpoint(dir.str()).load_trainable(); }, {"weight_map"});
}

TEST(Naming, GgufBlkNamesAndArchitecture) {
  TempDir dir("gguf");
  GgufWriter w;
  w.set_string("general.architecture", "llama");
  // GGUF lists dimensions innermost first: an [out, in] weight is ne = {in, out}.
  w.add_tensor("blk.0.ffn_gate.weight", GgmlType::f32, {D, H}, kGate.data());
  w.add_tensor("blk.0.ffn_up.weight", GgmlType::f32, {D, H}, kUp.data());
  w.add_tensor("blk.0.ffn_down.weight", GgmlType::f32, {H, D}, kDown.data());
  w.write(dir.file("m.gguf"));
  // A config.json beside it does not override the file's own metadata.
  write_text(dir.file("config.json"), R"({"hidden_act": "gelu"})");
  const LoadedBlock loaded = Checkpoint(dir.file("m.gguf")).load_trainable();
  EXPECT_EQ(loaded.scheme, "gguf");
  EXPECT_EQ(loaded.block.config().variant, (Variant{true, Activation::swish}));
  EXPECT_NE(loaded.activation_source.find("general.architecture 'llama'"), std::string::npos);
  expect_weights(loaded.block, true);
  EXPECT_EQ(Checkpoint(dir.file("m.gguf")).layers(), (std::vector<int64_t>{0}));

  // Declared widths must agree with the tensors.
  w.set_u32("llama.embedding_length", D);
  w.set_u32("llama.feed_forward_length", H);
  w.write(dir.file("m.gguf"));
  EXPECT_NO_THROW(Checkpoint(dir.file("m.gguf")).load_trainable());
  w.set_u32("llama.feed_forward_length", 11008);
  w.write(dir.file("m.gguf"));
  expect_error([&] { Checkpoint(dir.file("m.gguf")).load_trainable(); }, {"llama.feed_forward_length = 11008", "say 6"});
}

TEST(Naming, SingleBlockHasNoOtherLayers) {
  TempDir dir("seeds");
  write_bytes(dir.file("w.safetensors"), safetensors_bytes({st("up.weight", {H, D}, kUp), st("down.weight", {D, H}, kDown)}));
  expect_error([&] { Checkpoint(dir.file("w.safetensors")).load_trainable({3, Variant{false, Activation::gelu}}); },
               {"single block", "layer 3"});
  expect_error([&] { Checkpoint(dir.file("w.safetensors")).load_trainable({-1, Variant{false, Activation::gelu}}); }, {"layer = -1"});
  expect_error([&] { Checkpoint(dir.file("missing.safetensors")).load_trainable(); }, {"missing.safetensors"});
}

}  // namespace
}  // namespace ffn
