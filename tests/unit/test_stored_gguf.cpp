// Checkpoints run in the types their files store (Checkpoint::load_layer): a GGUF file's
// tensors are used as stored — the same bytes as the InferenceBlock made from the f32
// weights (ggml's quantisers and ours round alike), so the same forward bit for bit —
// without widening or re-quantising; --dtype converts; mixes of types load per matrix; a
// tensor of a type ffn does not read is an error only when the block needs it.
#include <gtest/gtest.h>

#include <cstring>
#include <optional>
#include <random>
#include <tuple>
#include <vector>

#include "expect_error.hpp"
#include "ffn/block.hpp"
#include "ffn/checkpoint.hpp"
#include "ffn/inference_block.hpp"
#include "io/gguf.hpp"
#include "test_files.hpp"

namespace ffn {
namespace {

GgmlType ggml_type_of(WeightType t) { return static_cast<GgmlType>(weight_type_info(t).gguf_type); }

// A one-layer file's dense layer for inference, in its stored types or in `type`.
Layer load_layer(const std::string& path, std::optional<WeightType> type = std::nullopt) {
  LoadOptions o;
  o.type = type;
  return Checkpoint(path).load_layer(o);
}

Matrix random_tokens(int64_t T, int64_t D) {
  Matrix x(T, D);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int64_t i = 0; i < x.size(); ++i) x.data()[i] = dist(rng);
  return x;
}

// One layer's SwiGLU block with biases as GGUF, each matrix in its type.
void write_layer(const std::string& path, const Block& f32, const MatrixTypes& t) {
  const auto& c = f32.config();
  const auto& w = f32.weights();
  const int64_t D = c.d_model, H = c.hidden;
  GgufWriter g;
  g.set_string("general.architecture", "llama");
  g.add_tensor("blk.0.ffn_gate.weight", ggml_type_of(t.gate), {D, H}, w.gate.data());
  g.add_tensor("blk.0.ffn_up.weight", ggml_type_of(t.up), {D, H}, w.up.data());
  g.add_tensor("blk.0.ffn_down.weight", ggml_type_of(t.down), {H, D}, w.down.data());
  g.add_tensor("blk.0.ffn_gate.bias", GgmlType::f32, {H}, w.gate_bias.data());
  g.add_tensor("blk.0.ffn_up.bias", GgmlType::f32, {H}, w.up_bias.data());
  g.add_tensor("blk.0.ffn_down.bias", GgmlType::f32, {D}, w.down_bias.data());
  g.write(path);
}

bool same_forward(const InferenceBlock& a, const InferenceBlock& b, const Matrix& x) {
  Matrix ya(x.rows(), x.cols()), yb(x.rows(), x.cols());
  a.forward(x.view(), ya.view());
  b.forward(x.view(), yb.view());
  return std::memcmp(ya.data(), yb.data(), sizeof(float) * size_t(x.size())) == 0;
}

const BlockConfig kConfig{{true, Activation::swish}, 64, 96, true, 0.0};

TEST(StoredGguf, RunsInTheStoredTypesWithoutRequantising) {
  const Block f32 = Block::random(kConfig, 5);
  const Matrix x = random_tokens(3, kConfig.d_model);
  const MatrixTypes mixes[] = {MatrixTypes::all(WeightType::bf16),
                               MatrixTypes::all(WeightType::f16),
                               MatrixTypes::all(WeightType::q8_0),
                               MatrixTypes::all(WeightType::q4_0),
                               {WeightType::q4_0, WeightType::q4_0, WeightType::q8_0}};
  for (const MatrixTypes& t : mixes) {
    const std::string name = matrix_types_name(t, true);
    test::TempDir dir("stored_gguf");
    write_layer(dir.file("m.gguf"), f32, t);
    const Layer loaded = load_layer(dir.file("m.gguf"));
    EXPECT_EQ(loaded.dense().types(), t) << name;
    EXPECT_EQ(loaded.file_types, t) << name;
    EXPECT_TRUE(same_forward(loaded.dense(), InferenceBlock(f32, t), x)) << name;

    // --dtype: a matrix already in the type is used as it is; the others are converted
    // from their stored values, as the f32 block of the file is.
    const Layer as_q8 = load_layer(dir.file("m.gguf"), WeightType::q8_0);
    EXPECT_EQ(as_q8.dense().types(), MatrixTypes::all(WeightType::q8_0)) << name;
    EXPECT_EQ(as_q8.file_types, t) << name;
    if (t == MatrixTypes::all(WeightType::q8_0)) {
      EXPECT_TRUE(same_forward(as_q8.dense(), loaded.dense(), x)) << name;
    }
    const Block widened = Checkpoint(dir.file("m.gguf")).load_trainable().block;
    EXPECT_TRUE(same_forward(load_layer(dir.file("m.gguf"), WeightType::f32).dense(),
                             InferenceBlock(widened, WeightType::f32), x))
        << name;
  }
}

TEST(StoredGguf, InferenceBlockChecksStoredShapesAndSizes) {
  const Block f32 = Block::random({{true, Activation::swish}, 64, 96, false}, 1);
  const BlockConfig& c = f32.config();
  auto stored = [&] {
    StoredWeights w;
    w.gate = StoredMatrix::encode(f32.weights().gate, WeightType::q8_0, "gate");
    w.up = StoredMatrix::encode(f32.weights().up, WeightType::q8_0, "up");
    w.down = StoredMatrix::encode(f32.weights().down, WeightType::q8_0, "down");
    return w;
  };
  EXPECT_NO_THROW(InferenceBlock(c, stored()));
  StoredWeights short_down = stored();
  short_down.down.bytes.pop_back();
  test::expect_error([&] { InferenceBlock(c, short_down); }, {"down holds", "bytes"});
  StoredWeights wrong_shape = stored();
  std::swap(wrong_shape.up.rows, wrong_shape.up.cols);
  test::expect_error([&] { InferenceBlock(c, wrong_shape); }, {"up is [64, 96]", "[96, 64]"});
  StoredWeights bias = stored();
  bias.up_bias = Matrix(1, 96);
  test::expect_error([&] { InferenceBlock(c, bias); }, {"up bias", "needs 0"});
  // StoredMatrix::decode gives the values round_weights_to gives.
  Block rounded(c);
  rounded.weights().down = f32.weights().down.clone();
  round_weights_to(rounded, MatrixTypes{WeightType::f32, WeightType::f32, WeightType::q8_0});
  const Matrix decoded = stored().down.decode();
  EXPECT_EQ(0, std::memcmp(decoded.data(), rounded.weights().down.data(), sizeof(float) * size_t(decoded.size())));
}

// A llama.cpp file may keep its token embedding (and more) in types ffn does not read
// (i-quants such as IQ2_XXS): the MLP still loads; a block tensor in such a type is an error
// naming it, its type and the types ffn reads.
TEST(StoredGguf, TensorsOfUnreadTypesMatterOnlyWhenTheBlockNeedsThem) {
  // D = 256: a row of the up projection is one iq2_xxs super-block (ggml type 16: 256
  // weights in 66 bytes; the bytes' values do not matter here).
  const BlockConfig c{{true, Activation::swish}, 256, 64, false, 0.0};
  const Block f32 = Block::random(c, 5);
  const auto& w = f32.weights();
  const int64_t D = c.d_model, H = c.hidden;
  auto write = [&](const std::string& path, bool up_unread) {
    const std::vector<std::byte> iq2(size_t(66 * H), std::byte{0x11});
    GgufWriter g;
    g.set_string("general.architecture", "llama");
    g.add_tensor_bytes("token_embd.weight", 16, {256, H}, iq2.data(), int64_t(iq2.size()));
    g.add_tensor("blk.0.ffn_gate.weight", GgmlType::q8_0, {D, H}, w.gate.data());
    if (up_unread)
      g.add_tensor_bytes("blk.0.ffn_up.weight", 16, {D, H}, iq2.data(), int64_t(iq2.size()));
    else
      g.add_tensor("blk.0.ffn_up.weight", GgmlType::q8_0, {D, H}, w.up.data());
    g.add_tensor("blk.0.ffn_down.weight", GgmlType::q8_0, {H, D}, w.down.data());
    g.write(path);
  };
  test::TempDir dir("unread_types");
  write(dir.file("ok.gguf"), false);
  const Layer loaded = load_layer(dir.file("ok.gguf"));
  EXPECT_EQ(loaded.dense().types(), MatrixTypes::all(WeightType::q8_0));
  EXPECT_TRUE(same_forward(loaded.dense(), InferenceBlock(f32, WeightType::q8_0), random_tokens(2, D)));
  EXPECT_NO_THROW((void)Checkpoint(dir.file("ok.gguf")).load_trainable());
  write(dir.file("bad.gguf"), true);
  test::expect_error([&] { (void)load_layer(dir.file("bad.gguf")); }, {"ffn_up.weight", "iq2_xxs", "Q8_0"});
  test::expect_error([&] { (void)Checkpoint(dir.file("bad.gguf")).load_trainable(); }, {"ffn_up.weight", "iq2_xxs"});
}

// llama.cpp's Q4_K_M mix as a file stores it (gate and up q4_K, down q6_K): it loads as
// stored, bit for bit the InferenceBlock of the f32 weights in those types.
TEST(StoredGguf, KQuantMixRunsAsStored) {
  const BlockConfig c{{true, Activation::swish}, 256, 512, true, 0.0};
  const Block f32 = Block::random(c, 6);
  const MatrixTypes q4_k_m{WeightType::q4_K, WeightType::q4_K, WeightType::q6_K};
  test::TempDir dir("kquant_mix");
  write_layer(dir.file("q4_k_m.gguf"), f32, q4_k_m);
  const Layer loaded = load_layer(dir.file("q4_k_m.gguf"));
  EXPECT_EQ(loaded.dense().types(), q4_k_m);
  EXPECT_TRUE(same_forward(loaded.dense(), InferenceBlock(f32, q4_k_m), random_tokens(3, c.d_model)));
}

// A stored block scale that is NaN or infinite (binary16; MXFP4's e8m0 0xff, the OCP
// format's NaN) is refused at load, naming the file, the tensor, the row and the block — not
// run into NaN outputs.
TEST(StoredGguf, NonFiniteBlockScalesAreAnErrorNamingTheTensor) {
  const BlockConfig c{{true, Activation::swish}, 256, 256, false, 0.0};
  const Block f32 = Block::random(c, 7);
  const auto& w = f32.weights();
  test::TempDir dir("bad_scales");
  for (const auto& [type, field, bits, word] : {std::tuple{WeightType::q4_K, 2, uint16_t(0x7E00), "NaN"},
                                                std::tuple{WeightType::q6_K, 208, uint16_t(0x7C00), "infinite"},
                                                std::tuple{WeightType::q8_0, 0, uint16_t(0xFC00), "infinite"},
                                                std::tuple{WeightType::iq4_xs, 0, uint16_t(0x7C01), "NaN"},
                                                std::tuple{WeightType::iq4_nl, 0, uint16_t(0xFC00), "infinite"},
                                                // e8m0 0xff (and the block's first code byte 0)
                                                std::tuple{WeightType::mxfp4, 0, uint16_t(0x00FF), "NaN"}}) {
    StoredMatrix up = StoredMatrix::encode(w.up, type, "up");
    const int64_t row = 5, block = 0;
    std::memcpy(up.bytes.data() + row * up.row_bytes() + block * weight_type_info(type).block_bytes + field, &bits, 2);
    GgufWriter g;
    g.set_string("general.architecture", "llama");
    g.add_tensor("blk.0.ffn_gate.weight", ggml_type_of(type), {c.d_model, c.hidden}, w.gate.data());
    g.add_tensor_bytes("blk.0.ffn_up.weight", weight_type_info(type).gguf_type, {c.d_model, c.hidden}, up.bytes.data(),
                       int64_t(up.bytes.size()));
    g.add_tensor("blk.0.ffn_down.weight", ggml_type_of(type), {c.hidden, c.d_model}, w.down.data());
    const std::string path = dir.file("bad.gguf");
    g.write(path);
    test::expect_error([&] { (void)load_layer(path); },
                       {"tensor 'blk.0.ffn_up.weight'", "row 5, block 0", word, "scale"});
    StoredWeights sw{
        StoredMatrix::encode(w.gate, type, "gate"), up, StoredMatrix::encode(w.down, type, "down"), {}, {}, {}};
    test::expect_error([&] { (void)InferenceBlock(c, sw); }, {"up: row 5, block 0", word});
  }
}

}  // namespace
}  // namespace ffn
