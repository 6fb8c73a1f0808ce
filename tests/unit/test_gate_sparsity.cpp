// Gemma 3n's Gaussian top-k on the gate (BlockConfig::gate_sparsity): the quantile, the
// configuration's checks, the double reference against hand-computed values and its f32
// bound against a plain f32 forward, and the paths that refuse it by name.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <vector>

#include "block/reference.hpp"
#include "expect_error.hpp"
#include "ffn/backward.hpp"
#include "ffn/checkpoint.hpp"
#include "ffn/block.hpp"
#include "ffn/config.hpp"
#include "ffn/distributed.hpp"
#include "ffn/moe.hpp"
#include "ffn/save.hpp"
#include "test_files.hpp"

namespace ffn {
namespace {

using test::expect_error;

double gelu_tanh(double v) {
  return 0.5 * v * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v)));
}

BlockConfig geglu_tanh(int64_t D, int64_t H, double sparsity) {
  return BlockConfig{{true, Activation::gelu_tanh}, D, H, false, sparsity};
}

TEST(NormalQuantile, KnownValuesToDoublePrecision) {
  // Φ⁻¹(0.95), Φ⁻¹(0.025) from the closed forms' tables (to 17 digits); Φ⁻¹(1/2) = 0.
  EXPECT_NEAR(normal_quantile(0.95), 1.6448536269514722, 1e-12);
  EXPECT_NEAR(normal_quantile(0.025), -1.959963984540054, 1e-12);
  EXPECT_EQ(normal_quantile(0.5), 0.0);
  EXPECT_NEAR(normal_quantile(0.8413447460685429), 1.0, 1e-12);  // Φ(1)
  EXPECT_NEAR(normal_quantile(1e-10), -6.361340902404056, 1e-10);
}

TEST(NormalQuantile, InvertsTheNormalCdfAcrossItsRange) {
  // Φ(Φ⁻¹(p)) = p in both tails and the centre, to the precision Φ itself has there: rounding
  // x by δ moves Φ(x) by the relative |x|·δ, and erfc's argument x/√2 rounds, so the round
  // trip is good to about (1 + x²)·2⁻⁵³ of min(p, 1 − p) (1e-14 allows ~90 ulps of it).
  for (double p : {1e-300, 1e-20, 1e-5, 0.001, 0.02425, 0.1, 0.3, 0.49, 0.5, 0.7, 0.9, 0.97575, 0.999, 1 - 1e-9}) {
    // The smaller tail's probability, exact in double (1 − p is exact for p ≥ 1/2).
    const double x = normal_quantile(p), tail = std::min(p, 1.0 - p);
    const double back = 0.5 * std::erfc((p < 0.5 ? -x : x) / std::sqrt(2.0));  // Φ(x), or 1 − Φ(x)
    EXPECT_NEAR(back, tail, 1e-14 * (1.0 + x * x) * tail) << p;
  }
  EXPECT_NEAR(normal_quantile(0.3), -normal_quantile(0.7), 1e-15);
}

TEST(NormalQuantile, RefusesWhatIsNoProbability) {
  for (double p : {0.0, 1.0, -0.5, 2.0, std::numeric_limits<double>::quiet_NaN()})
    expect_error([&] { normal_quantile(p); }, {"normal_quantile(", "(0, 1)"});
}

TEST(GateSparsity, ValidateChecksTheField) {
  for (double s : {-0.1, 1.0, 1.5, std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()})
    expect_error([&] { validate(geglu_tanh(8, 16, s)); }, {"gate_sparsity = ", "[0, 1)"});
  expect_error([] { validate(BlockConfig{{false, Activation::gelu_tanh}, 8, 16, false, 0.5}); },
               {"gate_sparsity = 0.5", "no gate", "variant.gated = false"});
  validate(geglu_tanh(8, 16, 0.0));
  validate(geglu_tanh(8, 16, 0.95));
}

// D = 2, H = 4, x = (1, 0): the gate values are g = (−1, 0, 1, 4) (mean 1, biased variance
// 14/4), every up value 1; down's first row sums h, its second takes h_3.
Block hand_case(double sparsity) {
  Block b(geglu_tanh(2, 4, sparsity));
  auto& w = b.weights();
  const float g[4] = {-1, 0, 1, 4};
  for (int j = 0; j < 4; ++j) {
    w.gate.row(j)[0] = g[j];
    w.gate.row(j)[1] = 7.0f;  // times x_1 = 0
    w.up.row(j)[0] = 1.0f;
    w.up.row(j)[1] = -3.0f;
    w.down.row(0)[j] = 1.0f;
    w.down.row(1)[j] = j == 3 ? 1.0f : 0.0f;
  }
  return b;
}

TEST(GateSparsity, ReferenceMatchesHandComputedCutoffs) {
  const float x[2] = {1.0f, 0.0f};
  double y[2];
  // s = 1/2: Φ⁻¹ = 0, the cutoff is the mean 1: g' = (0, 0, 0, 3).
  reference_forward_token(hand_case(0.5), x, y);
  EXPECT_NEAR(y[0], gelu_tanh(3.0), 1e-15);
  EXPECT_NEAR(y[1], gelu_tanh(3.0), 1e-15);
  // s = Φ(1): the cutoff is mean + std = 1 + √3.5: only g_3 passes, by 3 − √3.5.
  reference_forward_token(hand_case(0.8413447460685429), x, y);
  EXPECT_NEAR(y[0], gelu_tanh(3.0 - std::sqrt(3.5)), 1e-14);
  // s = Φ(−1) (a negative quantile): cutoff 1 − √3.5 ≈ −0.87: g_0 = −1 is cut, the others pass.
  reference_forward_token(hand_case(1.0 - 0.8413447460685429), x, y);
  const double c = 1.0 - std::sqrt(3.5);
  EXPECT_NEAR(y[0], gelu_tanh(0 - c) + gelu_tanh(1 - c) + gelu_tanh(4 - c), 1e-14);
  EXPECT_NEAR(y[1], gelu_tanh(4 - c), 1e-14);
  // No sparsity: the plain GeGLU-tanh of g.
  reference_forward_token(hand_case(0.0), x, y);
  EXPECT_NEAR(y[0], gelu_tanh(-1) + gelu_tanh(0) + gelu_tanh(1) + gelu_tanh(4), 1e-14);
}

// A plain f32 forward of the Gemma 3n MLP (f32 sums, f32 mean and two-pass std, f32
// multiplier as torch takes it), independent of ffn's kernels.
std::vector<float> naive_f32(const Block& b, const float* x) {
  const auto& c = b.config();
  const auto& w = b.weights();
  const int64_t D = c.d_model, H = c.hidden;
  std::vector<float> g(H), u(H), y(D, 0.0f);
  for (int64_t j = 0; j < H; ++j) {
    float sg = 0, su = 0;
    for (int64_t k = 0; k < D; ++k) {
      sg += w.gate.row(j)[k] * x[k];
      su += w.up.row(j)[k] * x[k];
    }
    g[j] = sg;
    u[j] = su;
  }
  float mean = 0;
  for (float v : g) mean += v;
  mean /= static_cast<float>(H);
  float var = 0;
  for (float v : g) var += (v - mean) * (v - mean);
  const float sigma = std::sqrt(var / static_cast<float>(H));
  const float cutoff = mean + sigma * static_cast<float>(normal_quantile(c.gate_sparsity));
  for (int64_t j = 0; j < H; ++j) {
    const float s = std::max(g[j] - cutoff, 0.0f);
    const float h = 0.5f * s * (1.0f + std::tanh(0.7978845608f * (s + 0.044715f * s * s * s))) * u[j];
    for (int64_t i = 0; i < D; ++i) y[i] += w.down.row(i)[j] * h;
  }
  return y;
}

TEST(GateSparsity, BoundHoldsForAnF32ForwardAndSeparatesTheTopKFromItsAbsence) {
  const int64_t D = 64, H = 256;
  const Block sparse = Block::random(geglu_tanh(D, H, 0.95), 11);
  const Block plain = Block::random(geglu_tanh(D, H, 0.0), 11);  // the same weights: the seed and shapes fix them
  Matrix x(4, D);
  for (int64_t i = 0; i < x.size(); ++i) x.data()[i] = static_cast<float>(std::sin(0.37 * i + 1.0) * 3.0);
  double worst = 0, plain_gap = std::numeric_limits<double>::infinity();
  for (int64_t t = 0; t < x.rows(); ++t) {
    std::vector<double> y(D), bound(D), y_plain(D);
    reference_forward_token(sparse, x.row(t), y.data(), bound.data());
    reference_forward_token(plain, x.row(t), y_plain.data());
    const std::vector<float> f32 = naive_f32(sparse, x.row(t));
    double gap = 0;
    for (int64_t i = 0; i < D; ++i) {
      worst = std::max(worst, std::fabs(f32[i] - y[i]) / bound[i]);
      gap = std::max(gap, std::fabs(y_plain[i] - y[i]) / bound[i]);
    }
    plain_gap = std::min(plain_gap, gap);
  }
  EXPECT_LE(worst, 1.0);
  EXPECT_GT(plain_gap, 100.0);  // the block without the top-k is far outside the bound, every token
}

TEST(GateSparsity, TrainingSlicingExpertsAndSavingRefuseIt) {
  const Block b = Block::random(geglu_tanh(8, 16, 0.95), 3);
  Matrix x(2, 8), y(2, 8), dx(2, 8);
  expect_error([&] { b.forward(x.view(), y.view()); }, {"Block::forward", "gate_sparsity = 0.95"});
  ForwardCache cache;
  expect_error([&] { forward_train(b, x.view(), y.view(), cache, false); }, {"forward_train", "gate_sparsity"});
  BlockGradients grads = zero_gradients(b.config());
  expect_error([&] { backward(b, x.view(), cache, y.view(), dx.view(), grads); }, {"backward", "gate_sparsity"});
  ReferenceGradients rg(b.config());
  double dxr[8];
  expect_error([&] { reference_backward_token(b, x.row(0), y.row(0), dxr, rg); },
               {"reference_backward_token", "gate_sparsity"});
  expect_error([&] { slice_block(b, {0, 8}, true); }, {"slice_block", "gate_sparsity", "mean and std"});
  MoeConfig moe;
  moe.expert = geglu_tanh(8, 16, 0.95);
  moe.experts = 4;
  moe.top_k = 2;
  expect_error([&] { validate(moe); }, {"mixture of experts", "gate_sparsity"});
  const auto path = std::filesystem::temp_directory_path() / "ffn_gate_sparsity_refused.gguf";
  expect_error([&] { save_gguf(path.string(), {LayerToSave{0, &b, {}}}); }, {"layer 0", "gate_sparsity"});
  EXPECT_FALSE(std::filesystem::exists(path));
}

// A Gemma 3n checkpoint (D = 8, H = 16, one layer, pattern [0.95]): the loader gives the
// block its sparsity, says where it came from, and refuses to cut it into hidden slices.
TEST(GateSparsity, CheckpointReadsThePatternAndRefusesSlices) {
  const test::TempDir dir("gemma3n_checkpoint");
  std::vector<float> gate(16 * 8, 0.1f), up(16 * 8, 0.2f), down(8 * 16, 0.3f);
  const std::string p = "model.language_model.layers.0.mlp.";
  test::write_bytes(dir.file("model.safetensors"),
                    test::safetensors_bytes({{p + "gate_proj.weight", "F32", {16, 8}, test::f32_bytes(gate)},
                                             {p + "up_proj.weight", "F32", {16, 8}, test::f32_bytes(up)},
                                             {p + "down_proj.weight", "F32", {8, 16}, test::f32_bytes(down)}}));
  test::write_text(dir.file("config.json"),
                   R"({"model_type": "gemma3n", "text_config": {"model_type": "gemma3n_text",
                       "hidden_activation": "gelu_pytorch_tanh", "activation_sparsity_pattern": [0.95]}})");
  const Checkpoint ckpt(dir.str());
  const LayerInfo info = ckpt.inspect();
  EXPECT_EQ(std::get<BlockConfig>(info.config).gate_sparsity, 0.95);
  EXPECT_EQ(info.gate_sparsity_source, "0.95 (config.json text_config.activation_sparsity_pattern)");
  EXPECT_EQ(ckpt.load_trainable().block.config().gate_sparsity, 0.95);
  expect_error([&] { ckpt.load_trainable({}, 0, 8); }, {"hidden units [0, 8)", "gate_sparsity = 0.95", "slice"});
  expect_error([&] { ckpt.load_stored({}, 8, 16); }, {"hidden units [8, 16)", "gate_sparsity = 0.95"});
  expect_error([&] {
    LoadOptions o;
    o.layer = 0;
    test::write_text(dir.file("config.json"), R"({"model_type": "gemma3n", "activation_sparsity_pattern": []})");
    Checkpoint(dir.str()).inspect(o);
  }, {"config.json", "activation_sparsity_pattern has 0 entries, none for layer 0"});
}

}  // namespace
}  // namespace ffn
