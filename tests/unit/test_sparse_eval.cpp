// The activation-sparse evaluation (src/train/sparse_eval.hpp): the calibrated threshold
// on known distributions and its ties rule; one block's masked forward against a
// double-precision reference; the model's masked loss at threshold 0 (the dense loss, bit
// for bit) and at +∞ (the model without its FFNs, checked through the dense forward of a
// model whose W_down are zero); calibration on a batch reproducing its own target.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "block/reference_math.hpp"
#include "expect_error.hpp"
#include "train/sparse_eval.hpp"

namespace ffn {
namespace {

// A shuffled 0, 1, …, n−1 (as floats), the same every time.
std::vector<float> shuffled_range(int n) {
  std::vector<float> v;
  for (int i = 0; i < n; ++i) v.push_back(float(i));
  uint64_t x = 7;
  for (int i = n - 1; i > 0; --i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    std::swap(v[size_t(i)], v[size_t((x >> 33) % uint64_t(i + 1))]);
  }
  return v;
}

int64_t count_below(const std::vector<float>& v, float t) {
  return std::count_if(v.begin(), v.end(), [&](float m) { return m < t; });
}

TEST(SparseThreshold, QuantileOfAKnownDistribution) {
  // 0 … 999: at s the threshold is the value s·1000, and exactly s·1000 values lie below.
  const std::vector<float> v = shuffled_range(1000);
  for (double s : {0.25, 0.4, 0.5, 0.7, 0.9}) {
    const float t = calibrated_threshold(v, s);
    EXPECT_EQ(t, float(std::lround(s * 1000))) << s;
    EXPECT_EQ(count_below(v, t), std::lround(s * 1000)) << s;
  }
  // k = ⌊s·N + ½⌋: 10 values at s = 0.25 drop 3 (2.5 rounds up), at 0.24 drop 2.
  const std::vector<float> ten = shuffled_range(10);
  EXPECT_EQ(calibrated_threshold(ten, 0.25), 3.0f);
  EXPECT_EQ(calibrated_threshold(ten, 0.24), 2.0f);
  // s = 0: nothing below the threshold, whatever the smallest value; s = 1: everything.
  EXPECT_EQ(calibrated_threshold({5.0f, 6.0f, 7.0f}, 0.0), 0.0f);
  EXPECT_EQ(calibrated_threshold(ten, 1.0), std::numeric_limits<float>::infinity());
}

TEST(SparseThreshold, TiesAtTheThresholdAreKept) {
  // Sorted: 0 0 0 0 1 1 1 2 3 4. s = 0.5 drops k = 5: the 6th smallest is 1, and the three
  // 1s tie with it, so only the four 0s fall below (0.4 achieved, not 0.5).
  const std::vector<float> v{1, 0, 3, 1, 0, 4, 0, 2, 1, 0};
  EXPECT_EQ(calibrated_threshold(v, 0.5), 1.0f);
  EXPECT_EQ(count_below(v, 1.0f), 4);
  // ReLU-like: six exact zeros. At s = 0.25 (k = 3) the 4th smallest is 0: no threshold
  // drops anything, the exact zeros being dropped on their own (masked_block_forward).
  const std::vector<float> relu{0, 0, 2, 0, 0, 3, 0, 1, 0, 4};
  EXPECT_EQ(calibrated_threshold(relu, 0.25), 0.0f);
  EXPECT_EQ(calibrated_threshold(relu, 0.7), 2.0f);  // k = 7: the 8th smallest
}

TEST(SparseThreshold, BadInputNamesTheProblem) {
  test::expect_error([] { calibrated_threshold({1.0f}, -0.1); }, {"sparsity target", "[0, 1]"});
  test::expect_error([] { calibrated_threshold({1.0f}, 1.5); }, {"sparsity target"});
  test::expect_error([] { calibrated_threshold({1.0f}, std::nan("")); }, {"sparsity target"});
  test::expect_error([] { calibrated_threshold({}, 0.5); }, {"no magnitudes"});
  test::expect_error([] { calibrated_threshold({1.0f, -2.0f}, 0.5); }, {"negative or NaN"});
}

// A block with inputs of unit size, T tokens.
struct BlockCase {
  Block block;
  Matrix x;
};
BlockCase block_case(const char* variant, int64_t T, int64_t D = 16, int64_t H = 40) {
  BlockCase c{Block::random({parse_variant(variant), D, H, false}, 11), Matrix(T, D)};
  uint64_t s = 5;
  for (int64_t i = 0; i < c.x.size(); ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    c.x.data()[i] = float(double(s >> 40) / double(1ull << 24) * 4.0 - 2.0);
  }
  return c;
}

// Reference: every pre-activation, activation and product in double. keep_j decided from
// the double a_j — act(g_j) by the gate rule, h_j by the hidden rule (the same for 2-matrix
// blocks) — and, with a second threshold, |h_j|; each threshold chosen in the middle of a
// wide gap between the values it judges (so the f32 and double decisions cannot differ).
// Tolerance per output: 1e-5·(1 + Σ|terms|) — f32 sums of ≤ 40 terms with inputs rounded
// once err by ≲ 40·6e-8 of Σ|terms| — while a channel kept that should be dropped or the
// reverse moves y by one term, |a_j·u_j·w| ~ 0.1.
class MaskedForward : public ::testing::TestWithParam<const char*> {};

// A threshold among the non-zero |values| (zeros drop whatever the threshold) between their
// quantiles lo and hi, in the middle of the widest gap there.
float threshold_in_gap(const std::vector<double>& values, double lo, double hi) {
  std::vector<double> m;
  for (double v : values)
    if (v != 0) m.push_back(std::fabs(v));
  std::sort(m.begin(), m.end());
  size_t best = size_t(lo * double(m.size()));
  for (size_t i = best; i < size_t(hi * double(m.size())); ++i)
    if (m[i + 1] - m[i] > m[best + 1] - m[best]) best = i;
  EXPECT_GT(m[best + 1] - m[best], 1e-4);
  return float((m[best] + m[best + 1]) / 2);
}

TEST_P(MaskedForward, MatchesADoublePrecisionReference) {
  // The gate rule, the hidden rule, and the gate rule with a threshold on |h| besides.
  for (const int mode : {0, 1, 2})
    for (int64_t T : {5, 70}) {  // below and above the packed GEMM's token count
      const SparsityRule rule = mode == 1 ? SparsityRule::hidden : SparsityRule::gate;
      BlockCase c = block_case(GetParam(), T);
      const BlockConfig& cfg = c.block.config();
      const auto& w = c.block.weights();
      const int64_t D = cfg.d_model, H = cfg.hidden;
      std::vector<double> a(size_t(T * H)), h(size_t(T * H));
      for (int64_t t = 0; t < T; ++t)
        for (int64_t j = 0; j < H; ++j) {
          double up = 0, gate = 0;
          for (int64_t d = 0; d < D; ++d) {
            up += double(c.x.row(t)[d]) * double(w.up.row(j)[d]);
            if (cfg.variant.gated) gate += double(c.x.row(t)[d]) * double(w.gate.row(j)[d]);
          }
          const double act = reference::activation(cfg.variant.activation, cfg.variant.gated ? gate : up);
          h[size_t(t * H + j)] = cfg.variant.gated ? act * up : act;
          a[size_t(t * H + j)] = rule == SparsityRule::gate ? act : h[size_t(t * H + j)];
        }
      // Alone, a threshold near the median of |a|; with |h| besides, one near the lower
      // third of |a| and one above the median of |h| (quantiles of the non-zero values).
      const bool both = mode == 2;
      const float threshold = both ? threshold_in_gap(a, 0.2, 0.45) : threshold_in_gap(a, 1.0 / 3, 2.0 / 3);
      const float hidden_threshold = both ? threshold_in_gap(h, 0.55, 0.8) : 0.0f;
      auto drops = [&](size_t i) {
        return a[i] == 0 || std::fabs(a[i]) < threshold || std::fabs(h[i]) < hidden_threshold;
      };

      Matrix y(T, D);
      MaskedForwardWork work;
      LayerSparsity counts;
      std::vector<float> magnitudes;
      ThreadPool pool(2);
      masked_block_forward(c.block, c.x.view(), y.view(), ChannelMask{rule, threshold, hidden_threshold}, work, counts,
                           &magnitudes, pool);

      for (int64_t t = 0; t < T; ++t)
        for (int64_t d = 0; d < D; ++d) {
          double ref = 0, mass = 0;
          for (int64_t j = 0; j < H; ++j) {
            if (drops(size_t(t * H + j))) continue;
            const double term = h[size_t(t * H + j)] * double(w.down.row(d)[j]);
            ref += term;
            mass += std::fabs(term);
          }
          EXPECT_NEAR(y.row(t)[d], ref, 1e-5 * (1 + mass))
              << GetParam() << " mode " << mode << " T " << T << " t " << t << " d " << d;
        }
      int64_t dropped = 0, up_skipped = 0, zeros = 0;
      for (size_t i = 0; i < a.size(); ++i) {
        dropped += drops(i);
        // A gated block's up row is unread for the gate rule's drops (not for |h|'s, which needed it).
        up_skipped += cfg.variant.gated && rule == SparsityRule::gate && (a[i] == 0 || std::fabs(a[i]) < threshold);
        zeros += a[i] == 0;
      }
      EXPECT_EQ(counts.channels, T * H);
      EXPECT_EQ(counts.dropped, dropped) << GetParam() << " mode " << mode;
      EXPECT_EQ(counts.up_skipped, up_skipped) << GetParam() << " mode " << mode;
      if (both && cfg.variant.gated) {
        EXPECT_GT(dropped, up_skipped);  // the second threshold dropped channels of its own
        EXPECT_GT(up_skipped, 0);
      }
      // Exact zeros: ReLU's act(z) = 0 for every z ≤ 0 (and none for the smooth activations
      // at these inputs); counted from the f32 pre-activation the block kept (h = act(g)·u is
      // ±0 there too, for the hidden rule).
      if (cfg.variant.activation == Activation::relu) {
        const Matrix& z = cfg.variant.gated ? work.cache.gate : work.cache.up;
        int64_t nonpositive = 0;
        for (int64_t i = 0; i < z.size(); ++i) nonpositive += z.data()[i] <= 0.0f;
        EXPECT_EQ(counts.exact_zeros, nonpositive);
        EXPECT_GT(nonpositive, 0);
      } else {
        EXPECT_EQ(counts.exact_zeros, zeros);
      }
      ASSERT_EQ(magnitudes.size(), size_t(T * H));
      for (size_t i = 0; i < magnitudes.size(); ++i)  // |a| as f32 from f32 pre-activations: ~1e-6 relative
        EXPECT_NEAR(magnitudes[i], std::fabs(a[i]), 1e-5 * (1 + std::fabs(a[i])));
    }
}

INSTANTIATE_TEST_SUITE_P(Variants, MaskedForward, ::testing::Values("relu", "gelu", "swiglu", "reglu", "geglu"));

TEST(MaskedForward, BlocksWithBiasAreRefused) {
  Block b = Block::random({parse_variant("gelu"), 4, 8, true}, 1);
  Matrix x(2, 4), y(2, 4);
  MaskedForwardWork work;
  LayerSparsity counts;
  ThreadPool pool(1);
  test::expect_error(
      [&] {
        masked_block_forward(b, x.view(), y.view(), ChannelMask{SparsityRule::gate, 0.1f, 0.0f}, work, counts, nullptr,
                             pool);
      },
      {"bias"});
}

// A small model and the text it reads.
std::string sample_text(size_t bytes) {
  const char* words[] = {"the ", "king ", "shall ", "speak ", "of ", "love ", "and ", "war, ", "my ", "lord. "};
  std::string s;
  uint64_t x = 99;
  while (s.size() < bytes) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    s += words[(x >> 33) % 10];
  }
  s.resize(bytes);
  return s;
}

ModelConfig small_model(const char* variant) {
  ModelConfig c;
  c.variant = parse_variant(variant);
  c.window = 4;
  c.embed = 8;
  c.d_model = 16;
  c.hidden = c.variant.gated ? 32 : 48;
  c.layers = 2;
  return c;
}

class SparseModel : public ::testing::TestWithParam<const char*> {};

const SparsityRule kRules[] = {SparsityRule::gate, SparsityRule::hidden};

TEST_P(SparseModel, ThresholdZeroIsTheDenseLossBitForBit) {
  const ByteData data(sample_text(3000));
  LanguageModel model(small_model(GetParam()), 3);
  ThreadPool pool(2);
  for (const SparsityRule rule : kRules)
    for (int64_t T : {7, 100}) {
      const Batch batch = spaced_batch(data.valid(), 4, T);
      const double dense = model.loss(batch, &pool);
      const SparseEvaluation e = sparse_loss(model, batch, {0.0f, 0.0f}, rule, pool);
      EXPECT_EQ(e.loss, dense) << GetParam() << " rule " << int(rule) << " T " << T;
      // Only the exact zeros are dropped; none for the smooth activations.
      for (const auto& l : e.layers) {
        EXPECT_EQ(l.dropped, l.exact_zeros);
        EXPECT_EQ(l.channels, batch.tokens() * model.config().hidden);
      }
      EXPECT_EQ(e.dropped_fraction(), e.exact_fraction());
      if (model.config().variant.activation == Activation::relu) {
        EXPECT_GT(e.exact_fraction(), 0.1);
      } else {
        EXPECT_EQ(e.exact_fraction(), 0.0);
      }
    }
}

TEST_P(SparseModel, ThresholdAboveEveryValueIsTheModelWithoutItsFfns) {
  const ByteData data(sample_text(3000));
  LanguageModel model(small_model(GetParam()), 3);
  ThreadPool pool(2);
  const Batch batch = spaced_batch(data.valid(), 4, 100);
  const float inf = std::numeric_limits<float>::infinity();
  const SparseEvaluation e = sparse_loss(model, batch, {inf, inf}, SparsityRule::gate, pool);
  EXPECT_EQ(e.dropped_fraction(), 1.0);
  const SparseEvaluation by_hidden = sparse_loss(model, batch, {inf, inf}, SparsityRule::hidden, pool);
  EXPECT_EQ(by_hidden.dropped_fraction(), 1.0);
  EXPECT_EQ(by_hidden.loss, e.loss);
  // The independent path: the dense forward of the same model with every W_down zero,
  // whose blocks then add exactly 0 to the residual stream.
  const double with_ffn = model.loss(batch, &pool);
  for (auto& b : model.blocks) {
    Matrix& down = b.weights().down;
    std::fill(down.data(), down.data() + down.size(), 0.0f);
  }
  EXPECT_EQ(e.loss, model.loss(batch, &pool));
  EXPECT_NE(e.loss, with_ffn);  // the FFNs did contribute
}

TEST_P(SparseModel, CalibrationOnABatchDropsItsTargetOnThatBatch) {
  const ByteData data(sample_text(3000));
  LanguageModel model(small_model(GetParam()), 3);
  ThreadPool pool(2);
  const Batch calibration = spaced_batch(data.train(), 4, 100);
  for (const SparsityRule rule : kRules) {
    const auto magnitudes = hidden_magnitudes(model, calibration, rule, pool);
    ASSERT_EQ(magnitudes.size(), 2u);
    const int64_t n = 100 * model.config().hidden;
    for (double s : {0.0, 0.25, 0.5, 0.9}) {
      const std::vector<float> t = calibrated_thresholds(magnitudes, s);
      const SparseEvaluation e = sparse_loss(model, calibration, t, rule, pool);
      for (size_t l = 0; l < 2; ++l) {
        ASSERT_EQ(int64_t(magnitudes[l].size()), n);
        const int64_t below = count_below(magnitudes[l], t[l]);
        EXPECT_LE(below, std::lround(s * double(n)));  // ties are kept: never more than k
      }
      // Layer 0 sees the same input as in the dense forward, so the same |a|: its dropped
      // channels are those below t (by the list) plus the exact zeros not below it (only
      // t = 0 leaves zeros there). Layer 1 does not: its input has lost layer 0's dropped
      // channels, while its threshold came from the dense forward (as CATS calibrates).
      const int64_t zeros_kept_by_t = t[0] > 0 ? 0 : e.layers[0].exact_zeros;
      EXPECT_EQ(e.layers[0].dropped, count_below(magnitudes[0], t[0]) + zeros_kept_by_t) << s;
      if (s == 0.0) {
        EXPECT_EQ(e.layers[1].dropped, e.layers[1].exact_zeros);
      }
    }
  }
}

// The two rules judge different values in gated blocks (act(g) against act(g)·u) and the
// same in 2-matrix ones (act(u)): at one target the gated blocks' calibrated thresholds and
// dropped channels differ between the rules, the 2-matrix blocks' are identical. (0.75: above
// the share of exact zeros of ReLU's gates, where both rules' thresholds would be 0.)
TEST_P(SparseModel, TheRulesDifferInGatedBlocksOnly) {
  const ByteData data(sample_text(3000));
  LanguageModel model(small_model(GetParam()), 3);
  ThreadPool pool(2);
  const Batch batch = spaced_batch(data.train(), 4, 100);
  const auto by_gate = hidden_magnitudes(model, batch, SparsityRule::gate, pool);
  const auto by_hidden = hidden_magnitudes(model, batch, SparsityRule::hidden, pool);
  const SparseEvaluation g = sparse_loss(model, batch, calibrated_thresholds(by_gate, 0.75), SparsityRule::gate, pool);
  const SparseEvaluation h =
      sparse_loss(model, batch, calibrated_thresholds(by_hidden, 0.75), SparsityRule::hidden, pool);
  if (model.config().variant.gated) {
    EXPECT_NE(by_gate, by_hidden);
    EXPECT_NE(g.loss, h.loss);
  } else {
    EXPECT_EQ(by_gate, by_hidden);
    EXPECT_EQ(g.loss, h.loss);
  }
}

INSTANTIATE_TEST_SUITE_P(Variants, SparseModel, ::testing::Values("relu", "gelu", "swiglu", "reglu", "geglu"));

TEST(SparseModelErrors, WrongThresholdCountAndExpertsAreRefused) {
  const ByteData data(sample_text(3000));
  LanguageModel model(small_model("swiglu"), 3);
  ThreadPool pool(1);
  const Batch batch = spaced_batch(data.valid(), 4, 10);
  test::expect_error(
      [&] {
        sparse_loss(model, batch, {0.0f, 0.0f}, SparsityRule::gate, pool, {0.0f});
      },
      {"1 hidden thresholds", "2 layers"});
  test::expect_error([&] { sparse_loss(model, batch, {0.0f}, SparsityRule::gate, pool); },
                     {"1 thresholds", "2 layers"});
  ModelConfig moe = small_model("swiglu");
  moe.experts = 2;
  moe.top_k = 1;
  LanguageModel with_experts(moe, 3);
  test::expect_error([&] { sparse_loss(with_experts, batch, {0.0f, 0.0f}, SparsityRule::gate, pool); }, {"experts"});
}

}  // namespace
}  // namespace ffn
