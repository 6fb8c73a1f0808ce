// Mixture-of-experts blocks: the routing rules against a float64 restatement, the tie rule,
// the grouped forward against each expert run alone, determinism (threads, batch), every
// weight type, and the errors of bad configurations, routers and inputs.
//
// Tolerances: routing weights are compared with 1e-5 relative — an f32 softmax / sigmoid of
// logits accurate to a few ulps is within ~1e-6 of the float64 value; a missing
// renormalisation, scale or wrong expert is off by ≥ 1e-2. The forward is checked bit for
// bit against the same experts' InferenceBlocks run token by token and summed in increasing
// expert index (the stated order), so any grouping, gather or scatter mistake shows.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "expect_error.hpp"
#include "ffn/error.hpp"
#include "ffn/moe.hpp"
#include "ffn/moe_train.hpp"
#include "isa_param.hpp"
#include "random_data.hpp"

namespace ffn {
namespace {

MoeConfig small_config(int64_t E, int64_t k, int64_t D = 64, int64_t H = 96) {
  MoeConfig c;
  c.expert = BlockConfig{{true, Activation::swish}, D, H, false, 0.0};
  c.experts = E;
  c.top_k = k;
  return c;
}

// DeepSeek-V3's rule at a small shape: sigmoid, 4 groups keeping 2, choice bias, × 2.5.
MoeConfig deepseek_config() {
  MoeConfig c = small_config(16, 4);
  c.scoring = RouterScoring::sigmoid;
  c.groups = 4;
  c.top_groups = 2;
  c.choice_bias = true;
  c.routed_scaling = 2.5;
  return c;
}

MoeRouter random_router(const MoeConfig& c, uint32_t seed) {
  MoeRouter r;
  r.weight = test::random_matrix(c.experts, c.d_model(), seed, 0.5f);
  if (c.router_bias) r.bias = test::random_matrix(1, c.experts, seed + 1, 0.5f);
  if (c.choice_bias) r.choice_bias = test::random_matrix(1, c.experts, seed + 2, 0.2f);
  if (c.shared_gate) r.shared_gate = test::random_matrix(1, c.d_model(), seed + 3, 0.2f);
  return r;
}

MoeBlock random_moe(const MoeConfig& c, uint32_t seed, const MatrixTypes& types = {}) {
  std::vector<Block> experts;
  for (int64_t e = 0; e < c.experts; ++e) experts.push_back(Block::random(c.expert, seed + 10 + e));
  std::optional<Block> shared;
  if (c.shared_hidden > 0)
    shared = Block::random(BlockConfig{c.expert.variant, c.d_model(), c.shared_hidden, c.expert.bias, 0.0}, seed + 7);
  return MoeBlock::from_blocks(c, random_router(c, seed), experts, shared, types);
}

// The family's rule in float64 on one token's logits: (experts best first, weights).
std::pair<std::vector<int>, std::vector<double>> reference_route(const MoeConfig& c, const MoeRouter& r,
                                                                 const float* x) {
  const int64_t E = c.experts, D = c.d_model(), k = c.top_k;
  std::vector<double> logit(E), score(E), choice(E);
  for (int64_t e = 0; e < E; ++e) {
    double s = c.router_bias ? r.bias.data()[e] : 0.0;
    for (int64_t d = 0; d < D; ++d) s += double(r.weight.row(e)[d]) * x[d];
    logit[e] = s;
  }
  std::vector<int> order(E);
  std::iota(order.begin(), order.end(), 0);
  auto best = [&](const std::vector<double>& v) {
    std::vector<int> o = order;
    std::stable_sort(o.begin(), o.end(), [&](int a, int b) { return v[a] > v[b]; });
    return o;
  };
  std::vector<int> chosen;
  std::vector<double> w;
  if (c.scoring == RouterScoring::sigmoid_top_k) {  // Llama 4: chosen by the logits, weighted σ
    const auto o = best(logit);
    chosen.assign(o.begin(), o.begin() + k);
    double sum = 0;
    for (int e : chosen) sum += 1.0 / (1.0 + std::exp(-logit[e]));
    for (int e : chosen)
      w.push_back(1.0 / (1.0 + std::exp(-logit[e])) / (c.normalize_top_k ? sum : 1.0) * c.routed_scaling);
    return {chosen, w};
  }
  if (c.scoring == RouterScoring::softmax_top_k) {
    const auto o = best(logit);
    chosen.assign(o.begin(), o.begin() + k);
    double sum = 0;
    for (int e : chosen) sum += std::exp(logit[e] - logit[chosen[0]]);
    for (int e : chosen) w.push_back(std::exp(logit[e] - logit[chosen[0]]) / sum * c.routed_scaling);
    return {chosen, w};
  }
  if (c.scoring == RouterScoring::softmax) {
    const double top = *std::max_element(logit.begin(), logit.end());
    double sum = 0;
    for (int64_t e = 0; e < E; ++e) sum += (score[e] = std::exp(logit[e] - top));
    for (auto& s : score) s /= sum;
    choice = score;
    if (c.groups > 1) {  // DeepSeek-V2's group_limited_greedy: a group scored by its best p
      const int64_t per = E / c.groups;
      std::vector<double> gs(c.groups);
      for (int64_t g = 0; g < c.groups; ++g)
        gs[g] = *std::max_element(choice.begin() + g * per, choice.begin() + (g + 1) * per);
      std::vector<int> go(c.groups);
      std::iota(go.begin(), go.end(), 0);
      std::stable_sort(go.begin(), go.end(), [&](int a, int b) { return gs[a] > gs[b]; });
      for (int64_t e = 0; e < E; ++e)
        if (std::find(go.begin(), go.begin() + c.top_groups, int(e / per)) == go.begin() + c.top_groups) choice[e] = 0;
    }
  } else {
    for (int64_t e = 0; e < E; ++e) {
      score[e] = 1.0 / (1.0 + std::exp(-logit[e]));
      choice[e] = score[e] + (c.choice_bias ? r.choice_bias.data()[e] : 0.0);
    }
    if (c.groups > 1) {
      const int64_t per = E / c.groups;
      std::vector<double> gs(c.groups);
      for (int64_t g = 0; g < c.groups; ++g) {
        std::vector<double> v(choice.begin() + g * per, choice.begin() + (g + 1) * per);
        std::sort(v.rbegin(), v.rend());
        gs[g] = v[0] + v[1];
      }
      std::vector<int> go(c.groups);
      std::iota(go.begin(), go.end(), 0);
      std::stable_sort(go.begin(), go.end(), [&](int a, int b) { return gs[a] > gs[b]; });
      for (int64_t e = 0; e < E; ++e)
        if (std::find(go.begin(), go.begin() + c.top_groups, int(e / per)) == go.begin() + c.top_groups) choice[e] = 0;
    }
  }
  const auto o = best(choice);
  chosen.assign(o.begin(), o.begin() + k);
  double sum = 0;
  for (int e : chosen) sum += score[e];
  for (int e : chosen) {
    double v = score[e];
    if (c.normalize_top_k) v /= sum;
    w.push_back(v * c.routed_scaling);
  }
  return {chosen, w};
}

void expect_routing_matches(const MoeConfig& c, const MoeRouter& r, const Matrix& x) {
  const Routing got = route(c, r, x.view());
  for (int64_t t = 0; t < x.rows(); ++t) {
    const auto [experts, weights] = reference_route(c, r, x.row(t));
    for (int64_t j = 0; j < c.top_k; ++j) {
      EXPECT_EQ(got.experts[t * c.top_k + j], experts[j]) << "token " << t << " slot " << j;
      EXPECT_NEAR(got.weights[t * c.top_k + j], weights[j], 1e-5 * std::abs(weights[j]) + 1e-7)
          << "token " << t << " slot " << j;
    }
  }
}

TEST(MoeRouting, SoftmaxRenormalisedLikeMixtral) {
  const MoeConfig c = small_config(8, 2);
  expect_routing_matches(c, random_router(c, 1), test::random_matrix(9, 64, 2));
}

TEST(MoeRouting, SoftmaxWithoutRenormalisationLikeQwen2) {
  MoeConfig c = small_config(16, 4);
  c.normalize_top_k = false;
  expect_routing_matches(c, random_router(c, 3), test::random_matrix(9, 64, 4));
}

TEST(MoeRouting, GroupedSigmoidWithChoiceBiasAndScalingLikeDeepSeek) {
  const MoeConfig c = deepseek_config();
  expect_routing_matches(c, random_router(c, 5), test::random_matrix(17, 64, 6));
  // The choice bias changes which experts win but never the weights' source (the
  // un-biased scores): a large bias on expert 15 makes it chosen for every token.
  MoeRouter r = random_router(c, 5);
  r.choice_bias.data()[15] = 10.0f;
  const Matrix x = test::random_matrix(5, 64, 7);
  const Routing got = route(c, r, x.view());
  for (int64_t t = 0; t < 5; ++t) EXPECT_EQ(got.experts[t * 4], 15) << "token " << t;
  expect_routing_matches(c, r, x);
}

TEST(MoeRouting, GroupLimitedGreedySoftmaxWithScalingLikeDeepSeekV2) {
  MoeConfig c = small_config(16, 4);
  c.normalize_top_k = false;
  c.routed_scaling = 16.0;
  c.groups = 4;
  c.top_groups = 2;
  expect_routing_matches(c, random_router(c, 21), test::random_matrix(17, 64, 22));
  // A group is scored by its best probability, not (as DeepSeek-V3's) its two best: group 0
  // holds the single largest logit, group 1 the second and third, group 2 the fourth and
  // fifth (its two best summing above group 0's). With one group kept, V2's rule keeps group
  // 0, so the second choice is group 0's runner-up — never group 1's.
  c.top_groups = 1;
  c.top_k = 2;
  MoeRouter r = random_router(c, 23);
  Matrix x(1, 64);
  std::fill(x.data(), x.data() + 64, 0.0f);
  x.data()[0] = 1.0f;
  const float first_column[16] = {5.0f, 0.0f, 0.0f, 0.0f, 4.5f, 4.5f, 0.0f, 0.0f,
                                  4.4f, 4.4f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  for (int e = 0; e < 16; ++e) r.weight.row(e)[0] = first_column[e];
  const Routing got = route(c, r, x.view());
  EXPECT_EQ(got.experts[0], 0);
  EXPECT_LT(got.experts[1], 4) << "a group kept by its two best (DeepSeek-V3's rule) instead of its best";
  expect_routing_matches(c, r, x);
}

TEST(MoeRouting, SigmoidOfTheChosenLogitsLikeLlama4) {
  MoeConfig c = small_config(16, 1);
  c.scoring = RouterScoring::sigmoid_top_k;
  c.normalize_top_k = false;
  expect_routing_matches(c, random_router(c, 26), test::random_matrix(9, 64, 27));
  c.top_k = 3;
  c.normalize_top_k = true;
  expect_routing_matches(c, random_router(c, 28), test::random_matrix(9, 64, 29));
  // Chosen by the logits, not by their f32 sigmoids: logits 20 and 21 both have σ = 1.0f,
  // and the larger (expert 5) must win over the lower index (expert 2).
  c.top_k = 1;
  MoeRouter r = random_router(c, 30);
  Matrix x(1, 64);
  std::fill(x.data(), x.data() + 64, 0.0f);
  x.data()[0] = 1.0f;
  for (int e = 0; e < 16; ++e) r.weight.row(e)[0] = e == 2 ? 20.0f : e == 5 ? 21.0f : 0.0f;
  EXPECT_EQ(route(c, r, x.view()).experts[0], 5);
}

TEST(MoeConfigCheck, WeightInputIsInferenceOnly) {
  MoeConfig c = small_config(8, 1);
  c.scoring = RouterScoring::sigmoid_top_k;
  c.weight_input = true;
  test::expect_error([&] { (void)TrainableMoe::random(c, 1); }, {"weight_input", "inference-only"});
}

TEST(MoeRouting, RoutedScalingAppliesToEveryScoring) {
  for (RouterScoring s : {RouterScoring::softmax, RouterScoring::softmax_top_k, RouterScoring::sigmoid_top_k}) {
    MoeConfig c = small_config(8, 2);
    c.scoring = s;
    const MoeRouter r = random_router(c, 24);
    const Matrix x = test::random_matrix(5, 64, 25);
    const Routing one = route(c, r, x.view());
    c.routed_scaling = 2.5;
    const Routing scaled = route(c, r, x.view());
    EXPECT_EQ(one.experts, scaled.experts);
    for (size_t i = 0; i < one.weights.size(); ++i)
      EXPECT_EQ(scaled.weights[i], one.weights[i] * 2.5f) << router_scoring_name(s) << " weight " << i;
  }
}

TEST(MoeRouting, SoftmaxOverTheChosenWithRouterBiasLikeGptOss) {
  MoeConfig c = small_config(32, 4);
  c.scoring = RouterScoring::softmax_top_k;
  c.router_bias = true;
  expect_routing_matches(c, random_router(c, 8), test::random_matrix(9, 64, 9));
}

TEST(MoeRouting, AnExactTieGoesToTheLowerIndex) {
  const MoeConfig c = small_config(8, 2);
  MoeRouter r = random_router(c, 10);
  // Experts 2, 5 and 6 have the same row: equal logits, bit for bit; made the largest.
  for (int64_t d = 0; d < 64; ++d) {
    r.weight.row(2)[d] = r.weight.row(5)[d] = r.weight.row(6)[d] = 3.0f;
  }
  Matrix x(1, 64);
  std::fill(x.data(), x.data() + 64, 0.25f);
  const Routing got = route(c, r, x.view());
  EXPECT_EQ(got.experts[0], 2);
  EXPECT_EQ(got.experts[1], 5);
  EXPECT_FLOAT_EQ(got.weights[0], 0.5f);
}

TEST(MoeRouting, NonFiniteLogitsNameTheToken) {
  const MoeConfig c = small_config(8, 2);
  Matrix x = test::random_matrix(4, 64, 11);
  x.row(2)[7] = std::nanf("");
  test::expect_error([&] { (void)route(c, random_router(c, 12), x.view()); }, {"token 2", "not finite"});
}

TEST(MoeConfigCheck, BadFieldsAreNamed) {
  test::expect_error([] { validate(small_config(8, 9)); }, {"top_k", "9", "8 experts"});
  test::expect_error([] { validate(small_config(8, 0)); }, {"top_k"});
  MoeConfig g = small_config(12, 2);
  g.groups = 5;
  test::expect_error([&] { validate(g); }, {"groups", "5"});
  g.groups = 4;
  g.top_groups = 5;
  test::expect_error([&] { validate(g); }, {"top_groups", "5"});
  MoeConfig s = small_config(8, 2);
  s.shared_gate = true;
  test::expect_error([&] { validate(s); }, {"shared_gate"});
  MoeConfig tk = small_config(8, 2);
  tk.scoring = RouterScoring::softmax_top_k;
  tk.groups = 2;
  test::expect_error([&] { validate(tk); }, {"groups", "softmax_top_k"});
  MoeConfig sc = small_config(8, 2);
  sc.routed_scaling = std::nan("");
  test::expect_error([&] { validate(sc); }, {"routed_scaling"});
}

TEST(MoeConfigCheck, RouterAndExpertsMustFitTheConfig) {
  const MoeConfig c = small_config(4, 2);
  MoeRouter wide = random_router(c, 13);
  wide.weight = test::random_matrix(4, 63, 14);
  std::vector<Block> experts;
  for (int e = 0; e < 4; ++e) experts.push_back(Block::random(c.expert, 20 + e));
  test::expect_error([&] { (void)MoeBlock::from_blocks(c, std::move(wide), experts, std::nullopt, {}); },
                     {"router weight", "[4, 63]", "64"});
  std::vector<Block> three;
  for (int e = 0; e < 3; ++e) three.push_back(Block::random(c.expert, 20 + e));
  test::expect_error([&] { (void)MoeBlock::from_blocks(c, random_router(c, 13), three, std::nullopt, {}); },
                     {"3 experts", "4"});
  experts[2] = Block::random(BlockConfig{c.expert.variant, 64, 128, false, 0.0}, 30);
  test::expect_error([&] { (void)MoeBlock::from_blocks(c, random_router(c, 13), experts, std::nullopt, {}); },
                     {"expert 2", "hidden 128", "hidden 96"});
}

// y[t] as the stated order computes it, from the same experts' InferenceBlocks run alone.
Matrix token_by_token(const MoeBlock& m, const Matrix& x) {
  const MoeConfig& c = m.config();
  const int64_t D = c.d_model(), k = c.top_k;
  Matrix y(x.rows(), D);
  const Routing r = m.route(x.view());
  for (int64_t t = 0; t < x.rows(); ++t) {
    std::vector<std::pair<int32_t, float>> slots;
    for (int64_t j = 0; j < k; ++j) slots.push_back({r.experts[t * k + j], r.weights[t * k + j]});
    std::sort(slots.begin(), slots.end());
    Matrix out(1, D), scaled(1, D);
    float* yt = y.row(t);
    for (const auto& [e, w] : slots) {
      if (c.weight_input) {  // Llama 4: the expert on w·x, its output added unweighted
        for (int64_t d = 0; d < D; ++d) scaled.data()[d] = w * x.row(t)[d];
        m.expert(e).forward(scaled.view(), out.view());
      } else {
        m.expert(e).forward({x.row(t), 1, D, D}, out.view());
      }
      for (int64_t d = 0; d < D; ++d) yt[d] = std::fma(c.weight_input ? 1.0f : w, out.data()[d], yt[d]);
    }
    if (m.shared()) {
      m.shared()->forward({x.row(t), 1, D, D}, out.view());
      float gate = 1.0f;
      if (c.shared_gate) {
        float z = 0.0f;
        for (int64_t d = 0; d < D; ++d) z = std::fma(m.router().shared_gate.data()[d], x.row(t)[d], z);
        gate = 1.0f / (1.0f + std::exp(-z));
      }
      for (int64_t d = 0; d < D; ++d) yt[d] = std::fma(gate, out.data()[d], yt[d]);
    }
  }
  return y;
}

void expect_same(const Matrix& a, const Matrix& b, const char* what) {
  ASSERT_EQ(a.size(), b.size());
  for (int64_t i = 0; i < a.size(); ++i)
    ASSERT_EQ(a.data()[i], b.data()[i]) << what << ": element " << i << " of " << a.size();
}

class MoeForward : public testing::TestWithParam<Isa> {};

TEST_P(MoeForward, EqualsEachTokensExpertsRunAloneForEveryFamily) {
  test::ScopedIsa isa(GetParam());
  MoeConfig mixtral = small_config(8, 2);
  MoeConfig qwen2 = small_config(16, 4);
  qwen2.normalize_top_k = false;
  qwen2.shared_hidden = 128;
  qwen2.shared_gate = true;
  MoeConfig deepseek = deepseek_config();
  deepseek.shared_hidden = 96;
  MoeConfig llama4 = small_config(8, 1);
  llama4.scoring = RouterScoring::sigmoid_top_k;
  llama4.normalize_top_k = false;
  llama4.weight_input = true;
  llama4.shared_hidden = 96;
  uint32_t seed = 40;
  for (const MoeConfig& c : {mixtral, qwen2, deepseek, llama4}) {
    const MoeBlock m = random_moe(c, seed += 100);
    const Matrix x = test::random_matrix(37, 64, seed + 1);
    Matrix y(37, 64);
    m.forward(x.view(), y.view());
    expect_same(y, token_by_token(m, x), "grouped forward vs token by token");
  }
}

TEST_P(MoeForward, BitIdenticalForAnyThreadCountAndBatch) {
  test::ScopedIsa isa(GetParam());
  MoeConfig c = small_config(8, 2);
  c.shared_hidden = 64;
  for (const MatrixTypes& types : {MatrixTypes{}, MatrixTypes{WeightType::q8_0, WeightType::q8_0, WeightType::q8_0},
                                   MatrixTypes{WeightType::bf16, WeightType::bf16, WeightType::q4_0}}) {
    const MoeBlock m = random_moe(c, 70, types);
    const Matrix x = test::random_matrix(29, 64, 71);
    Matrix y1(29, 64);
    ThreadPool one(1);
    m.forward(x.view(), y1.view(), &one);
    for (int threads : {2, 3}) {
      ThreadPool p(threads);
      Matrix y(29, 64);
      m.forward(x.view(), y.view(), &p);
      expect_same(y, y1, "threads");
      // Tokens 20 and 21 alone: on 2 threads a token each, on 3 fewer tokens than threads,
      // whose sums of the experts' outputs the threads cut by columns.
      Matrix few(2, 64);
      m.forward({x.row(20), 2, 64, 64}, few.view(), &p);
      for (int64_t i = 0; i < 2 * 64; ++i)
        ASSERT_EQ(few.data()[i], y1.row(20)[i]) << threads << " threads, tokens 20-21 alone, element " << i;
    }
    // The first 11 tokens alone, and token 20 alone, give the rows they gave in the batch.
    Matrix part(11, 64);
    m.forward({x.data(), 11, 64, 64}, part.view());
    for (int64_t i = 0; i < 11 * 64; ++i) ASSERT_EQ(part.data()[i], y1.data()[i]) << "batch of 11, element " << i;
    Matrix one_token(1, 64);
    m.forward({x.row(20), 1, 64, 64}, one_token.view());
    for (int64_t d = 0; d < 64; ++d) ASSERT_EQ(one_token.data()[d], y1.row(20)[d]) << "token 20 alone, d " << d;
  }
}

TEST_P(MoeForward, KQuantExpertsRunAsStored) {
  test::ScopedIsa isa(GetParam());
  const MoeConfig c = small_config(4, 2, 256, 256);
  const MoeBlock m = random_moe(c, 80, {WeightType::q4_K, WeightType::q4_K, WeightType::q6_K});
  EXPECT_EQ(m.expert_types().down, WeightType::q6_K);
  const Matrix x = test::random_matrix(5, 256, 81);
  Matrix y(5, 256);
  m.forward(x.view(), y.view());
  expect_same(y, token_by_token(m, x), "q4_K / q6_K experts");
}

// The grouped pass (every expert's panels in one sweep a stage, where the experts are not
// shared out among the threads) against each expert's own forward, bit for bit, where its
// batches differ most from one block's: experts of different
// weight types side by side (their activation formats differ: f32, q8_0, q8_K filled after
// stage 1), an expert whose block is gate-first (sparse decode: it runs its own forward
// beside the grouped pass), and an expert with more than one token block (every token of a
// 512-token chunk picks both experts of two).
TEST_P(MoeForward, GroupedPassEqualsEachExpertsOwnForward) {
  test::ScopedIsa isa(GetParam());
  MoeConfig c = small_config(4, 2, 256, 256);
  c.shared_hidden = 512;
  MoeRouter router = random_router(c, 90);
  const std::vector<MatrixTypes> types = {{WeightType::q4_K, WeightType::q4_K, WeightType::q6_K},
                                          {WeightType::bf16, WeightType::f32, WeightType::q8_0},
                                          {},
                                          {WeightType::q8_0, WeightType::q8_0, WeightType::q4_0}};
  std::vector<InferenceBlock> experts;
  for (int64_t e = 0; e < c.experts; ++e)
    experts.emplace_back(Block::random(c.expert, 91 + uint32_t(e)), types[size_t(e)], nullptr,
                         e == 2 ? SparseDecode{true, 0.0f, 8, 1.0} : SparseDecode{});
  const MoeBlock m(c, std::move(router), std::move(experts),
                   InferenceBlock(Block::random(BlockConfig{c.expert.variant, 256, 512, false, 0.0}, 97), {}));
  const Matrix x = test::random_matrix(12, 256, 98);
  const Routing r = m.route(x.view());
  for (int32_t e = 0; e < c.experts; ++e)
    ASSERT_NE(std::count(r.experts.begin(), r.experts.end(), e), 0) << "no token chose expert " << e;
  const Matrix expected = token_by_token(m, x);
  // One thread and eight (fewer experts than threads): the grouped pass; two: the experts
  // shared out, each whole on one thread.
  for (int threads : {1, 8, 2}) {
    ThreadPool pool(threads);
    Matrix y(12, 256);
    m.forward(x.view(), y.view(), &pool);
    expect_same(y, expected, threads == 2 ? "experts shared out" : "mixed types, a gate-first expert");
  }

  const MoeConfig two = small_config(2, 2);
  const MoeBlock both = random_moe(two, 99, {WeightType::q8_0, WeightType::q8_0, WeightType::q8_0});
  const Matrix x2 = test::random_matrix(600, 64, 100);
  Matrix y2(600, 64);
  ThreadPool p(3);
  both.forward(x2.view(), y2.view(), &p);
  expect_same(y2, token_by_token(both, x2), "two token blocks an expert");
}

FFN_INSTANTIATE_FOR_EVERY_ISA(MoeForward);

TEST(MoeAccountingTest, MixtralCounts) {
  const MoePreset* p = find_moe_preset("mixtral-8x7b");
  ASSERT_NE(p, nullptr);
  const MoeAccounting a = account(p->config);
  EXPECT_EQ(a.router_parameters, 8 * 4096);
  EXPECT_EQ(a.expert_parameters, 3LL * 4096 * 14336);
  EXPECT_EQ(a.total_parameters, 8 * 4096 + 8 * 3LL * 4096 * 14336);
  EXPECT_EQ(a.active_parameters, 8 * 4096 + 2 * 3LL * 4096 * 14336);
  EXPECT_DOUBLE_EQ(expected_experts_touched(p->config, 1), 2.0);
  EXPECT_NEAR(expected_experts_touched(p->config, 2), 8.0 * (1 - 0.75 * 0.75), 1e-12);
  for (const MoePreset& q : moe_presets()) EXPECT_NO_THROW(validate(q.config)) << q.name;
}

TEST(MoeAccountingTest, DecodeBytesCountOnlyTheChosenExperts) {
  MoeConfig c = small_config(8, 2);
  c.shared_hidden = 64;
  const MoeBlock m = random_moe(c, 90, {WeightType::q8_0, WeightType::q8_0, WeightType::q8_0});
  const int64_t expert = m.expert(0).weight_bytes(), shared = m.shared()->weight_bytes();
  EXPECT_EQ(m.decode_bytes(), 8 * 64 * 4 + 2 * expert + shared);
  EXPECT_EQ(m.weight_bytes(), 8 * 64 * 4 + 8 * expert + shared);
}

}  // namespace
}  // namespace ffn
