// The byte-level language model and its training (src/train/train.hpp): the whole
// model's gradient against central finite differences, one step lowering the loss,
// determinism across runs and thread counts, the data split, the schedule and clipping.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "expect_error.hpp"
#include "train/train.hpp"

namespace ffn {
namespace {

// A few kilobytes of English-like text, the same every time.
std::string sample_text(size_t bytes) {
  const char* words[] = {"the ",   "king ", "shall ", "speak ", "of ",    "love ", "and ", "war, ", "my ",
                         "lord. ", "what ", "is ",    "thy ",   "name? ", "to ",   "be ",  "or ",   "not\n"};
  std::string s;
  uint64_t x = 12345;
  while (s.size() < bytes) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    s += words[(x >> 33) % (sizeof(words) / sizeof(words[0]))];
  }
  s.resize(bytes);
  return s;
}

ModelConfig tiny(const char* variant) {
  ModelConfig c;
  c.variant = parse_variant(variant);
  c.window = 3;
  c.embed = 4;
  c.d_model = 8;
  c.hidden = c.variant.gated ? 11 : 16;
  c.layers = 2;
  return c;
}

// Every parameter's gradient against central differences of the f32 loss (evaluated in
// double from f32 logits). The step is what the perturbation really changed in f32, so
// the quotient is exact in double apart from the loss's rounding error δ. Tolerance:
// |fd − g| ≤ δ/ε + ε²·|L'''|/6. Here δ ≲ 1e-6 (loss ≈ 5.5 from sums of ≤ 32 terms in f32,
// u = 6e-8), ε = 1e-2 gives ≤ 1e-4 from rounding; the curvature term is of the same order
// for weights of size ≤ 1 (measured: worst 1.3e-4 in in_proj, whose curvature the norms
// raise, ≤ 1e-5 elsewhere) — so 3e-4 + 2%·|g| holds with margin, while a wrong factor,
// sign or missing term in any layer gives errors of the size of g itself (norms 0.04–2). ReLU variants
// are left to the block's own tests, which take care at the kink; here the smooth ones.
class TrainGradient : public ::testing::TestWithParam<const char*> {};

TEST_P(TrainGradient, WholeModelMatchesCentralDifferences) {
  ThreadPool pool(1);
  LanguageModel model(tiny(GetParam()), 7);
  const ByteData data(sample_text(4000));
  const Batch batch = sample_batch(data.train(), model.config().window, 4, 3, 0);
  ModelGradients grads = model.zero_gradients();
  model.forward_backward(batch, &grads, &pool);
  const std::vector<ParameterRef> params = model.parameters_with(grads);
  int64_t checked = 0;
  for (const ParameterRef& p : params) {
    double norm = 0;
    for (int64_t j = 0; j < p.size; ++j) {
      const float keep = p.value[j];
      const float up = keep + 1e-2f, down = keep - 1e-2f;
      p.value[j] = up;
      const double lp = model.loss(batch, &pool);
      p.value[j] = down;
      const double lm = model.loss(batch, &pool);
      p.value[j] = keep;
      const double fd = (lp - lm) / (double(up) - double(down));
      const double g = p.grad[j];
      EXPECT_LE(std::abs(fd - g), 3e-4 + 0.02 * std::abs(g)) << p.name << "[" << j << "]: fd " << fd << ", grad " << g;
      norm += g * g;
      ++checked;
    }
    EXPECT_GT(norm, 0.0) << p.name << ": gradient is all zero";
  }
  EXPECT_EQ(checked, model.parameters());
}

INSTANTIATE_TEST_SUITE_P(TrainSmooth, TrainGradient, ::testing::Values("swiglu", "gelu", "geglu", "bilinear"));

TEST(TrainModel, ParameterCountIsTheSumOfItsTensors) {
  ModelConfig c = tiny("swiglu");
  LanguageModel model(c, 1);
  ModelGradients g = model.zero_gradients();
  int64_t total = 0;
  for (const auto& p : model.parameters_with(g)) total += p.size;
  EXPECT_EQ(total, model.parameters());
  EXPECT_EQ(model_parameters(c), 256 * 4 + 8 * 12 + 2 * (3 * 8 * 11 + 8) + 8 + 256 * 8);
  ModelConfig wider = c;
  wider.d_model = 12;
  ModelGradients wrong = LanguageModel(wider, 1).zero_gradients();
  const ByteData data(sample_text(1000));
  test::expect_error([&] { model.forward_backward(sample_batch(data.train(), c.window, 4, 1, 0), &wrong); },
                     {"gradient of in_proj", "12"});
  c.layers = 0;
  test::expect_error([&] { validate(c); }, {"layers", "0"});
}

TEST(TrainStep, OneStepLowersTheLossOnAFixedBatch) {
  for (const char* v : {"relu", "gelu", "swiglu", "geglu"}) {
    ModelConfig c = tiny(v);
    c.d_model = 32;
    c.hidden = c.variant.gated ? 85 : 128;
    LanguageModel model(c, 3);
    const ByteData data(sample_text(4000));
    const Batch batch = sample_batch(data.train(), c.window, 64, 1, 0);
    TrainOptions o;
    o.warmup = 0;
    o.lr = 3e-3;
    ModelGradients g = model.zero_gradients();
    const auto params = model.parameters_with(g);
    AdamW opt(params, o);
    const double before = model.forward_backward(batch, &g);
    clip_gradients(params, o.clip);
    opt.step(o.lr);
    const double after = model.loss(batch);
    EXPECT_LT(after, before - 1e-3) << v;
  }
}

TrainResult run(int threads, uint64_t seed) {
  ThreadPool pool(threads);
  ModelConfig c = tiny("swiglu");
  c.d_model = 24;
  c.hidden = 64;
  LanguageModel model(c, seed);
  TrainOptions o;
  o.steps = 12;
  o.batch = 70;  // not a multiple of the thread counts, so the splits differ
  o.warmup = 3;
  o.eval_every = 5;
  o.eval_tokens = 100;
  o.seed = seed;
  o.data_seed = seed;
  return train(model, ByteData(sample_text(6000)), o, &pool);
}

TEST(TrainDeterminism, SameLossesBitForBitOnRerunAndForAnyThreadCount) {
  const TrainResult one = run(1, 5);
  for (int threads : {1, 2, 3}) {
    const TrainResult r = run(threads, 5);
    ASSERT_EQ(r.step_losses.size(), one.step_losses.size());
    for (size_t i = 0; i < r.step_losses.size(); ++i)
      EXPECT_EQ(r.step_losses[i], one.step_losses[i]) << "threads " << threads << ", step " << i;
    ASSERT_EQ(r.curve.size(), 3u);
    EXPECT_EQ(r.valid_loss, one.valid_loss) << "threads " << threads;
  }
  EXPECT_NE(run(2, 6).step_losses.back(), one.step_losses.back());
  EXPECT_LT(one.curve.back().train_loss, one.step_losses.front());
}

// A run killed between checkpoints and resumed ends with the same weights, losses and
// curve, bit for bit, as one never interrupted; a checkpoint of another run is refused.
TEST(TrainCheckpoint, KilledAndResumedRunIsBitIdenticalToAnUninterruptedOne) {
  ThreadPool pool(2);
  ModelConfig c = tiny("swiglu");
  c.d_model = 16;
  c.hidden = 32;
  TrainOptions o;
  o.steps = 12;
  o.batch = 32;
  o.warmup = 3;
  o.eval_every = 5;
  o.eval_tokens = 64;
  const ByteData data(sample_text(6000));
  LanguageModel whole(c, 9);
  const TrainResult expected = train(whole, data, o, &pool);

  const std::string path = ::testing::TempDir() + "ffn_train_checkpoint.safetensors";
  std::remove(path.c_str());
  CheckpointOptions ckpt{path, 4, true};
  LanguageModel killed(c, 9);
  struct Kill {};
  EXPECT_THROW(train(
                   killed, data, o, &pool,
                   [](int64_t step, double) {
                     if (step == 7) throw Kill{};
                   },
                   ckpt),
               Kill);
  LanguageModel resumed(c, 9);  // fresh weights: everything must come from the checkpoint (step 4)
  int64_t first_step = 0;
  const TrainResult r = train(
      resumed, data, o, &pool,
      [&](int64_t step, double) {
        if (!first_step) first_step = step;
      },
      ckpt);
  EXPECT_EQ(first_step, 5);
  EXPECT_EQ(r.step_losses, expected.step_losses);
  ASSERT_EQ(r.curve.size(), expected.curve.size());
  for (size_t i = 0; i < r.curve.size(); ++i) {
    EXPECT_EQ(r.curve[i].train_loss, expected.curve[i].train_loss);
    EXPECT_EQ(r.curve[i].valid_loss, expected.curve[i].valid_loss);
  }
  ModelGradients g1 = whole.zero_gradients(), g2 = resumed.zero_gradients();
  const auto a = whole.parameters_with(g1), b = resumed.parameters_with(g2);
  for (size_t i = 0; i < a.size(); ++i)
    for (int64_t j = 0; j < a[i].size; ++j) ASSERT_EQ(a[i].value[j], b[i].value[j]) << a[i].name << "[" << j << "]";

  o.lr = 1e-3;
  LanguageModel other(c, 9);
  test::expect_error([&] { train(other, data, o, &pool, {}, ckpt); }, {path.c_str(), "another run", "lr="});
  std::remove(path.c_str());
}

TEST(TrainData, SplitsNinetyTenAndDrawsTheSameBatchesForTheSameSeed) {
  const ByteData data(sample_text(1000));
  EXPECT_EQ(data.train().size(), 900u);
  EXPECT_EQ(data.valid(), sample_text(1000).substr(900));
  const Batch a = sample_batch(data.train(), 8, 50, 1, 4), b = sample_batch(data.train(), 8, 50, 1, 4);
  EXPECT_EQ(a.context, b.context);
  EXPECT_EQ(a.target, b.target);
  EXPECT_NE(sample_batch(data.train(), 8, 50, 1, 5).target, a.target);
  // Every example is a real window of the split followed by its next byte.
  for (int64_t t = 0; t < a.tokens(); ++t) {
    const std::string w(a.context.begin() + t * 8, a.context.begin() + t * 8 + 8);
    EXPECT_NE(data.train().find(w + char(a.target[size_t(t)])), std::string::npos);
  }
  EXPECT_EQ(spaced_batch(data.valid(), 8, 1000).tokens(), 92);
  test::expect_error([&] { sample_batch("abc", 8, 1, 1, 0); }, {"3 bytes", "9"});
  test::expect_error([] { ByteData::from_file("/nonexistent/text.txt"); }, {"/nonexistent/text.txt"});
}

TEST(TrainOptimizer, ScheduleWarmsUpThenDecaysByCosine) {
  TrainOptions o;
  o.steps = 110;
  o.warmup = 10;
  o.lr = 1.0;
  o.min_lr_fraction = 0.1;
  EXPECT_DOUBLE_EQ(learning_rate(o, 0), 0.1);
  EXPECT_DOUBLE_EQ(learning_rate(o, 9), 1.0);
  EXPECT_DOUBLE_EQ(learning_rate(o, 10), 1.0);
  EXPECT_NEAR(learning_rate(o, 59), 0.55 + 0.45 * std::cos(M_PI * 49.0 / 99.0), 1e-12);
  EXPECT_DOUBLE_EQ(learning_rate(o, 109), 0.1);
  o.lr = -1;
  test::expect_error([&] { validate(o); }, {"lr", "-1"});
}

TEST(TrainOptimizer, ClippingScalesToTheGlobalNorm) {
  std::vector<float> a{3, 0}, b{0, 4}, va(2), vb(2);
  std::vector<ParameterRef> p{{"a", va.data(), a.data(), 2, true}, {"b", vb.data(), b.data(), 2, false}};
  EXPECT_DOUBLE_EQ(clip_gradients(p, 1.0), 5.0);
  EXPECT_FLOAT_EQ(a[0], 0.6f);
  EXPECT_FLOAT_EQ(b[1], 0.8f);
  EXPECT_NEAR(clip_gradients(p, 10.0), 1.0, 1e-6);
  EXPECT_FLOAT_EQ(a[0], 0.6f);
}

TEST(TrainOptimizer, AdamWFirstStepMovesEachWeightByLrAgainstItsGradientSign) {
  std::vector<float> w{1.0f, -2.0f}, g{0.5f, -0.25f};
  TrainOptions o;
  o.weight_decay = 0.5;
  AdamW opt({{"w", w.data(), g.data(), 2, true}}, o);
  opt.step(0.1);
  // m̂ = g, v̂ = g²: the step is lr·sign(g) (ε aside), after the decay θ·(1 − lr·wd).
  EXPECT_NEAR(w[0], 1.0 * 0.95 - 0.1, 1e-6);
  EXPECT_NEAR(w[1], -2.0 * 0.95 + 0.1, 1e-6);
}

}  // namespace
}  // namespace ffn
