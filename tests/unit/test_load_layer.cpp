// One way to load a layer (Checkpoint::load_layer): from one opened checkpoint, a dense
// layer as an InferenceBlock and a mixture of experts as a MoeBlock, bit for bit the blocks
// made from the same weights; each tensor's block scales checked once, not once per expert;
// the weights file and config.json each opened once however many layers load from them.
#include <gtest/gtest.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/weight_type_table.hpp"
#include "expect_error.hpp"
#include "ffn/checkpoint.hpp"
#include "io/gguf.hpp"
#include "io/safetensors.hpp"
#include "same_bits.hpp"
#include "test_files.hpp"

namespace ffn {
namespace {

using test::same_bits;

// Opens of one file while the counter lives, as the kernel reports them (inotify): what the
// loader does, seen from outside it. An open is followed by its close before the next open
// (the readers map a file and close it at once), so no two open events are merged.
class OpenCounter {
 public:
  explicit OpenCounter(const std::string& path) : fd_(inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) {
    if (fd_ < 0 || inotify_add_watch(fd_, path.c_str(), IN_OPEN | IN_CLOSE_NOWRITE) < 0)
      throw Error("inotify on '" + path + "': " + std::strerror(errno));
  }
  ~OpenCounter() { ::close(fd_); }
  OpenCounter(const OpenCounter&) = delete;
  OpenCounter& operator=(const OpenCounter&) = delete;

  // Opens so far.
  int opens() {
    alignas(inotify_event) char buffer[4096];
    for (ssize_t n; (n = ::read(fd_, buffer, sizeof buffer)) > 0;)
      for (ssize_t at = 0; at < n;) {
        const auto* e = reinterpret_cast<const inotify_event*>(buffer + at);
        opens_ += (e->mask & IN_OPEN) ? 1 : 0;
        at += static_cast<ssize_t>(sizeof(inotify_event) + e->len);
      }
    return opens_;
  }

 private:
  int fd_;
  int opens_ = 0;
};

// T rows of D values uniform in [−1, 1): tokens, or a router's weights [E][D].
Matrix random_rows(int64_t T, int64_t D, unsigned seed) {
  Matrix x(T, D);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int64_t i = 0; i < x.size(); ++i) x.data()[i] = dist(rng);
  return x;
}

// A Mixtral-shaped GGUF file (llama.cpp's names): layer 0 a mixture of E experts of hidden H,
// top 2, each expert matrix q8_0 in a 3-D tensor [E][rows][cols], the router f32.
constexpr int64_t kD = 64, kH = 96, kE = 4;

struct MoeWeights {
  MoeRouter router;
  std::vector<Block> experts;
};

MoeWeights write_gguf_moe(const std::string& path) {
  MoeWeights w;
  w.router.weight = random_rows(kE, kD, 3);
  std::vector<float> gate, up, down;  // [E][H][D], [E][H][D], [E][D][H]
  for (int64_t e = 0; e < kE; ++e) {
    w.experts.push_back(Block::random({{true, Activation::swish}, kD, kH, false}, 10 + uint64_t(e)));
    const auto& b = w.experts.back().weights();
    gate.insert(gate.end(), b.gate.data(), b.gate.data() + b.gate.size());
    up.insert(up.end(), b.up.data(), b.up.data() + b.up.size());
    down.insert(down.end(), b.down.data(), b.down.data() + b.down.size());
  }
  GgufWriter g;
  g.set_string("general.architecture", "llama");
  g.set_u32("llama.expert_count", kE);
  g.set_u32("llama.expert_used_count", 2);
  g.add_tensor("blk.0.ffn_gate_inp.weight", GgmlType::f32, {kD, kE}, w.router.weight.data());
  g.add_tensor("blk.0.ffn_gate_exps.weight", GgmlType::q8_0, {kD, kH, kE}, gate.data());
  g.add_tensor("blk.0.ffn_up_exps.weight", GgmlType::q8_0, {kD, kH, kE}, up.data());
  g.add_tensor("blk.0.ffn_down_exps.weight", GgmlType::q8_0, {kH, kD, kE}, down.data());
  g.write(path);
  return w;
}

TEST(LoadLayer, AGgufMixtureOfExpertsChecksEachTensorsScalesOnce) {
  const test::TempDir dir("load_layer_gguf_moe");
  const std::string path = dir.file("moe.gguf");
  const MoeWeights w = write_gguf_moe(path);
  OpenCounter opens(path);
  const int64_t before = block_scales_checked();

  const Checkpoint checkpoint(path);
  const LayerInfo info = checkpoint.inspect({});
  ASSERT_TRUE(info.is_moe());
  EXPECT_EQ(block_scales_checked(), before) << "inspect reads no weights";
  const Layer layer = checkpoint.load_layer({});
  ASSERT_TRUE(layer.is_moe());
  const MoeConfig& c = layer.moe().config();
  EXPECT_EQ(c.experts, kE);
  EXPECT_EQ(c.top_k, 2);
  EXPECT_EQ(layer.file_types, MatrixTypes::all(WeightType::q8_0));
  EXPECT_EQ(layer.scheme, "gguf");
  EXPECT_EQ(layer.routing_source, "GGUF metadata (llama)");
  // Every q8_0 block of the three expert tensors (ffn_gate_exps, ffn_up_exps, ffn_down_exps:
  // 3·E·H·D / 32 blocks) has its scale checked exactly once — by the loader, when it first
  // reads each tensor, and not again by each expert's InferenceBlock (before: each whole 3-D
  // tensor once per expert and once more for each expert's matrices, (E + 1)·3 scans).
  const int64_t blocks = 3 * kE * kH * kD / 32;
  EXPECT_EQ(block_scales_checked() - before, blocks);
  (void)checkpoint.load_layer({});
  EXPECT_EQ(block_scales_checked() - before, blocks) << "a second load of the open checkpoint checks nothing again";
  EXPECT_EQ(opens.opens(), 1);

  // The MoeBlock of the same weights in q8_0 (ggml's quantiser, as the file's): the same
  // forward, bit for bit, through Layer::forward.
  const MoeBlock want = MoeBlock::from_blocks(c, {w.router.weight.clone(), {}, {}, {}}, w.experts, std::nullopt,
                                              MatrixTypes::all(WeightType::q8_0));
  const Matrix x = random_rows(5, kD, 7);
  Matrix got(5, kD), expected(5, kD);
  layer.forward(x.view(), got.view());
  want.forward(x.view(), expected.view());
  EXPECT_TRUE(same_bits(got, expected));
  test::expect_error([&] { (void)layer.dense(); }, {"layer 0 is a mixture of experts"});
}

// A Hugging Face checkpoint whose layer 0 is dense and layer 1 a mixture of experts
// (Qwen3-MoE's names): config.json says the activation of both and the routing of layer 1.
TEST(LoadLayer, DenseAndMoeLayersFromOneCheckpointOpenEachFileOnce) {
  const test::TempDir dir("load_layer_hf");
  const int64_t D = 32, H = 64, E = 3, EH = 32;
  const Block dense = Block::random({{true, Activation::swish}, D, H, false}, 1);
  const Matrix router = random_rows(E, D, 2);
  std::vector<Block> experts;
  std::vector<SafetensorsTensor> tensors{
      {"model.layers.0.mlp.gate_proj.weight", TensorDtype::f32, {H, D}, dense.weights().gate.data()},
      {"model.layers.0.mlp.up_proj.weight", TensorDtype::f32, {H, D}, dense.weights().up.data()},
      {"model.layers.0.mlp.down_proj.weight", TensorDtype::f32, {D, H}, dense.weights().down.data()},
      {"model.layers.1.mlp.gate.weight", TensorDtype::f32, {E, D}, router.data()}};
  for (int64_t e = 0; e < E; ++e)
    experts.push_back(Block::random({{true, Activation::swish}, D, EH, false}, 5 + uint64_t(e)));
  for (int64_t e = 0; e < E; ++e) {
    const std::string p = "model.layers.1.mlp.experts." + std::to_string(e) + ".";
    const auto& b = experts[size_t(e)].weights();
    tensors.push_back({p + "gate_proj.weight", TensorDtype::f32, {EH, D}, b.gate.data()});
    tensors.push_back({p + "up_proj.weight", TensorDtype::f32, {EH, D}, b.up.data()});
    tensors.push_back({p + "down_proj.weight", TensorDtype::f32, {D, EH}, b.down.data()});
  }
  write_safetensors(dir.file("model.safetensors"), tensors);
  test::write_text(dir.file("config.json"),
                   R"({"model_type": "qwen3_moe", "hidden_act": "silu", "num_experts": 3, "num_experts_per_tok": 2,
                       "norm_topk_prob": true, "moe_intermediate_size": 32})");
  OpenCounter weight_opens(dir.file("model.safetensors")), config_opens(dir.file("config.json"));

  const Checkpoint checkpoint(dir.str());
  EXPECT_EQ(checkpoint.layers(), (std::vector<int64_t>{0, 1}));
  EXPECT_FALSE(checkpoint.inspect({0}).is_moe());
  EXPECT_TRUE(checkpoint.inspect({1}).is_moe());
  const Layer first = checkpoint.load_layer({0}), second = checkpoint.load_layer({1});
  EXPECT_EQ(weight_opens.opens(), 1);
  EXPECT_EQ(config_opens.opens(), 1) << "config.json is parsed once, for the activation and the routing alike";

  ASSERT_FALSE(first.is_moe());
  EXPECT_EQ(first.activation_source, "config.json hidden_act 'silu'");
  EXPECT_EQ(first.routing_source, "");
  const Matrix x = random_rows(4, D, 9);
  Matrix got(4, D), want(4, D);
  first.forward(x.view(), got.view());
  InferenceBlock(dense, WeightType::f32).forward(x.view(), want.view());
  EXPECT_TRUE(same_bits(got, want)) << "the dense layer";

  ASSERT_TRUE(second.is_moe());
  EXPECT_EQ(second.routing_source, "config.json (model_type 'qwen3_moe')");
  const MoeBlock moe = MoeBlock::from_blocks(second.moe().config(), {router.clone(), {}, {}, {}}, experts, std::nullopt,
                                             MatrixTypes::all(WeightType::f32));
  second.forward(x.view(), got.view());
  moe.forward(x.view(), want.view());
  EXPECT_TRUE(same_bits(got, want)) << "the mixture of experts";
  EXPECT_EQ(second.d_model(), D);
  test::expect_error([&] { (void)second.dense(); }, {"layer 1 is a mixture of experts"});
  test::expect_error([&] { (void)first.moe(); }, {"layer 0 is a dense block"});
}

}  // namespace
}  // namespace ffn
