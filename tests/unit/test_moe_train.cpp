// Training passes of MoE blocks (ffn/moe_train.hpp): every gradient — router, router bias,
// shared gate, routed and shared experts, the input — against central differences of a
// float64 restatement of the block (its routing in double, its experts by
// reference_forward_token), for the four families' rules and with the load-balancing loss;
// bit-identical results for any thread count; the forward against the inference block; the
// language model with experts; errors.
//
// Tolerance of the gradients: |g − fd| ≤ 1e-3·|fd| + 1e-4·max|g of that tensor|. The
// difference quotient of the double reference over a step of 1e-3 (taken between the f32
// values actually stored) errs by ~1e-7 relative; the f32 backward by ~1e-6. A dropped term
// (the −Σ w·dw of the softmax, the sigmoid's derivative, the 1/Z² of the renormalisation,
// the balance loss, the shared gate's σ') moves a gradient by ≥ 1e-2 relative.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <vector>

#include "block/reference.hpp"
#include "expect_error.hpp"
#include "ffn/error.hpp"
#include "ffn/moe_train.hpp"
#include "random_data.hpp"
#include "same_bits.hpp"
#include "train/train.hpp"

namespace ffn {
namespace {

constexpr int64_t kD = 16, kH = 24, kT = 12;

MoeConfig base(int64_t E, int64_t k, bool bias = false) {
  MoeConfig c;
  c.expert = BlockConfig{{true, Activation::swish}, kD, kH, bias, 0.0};
  c.experts = E;
  c.top_k = k;
  return c;
}
MoeConfig mixtral() { return base(6, 2); }
MoeConfig qwen2() {
  MoeConfig c = base(6, 3);
  c.normalize_top_k = false;
  c.shared_hidden = 20;
  c.shared_gate = true;
  return c;
}
MoeConfig deepseek() {
  MoeConfig c = base(8, 3);
  c.scoring = RouterScoring::sigmoid;
  c.groups = 4;
  c.top_groups = 2;
  c.choice_bias = true;
  c.routed_scaling = 2.5;
  c.shared_hidden = 16;
  return c;
}
// DeepSeek-V2: softmax, unrenormalised, × routed_scaling_factor, group-limited greedy.
MoeConfig deepseek_v2() {
  MoeConfig c = base(8, 3);
  c.normalize_top_k = false;
  c.groups = 4;
  c.top_groups = 2;
  c.routed_scaling = 4.0;
  c.shared_hidden = 16;
  return c;
}
// A renormalised softmax scaled (the backward's w·(dw − Σw·dw / r)).
MoeConfig mixtral_scaled() {
  MoeConfig c = base(6, 2);
  c.routed_scaling = 2.5;
  return c;
}
// Llama 4's router (sigmoid of the chosen logits), here renormalised and scaled to reach
// every term of its backward; its weight_input has no training form (test_moe.cpp).
MoeConfig sigmoid_top_k() {
  MoeConfig c = base(6, 2);
  c.scoring = RouterScoring::sigmoid_top_k;
  c.routed_scaling = 1.5;
  return c;
}
MoeConfig gpt_oss() {
  MoeConfig c = base(6, 2, true);
  c.scoring = RouterScoring::softmax_top_k;
  c.router_bias = true;
  return c;
}

TrainableMoe random_moe(const MoeConfig& c, uint64_t seed) {
  TrainableMoe m = TrainableMoe::random(c, seed);
  // A router of larger weights than nn.Linear's, so that the weights differ enough for
  // their gradients to matter; a choice bias that changes some choices.
  m.router.weight = test::random_matrix(c.experts, kD, uint32_t(seed) + 1, 0.8f);
  if (c.choice_bias) m.router.choice_bias = test::random_matrix(1, c.experts, uint32_t(seed) + 2, 0.1f);
  return m;
}

// ---- The float64 restatement ----

// k chosen experts of a token (best first) and their weights, from double logits.
struct RefRoute {
  std::vector<int> experts;
  std::vector<double> weights;
  std::vector<double> p;  // softmax of the logits over all E (for the balance loss)
  double margin = 1e30;   // smallest gap between a chosen and an unchosen (or group) score
};

RefRoute ref_route(const MoeConfig& c, const TrainableMoe& m, const float* x) {
  const int64_t E = c.experts, k = c.top_k;
  std::vector<double> l(static_cast<size_t>(E));
  for (int64_t e = 0; e < E; ++e) {
    double s = c.router_bias ? m.router.bias.data()[e] : 0.0;
    for (int64_t d = 0; d < kD; ++d) s += double(m.router.weight.row(e)[d]) * double(x[d]);
    l[e] = s;
  }
  RefRoute r;
  const double top = *std::max_element(l.begin(), l.end());
  double sum = 0;
  for (double v : l) sum += std::exp(v - top);
  for (double v : l) r.p.push_back(std::exp(v - top) / sum);
  std::vector<double> score(static_cast<size_t>(E)), choice(static_cast<size_t>(E));
  for (int64_t e = 0; e < E; ++e) {
    score[e] = c.scoring == RouterScoring::sigmoid ? 1.0 / (1.0 + std::exp(-l[e]))
               : c.scoring == RouterScoring::softmax ? r.p[e]
                                                     : l[e];
    choice[e] = score[e] + (c.choice_bias ? m.router.choice_bias.data()[e] : 0.0);
  }
  if (c.groups > 1) {
    const int64_t per = E / c.groups;
    std::vector<std::pair<double, int>> groups;
    for (int64_t g = 0; g < c.groups; ++g) {
      std::vector<double> in(choice.begin() + g * per, choice.begin() + (g + 1) * per);
      std::sort(in.rbegin(), in.rend());
      // DeepSeek-V3 (sigmoid): a group's two best; DeepSeek-V2 (softmax): its best.
      groups.push_back({c.scoring == RouterScoring::softmax ? in[0] : in[0] + in[1], int(g)});
    }
    std::sort(groups.begin(), groups.end(), [](auto a, auto b) { return a.first > b.first; });
    r.margin = std::min(r.margin, groups[c.top_groups - 1].first - groups[c.top_groups].first);
    for (int64_t g = c.top_groups; g < c.groups; ++g)
      for (int64_t e = groups[g].second * per; e < (groups[g].second + 1) * per; ++e) choice[e] = 0.0;
  }
  std::vector<int> order(static_cast<size_t>(E));
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int a, int b) { return choice[a] > choice[b]; });
  r.margin = std::min(r.margin, choice[order[k - 1]] - choice[order[k]]);
  r.experts.assign(order.begin(), order.begin() + k);
  double chosen = 0;
  if (c.scoring == RouterScoring::sigmoid_top_k) {  // chosen by the logits (score = l), weighted σ
    for (int e : r.experts) chosen += 1.0 / (1.0 + std::exp(-l[e]));
    for (int e : r.experts)
      r.weights.push_back(1.0 / (1.0 + std::exp(-l[e])) / (c.normalize_top_k ? chosen : 1.0) * c.routed_scaling);
    return r;
  }
  if (c.scoring == RouterScoring::softmax_top_k) {
    for (int e : r.experts) chosen += std::exp(l[e] - l[r.experts[0]]);
    for (int e : r.experts) r.weights.push_back(std::exp(l[e] - l[r.experts[0]]) / chosen * c.routed_scaling);
    return r;
  }
  for (int e : r.experts) chosen += score[e];
  for (int e : r.experts) {
    double w = score[e];
    if (c.normalize_top_k) w /= chosen + (c.scoring == RouterScoring::sigmoid ? 1e-20 : 0.0);
    r.weights.push_back(w * c.routed_scaling);
  }
  return r;
}

// Σ_t dy_t·y_t + balance·loss_b, in double; min_margin receives the closest routing gap.
double ref_objective(const TrainableMoe& m, const Matrix& x, const Matrix& dy, double balance,
                     double* min_margin = nullptr) {
  const MoeConfig& c = m.config;
  const int64_t E = c.experts, T = x.rows();
  double total = 0, margin = 1e30;
  std::vector<double> count(static_cast<size_t>(E), 0), P(static_cast<size_t>(E), 0), out(static_cast<size_t>(kD));
  for (int64_t t = 0; t < T; ++t) {
    const RefRoute r = ref_route(c, m, x.row(t));
    margin = std::min(margin, r.margin);
    std::vector<double> y(static_cast<size_t>(kD), 0.0);
    for (size_t j = 0; j < r.experts.size(); ++j) {
      reference_forward_token(m.experts[r.experts[j]], x.row(t), out.data());
      for (int64_t d = 0; d < kD; ++d) y[d] += r.weights[j] * out[d];
      count[r.experts[j]] += 1;
    }
    if (m.shared) {
      double gate = 1;
      if (c.shared_gate) {
        double z = 0;
        for (int64_t d = 0; d < kD; ++d) z += double(m.router.shared_gate.data()[d]) * double(x.row(t)[d]);
        gate = 1.0 / (1.0 + std::exp(-z));
      }
      reference_forward_token(*m.shared, x.row(t), out.data());
      for (int64_t d = 0; d < kD; ++d) y[d] += gate * out[d];
    }
    for (int64_t e = 0; e < E; ++e) P[e] += r.p[e];
    for (int64_t d = 0; d < kD; ++d) total += double(dy.row(t)[d]) * y[d];
  }
  double lb = 0;
  for (int64_t e = 0; e < E; ++e) lb += count[e] / double(T) * P[e] / double(T);
  if (min_margin) *min_margin = margin;
  return total + balance * double(E) * lb;
}

// Central difference of the objective in one stored f32 value.
double difference(float& v, const std::function<double()>& f) {
  const float keep = v;
  const float plus = keep + 1e-3f, minus = keep - 1e-3f;
  v = plus;
  const double fp = f();
  v = minus;
  const double fm = f();
  v = keep;
  return (fp - fm) / (double(plus) - double(minus));
}

// Checks every element of a (when ≤ 128 of them) or every 7th.
void expect_gradient(const char* what, float* param, const float* grad, int64_t n, const std::function<double()>& f) {
  double largest = 0;
  for (int64_t i = 0; i < n; ++i) largest = std::max(largest, std::abs(double(grad[i])));
  const int64_t step = n <= 128 ? 1 : 7;
  for (int64_t i = 0; i < n; i += step) {
    const double fd = difference(param[i], f);
    ASSERT_NEAR(grad[i], fd, 1e-3 * std::abs(fd) + 1e-4 * largest) << what << " element " << i;
  }
}

struct Case {
  const char* name;
  MoeConfig config;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class MoeGradientCheck : public ::testing::TestWithParam<Case> {};

TEST_P(MoeGradientCheck, EveryParameterAgainstDifferencesOfTheFloat64Block) {
  const MoeConfig c = GetParam().config;
  for (double balance : {0.0, 0.3}) {
    TrainableMoe m = random_moe(c, 11);
    Matrix x = test::random_matrix(kT, kD, 5), dy = test::random_matrix(kT, kD, 6);
    // Inputs away from near-ties, so that a step of 1e-3 cannot change a choice.
    double margin = 0;
    for (uint32_t s = 5; ref_objective(m, x, dy, balance, &margin), margin < 2e-2; s += 100)
      x = test::random_matrix(kT, kD, s);
    MoeCache cache;
    Matrix y(kT, kD), dx(kT, kD);
    const double lb = forward_train(m, x.view(), y.view(), cache);
    MoeGradients g = zero_gradients(c);
    backward(m, x.view(), cache, dy.view(), dx.view(), g, balance);

    // The f32 routing is the double one (the margin), and loss_b is the double one.
    for (int64_t t = 0; t < kT; ++t) {
      const RefRoute r = ref_route(c, m, x.row(t));
      for (int64_t j = 0; j < c.top_k; ++j) {
        ASSERT_EQ(cache.routing.experts[t * c.top_k + j], r.experts[j]) << "token " << t;
        ASSERT_NEAR(cache.routing.weights[t * c.top_k + j], r.weights[j], 1e-5 * (1 + r.weights[j]));
      }
    }
    const double lb_ref = (ref_objective(m, x, dy, 1.0) - ref_objective(m, x, dy, 0.0));
    // loss_b is formed from the f32 logits (each within ~D·u of its double value), so
    // within 1e-6 relative; a missing ×E or /T would be off by a factor of E or T.
    EXPECT_NEAR(lb, lb_ref, 1e-6 * lb_ref);

    auto f = [&] { return ref_objective(m, x, dy, balance); };
    expect_gradient("router", m.router.weight.data(), g.router.data(), g.router.size(), f);
    if (c.router_bias) expect_gradient("router bias", m.router.bias.data(), g.router_bias.data(), c.experts, f);
    if (c.shared_gate) expect_gradient("shared gate", m.router.shared_gate.data(), g.shared_gate.data(), kD, f);
    for (int64_t e = 0; e < c.experts; e += 3) {
      auto& w = m.experts[e].weights();
      auto& ge = g.experts[e];
      expect_gradient("expert gate", w.gate.data(), ge.gate.data(), w.gate.size(), f);
      expect_gradient("expert up", w.up.data(), ge.up.data(), w.up.size(), f);
      expect_gradient("expert down", w.down.data(), ge.down.data(), w.down.size(), f);
      if (c.expert.bias) expect_gradient("expert down bias", w.down_bias.data(), ge.down_bias.data(), kD, f);
    }
    if (m.shared) {
      expect_gradient("shared up", m.shared->weights().up.data(), g.shared->up.data(), g.shared->up.size(), f);
      expect_gradient("shared down", m.shared->weights().down.data(), g.shared->down.data(), g.shared->down.size(), f);
    }
    expect_gradient("x", x.data(), dx.data(), x.size(), f);
  }
}

INSTANTIATE_TEST_SUITE_P(Families, MoeGradientCheck,
                         ::testing::Values(Case{"mixtral", mixtral()}, Case{"qwen2", qwen2()},
                                           Case{"deepseek", deepseek()}, Case{"gpt_oss", gpt_oss()},
                                           Case{"deepseek_v2", deepseek_v2()}, Case{"mixtral_scaled", mixtral_scaled()},
                                           Case{"sigmoid_top_k", sigmoid_top_k()}),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(MoeTrain, BitIdenticalForAnyThreadCount) {
  for (const MoeConfig& c : {qwen2(), deepseek()}) {
    const TrainableMoe m = random_moe(c, 3);
    const Matrix x = test::random_matrix(37, kD, 8), dy = test::random_matrix(37, kD, 9);
    std::vector<MoeGradients> grads;
    std::vector<Matrix> ys, dxs;
    for (int threads : {1, 2, 3}) {
      ThreadPool pool(threads);
      MoeCache cache;
      ys.emplace_back(37, kD);
      dxs.emplace_back(37, kD);
      forward_train(m, x.view(), ys.back().view(), cache, &pool);
      grads.push_back(zero_gradients(c));
      backward(m, x.view(), cache, dy.view(), dxs.back().view(), grads.back(), 0.1, &pool);
    }
    for (size_t i = 1; i < grads.size(); ++i) {
      EXPECT_TRUE(test::same_bits(ys[0], ys[i]));
      EXPECT_TRUE(test::same_bits(dxs[0], dxs[i]));
      EXPECT_TRUE(test::same_bits(grads[0].router, grads[i].router));
      EXPECT_TRUE(test::same_bits(grads[0].shared->down, grads[i].shared->down));
      for (int64_t e = 0; e < c.experts; ++e) EXPECT_TRUE(test::same_bits(grads[0].experts[e].gate, grads[i].experts[e].gate));
    }
  }
}

// The training forward computes what the f32 inference block computes, to f32 rounding
// (each runs its own kernels: 1e-5 relative to the output's scale).
TEST(MoeTrain, ForwardAgreesWithTheInferenceBlock) {
  for (const MoeConfig& c : {mixtral(), qwen2(), deepseek(), gpt_oss()}) {
    const TrainableMoe m = random_moe(c, 4);
    const Matrix x = test::random_matrix(20, kD, 12);
    Matrix y(20, kD), y_inf(20, kD);
    MoeCache cache;
    forward_train(m, x.view(), y.view(), cache);
    m.to_inference().forward(x.view(), y_inf.view());
    double scale = 0;
    for (int64_t i = 0; i < y.size(); ++i) scale = std::max(scale, std::abs(double(y_inf.data()[i])));
    for (int64_t i = 0; i < y.size(); ++i) ASSERT_NEAR(y.data()[i], y_inf.data()[i], 1e-5 * scale) << i;
  }
}

TEST(MoeTrain, Errors) {
  const MoeConfig c = mixtral();
  const TrainableMoe m = random_moe(c, 1);
  const Matrix x = test::random_matrix(4, kD, 1);
  Matrix y(4, kD), dx(4, kD);
  MoeCache cache;
  forward_train(m, x.view(), y.view(), cache);
  MoeGradients g = zero_gradients(c);
  test::expect_error([&] { backward(m, x.view(), cache, y.view(), dx.view(), g, -1.0); }, {"balance-loss weight"});
  MoeGradients wrong = zero_gradients(qwen2());
  test::expect_error([&] { backward(m, x.view(), cache, y.view(), dx.view(), wrong, 0.0); }, {"experts"});
  const Matrix x5 = test::random_matrix(5, kD, 1);
  test::expect_error([&] { backward(m, x5.view(), cache, x5.view(), MatrixView{}, g, 0.0); }, {"cache holds"});
  TrainableMoe missing = random_moe(c, 1);
  missing.experts.pop_back();
  test::expect_error([&] { forward_train(missing, x.view(), y.view(), cache); }, {"5 experts"});
}

// The language model with experts: parameter counts, the balance loss at its scale, and
// bit-identical training for 1 and 2 threads that lowers the loss.
TEST(MoeTrain, LanguageModelWithExperts) {
  ModelConfig mc;
  mc.variant = parse_variant("swiglu");
  mc.d_model = 32;
  mc.hidden = 24;
  mc.layers = 2;
  mc.experts = 4;
  mc.top_k = 2;
  const int64_t expert = 3 * 32 * 24, router = 4 * 32;
  const int64_t rest = 256 * 32 + 32 * 8 * 32 + 2 * 32 + 32 + 256 * 32;
  EXPECT_EQ(model_parameters(mc), rest + 2 * (router + 4 * expert));
  EXPECT_EQ(model_active_parameters(mc), rest + 2 * (router + 2 * expert));

  const ByteData data(std::string(4000, 'a') + "the quick brown fox jumps over the lazy dog. " + std::string(400, 'b'));
  TrainOptions o;
  o.steps = 30;
  o.batch = 64;
  o.eval_every = 10;
  o.eval_tokens = 256;
  std::vector<TrainResult> runs;
  for (int threads : {1, 2}) {
    ThreadPool pool(threads);
    LanguageModel model(mc, 1);
    runs.push_back(train(model, data, o, &pool));
    // k = 2 at perfect balance; a router of nn.Linear's scale starts near it.
    EXPECT_GT(model.last_balance_loss(), 1.9);
    EXPECT_LT(model.last_balance_loss(), 4.0);
  }
  EXPECT_EQ(runs[0].step_losses, runs[1].step_losses);
  EXPECT_LT(runs[0].step_losses.back(), runs[0].step_losses.front() - 1.0);

  mc.top_k = 5;
  test::expect_error([&] { validate(mc); }, {"top_k = 5"});
}

}  // namespace
}  // namespace ffn
