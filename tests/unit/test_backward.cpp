// Backward of every variant on every ISA, in both cache modes:
//   (a) against the double-precision oracle (reference_backward_token) within its rigorous
//       f32 error bound — about 2·(D + H + T)·u of each gradient's Σ|terms| (derivation in
//       src/block/reference_backward.cpp); a lost token, a swapped operand or a wrong
//       derivative misses it by orders of magnitude, as BackwardBound shows;
//   (b) the oracle itself against central finite differences of the forward oracle;
//   (c) accumulation: a second identical call doubles every gradient exactly;
//   (d) bit-identical results for 1, 2 and 3 threads;
//   (e) bit-identical results whether the pre-activations were kept or recomputed;
//   (f) shape errors are ffn::Error naming the argument and its value.
// Shapes include d = 1, odd d, hidden not a multiple of 16, T = 1 and T = 33, with and
// without bias.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "block/reference.hpp"
#include "expect_error.hpp"
#include "ffn/backward.hpp"
#include "ffn/error.hpp"
#include "forward_checks.hpp"
#include "isa_param.hpp"
#include "random_data.hpp"

namespace ffn {
namespace {

using test::random_matrix;

using test::all_variants;

using test::expect_error;

struct Shape {
  int64_t d, hidden, tokens;
  bool bias;
};
const Shape kShapes[] = {{1, 1, 1, false},  {1, 5, 33, true},   {7, 13, 1, true}, {7, 13, 33, false},
                         {16, 48, 4, true}, {33, 171, 33, true}, {40, 37, 9, false}};

std::string describe(const BlockConfig& c, int64_t T) {
  return variant_name(c.variant) + " d=" + std::to_string(c.d_model) + " hidden=" + std::to_string(c.hidden) +
         " T=" + std::to_string(T) + " bias=" + std::to_string(c.bias);
}

// The gradients and dx of one forward_train + backward from zeroed gradients.
struct Result {
  BlockGradients grads;
  Matrix dx;
};
Result run_backward(const Block& block, const Matrix& x, const Matrix& dy, bool recompute, ThreadPool* pool) {
  Result r{zero_gradients(block.config()), Matrix(x.rows(), x.cols())};
  ForwardCache cache;
  Matrix y(x.rows(), x.cols());
  forward_train(block, x.view(), y.view(), cache, recompute, pool);
  backward(block, x.view(), cache, dy.view(), r.dx.view(), r.grads, pool);
  return r;
}

// The oracle over every token: gradients (with their bounds) and dx with its bound.
struct Reference {
  ReferenceGradients grads;
  std::vector<double> dx, dx_bound;  // [T][D]
};
Reference reference(const Block& block, const Matrix& x, const Matrix& dy) {
  const int64_t T = x.rows(), D = x.cols();
  Reference r{ReferenceGradients(block.config()), std::vector<double>(size_t(T * D)), std::vector<double>(size_t(T * D))};
  for (int64_t t = 0; t < T; ++t)
    reference_backward_token(block, x.row(t), dy.row(t), r.dx.data() + t * D, r.grads, r.dx_bound.data() + t * D);
  return r;
}

double ratio_of(double got, double want, double bound) {
  const double r = std::fabs(got - want) / bound;
  return std::isnan(r) ? INFINITY : r;
}

// Largest |f32 − exact| / bound over every gradient element and dx (> 1: outside).
double worst_bound_ratio(const Reference& ref, const Result& got, std::string* where = nullptr) {
  double worst = 0;
  auto note = [&](double r, const std::string& name, int64_t i) {
    if (r > worst) {
      worst = r;
      if (where) *where = name + "[" + std::to_string(i) + "]";
    }
  };
  const std::pair<const char*, std::pair<const Matrix*, const ReferenceGradient*>> tensors[] = {
      {"gate", {&got.grads.gate, &ref.grads.gate}},
      {"up", {&got.grads.up, &ref.grads.up}},
      {"down", {&got.grads.down, &ref.grads.down}},
      {"gate_bias", {&got.grads.gate_bias, &ref.grads.gate_bias}},
      {"up_bias", {&got.grads.up_bias, &ref.grads.up_bias}},
      {"down_bias", {&got.grads.down_bias, &ref.grads.down_bias}}};
  for (const auto& [name, pair] : tensors) {
    const auto& [m, g] = pair;
    EXPECT_EQ(size_t(m->size()), g->value.size()) << name;
    for (int64_t i = 0; i < m->size(); ++i)
      note(ratio_of(m->data()[i], g->value[size_t(i)], ref.grads.bound(*g, i)), name, i);
  }
  for (int64_t i = 0; i < got.dx.size(); ++i)
    note(ratio_of(got.dx.data()[i], ref.dx[size_t(i)], ref.dx_bound[size_t(i)]), "dx", i);
  return worst;
}

std::vector<const Matrix*> outputs(const Result& r) {
  return {&r.grads.gate, &r.grads.up, &r.grads.down, &r.grads.gate_bias, &r.grads.up_bias, &r.grads.down_bias, &r.dx};
}

// Every gradient and dx of a equal, bit for bit, to those of b.
void expect_bit_identical(const Result& a, const Result& b, const std::string& what) {
  const auto ma = outputs(a), mb = outputs(b);
  for (size_t t = 0; t < ma.size(); ++t) {
    ASSERT_EQ(ma[t]->size(), mb[t]->size()) << what;
    for (int64_t i = 0; i < ma[t]->size(); ++i)
      ASSERT_EQ(ma[t]->data()[i], mb[t]->data()[i]) << what << ": output " << t << " element " << i;
  }
}

class Backward : public testing::TestWithParam<Isa> {};

// The backward of `block` (saved pre-activations) within the oracle's bound, and the same
// bits when they are recomputed.
void expect_within_bound_in_both_modes(const Block& block, const Matrix& x, const Matrix& dy, ThreadPool& pool) {
  const Reference ref = reference(block, x, dy);
  const std::string what = describe(block.config(), x.rows());
  const Result saved = run_backward(block, x, dy, false, &pool);
  std::string where;
  EXPECT_LE(worst_bound_ratio(ref, saved, &where), 1.0) << what << " at " << where;
  expect_bit_identical(saved, run_backward(block, x, dy, true, &pool), what + " recompute vs saved");
}

// (a), with (e) on the side: both cache modes, every variant and shape.
TEST_P(Backward, EveryVariantMatchesReferenceWithinBound) {
  test::ScopedIsa isa(GetParam());
  ThreadPool pool(2);
  for (const Variant& v : all_variants())
    for (const Shape& s : kShapes) {
      const Block block = Block::random({v, s.d, s.hidden, s.bias}, 7, &pool);
      const Matrix x = random_matrix(s.tokens, s.d, 11, 2.0f), dy = random_matrix(s.tokens, s.d, 13, 1.0f);
      expect_within_bound_in_both_modes(block, x, dy, pool);
    }
}

// swiglu_oai with its clamps engaged, in both cache modes.
TEST_P(Backward, ClampedSwishWithItsClampsEngagedMatchesReferenceWithinBound) {
  test::ScopedIsa isa(GetParam());
  ThreadPool pool(2);
  for (const Shape& s : {Shape{33, 171, 33, true}, Shape{16, 48, 4, false}}) {
    const Block block = test::clamping_block(s.d, s.hidden, s.bias, 5);
    const Matrix x = random_matrix(s.tokens, s.d, 11, 2.0f), dy = random_matrix(s.tokens, s.d, 13, 1.0f);
    const test::ClampShares shares = test::clamp_shares(block, x);
    EXPECT_GT(shares.gate, 0.05);
    EXPECT_GT(shares.up, 0.1);
    expect_within_bound_in_both_modes(block, x, dy, pool);
  }
}

// Hugging Face's activations at pre-activations over about ±7 (relu6 past 6, relu2's slope
// ~10), in both cache modes.
TEST_P(Backward, HuggingFaceActivationsAtLargePreActivationsMatchReferenceWithinBound) {
  test::ScopedIsa isa(GetParam());
  ThreadPool pool(2);
  for (const Variant v : {Variant{false, Activation::relu6}, Variant{true, Activation::relu6},
                          Variant{false, Activation::relu2}, Variant{true, Activation::relu2},
                          Variant{true, Activation::quick_gelu}})
    for (const Shape& s : {Shape{33, 171, 33, true}, Shape{16, 48, 4, false}}) {
      const Block block = test::scaled_block(v, s.d, s.hidden, s.bias, 5);
      const Matrix x = random_matrix(s.tokens, s.d, 11, 2.0f), dy = random_matrix(s.tokens, s.d, 13, 1.0f);
      EXPECT_GT(test::share_above(block, x, 6.0), 0.05) << variant_name(v);
      expect_within_bound_in_both_modes(block, x, dy, pool);
    }
}

// forward_train's y is Block::forward's, bit for bit, in either mode.
TEST_P(Backward, ForwardTrainIsForward) {
  test::ScopedIsa isa(GetParam());
  ThreadPool pool(3);
  for (const Variant& v : all_variants()) {
    const Block block = Block::random({v, 33, 171, true}, 5, &pool);
    const Matrix x = random_matrix(33, 33, 3, 2.0f);
    Matrix y(33, 33), y_train(33, 33);
    block.forward(x.view(), y.view(), &pool);
    for (bool recompute : {false, true}) {
      ForwardCache cache;
      forward_train(block, x.view(), y_train.view(), cache, recompute, &pool);
      for (int64_t i = 0; i < y.size(); ++i) ASSERT_EQ(y.data()[i], y_train.data()[i]) << variant_name(v);
      EXPECT_EQ(cache.recompute, recompute);
      EXPECT_EQ(cache.tokens, 33);
      EXPECT_EQ(cache.up.size(), recompute ? 0 : 33 * 171);
      EXPECT_EQ(cache.gate.size(), recompute || !v.gated ? 0 : 33 * 171);
    }
  }
}

// (c) Each call adds a sum formed from 0, so from zero the second call doubles exactly.
TEST_P(Backward, SecondCallDoublesTheGradients) {
  test::ScopedIsa isa(GetParam());
  ThreadPool pool(2);
  for (const Variant& v : {Variant{true, Activation::swish}, Variant{false, Activation::gelu}}) {
    const Block block = Block::random({v, 33, 171, true}, 2, &pool);
    const Matrix x = random_matrix(33, 33, 4, 2.0f), dy = random_matrix(33, 33, 6, 1.0f);
    ForwardCache cache;
    Matrix y(33, 33);
    forward_train(block, x.view(), y.view(), cache, false, &pool);
    Result once{zero_gradients(block.config()), Matrix(33, 33)}, twice{zero_gradients(block.config()), Matrix(33, 33)};
    backward(block, x.view(), cache, dy.view(), once.dx.view(), once.grads, &pool);
    for (int call = 0; call < 2; ++call) backward(block, x.view(), cache, dy.view(), twice.dx.view(), twice.grads, &pool);
    const auto a = outputs(once), b = outputs(twice);
    for (size_t t = 0; t + 1 < a.size(); ++t)
      for (int64_t i = 0; i < a[t]->size(); ++i)
        ASSERT_EQ(2.0f * a[t]->data()[i], b[t]->data()[i]) << variant_name(v) << " gradient " << t << " element " << i;
    for (int64_t i = 0; i < once.dx.size(); ++i) ASSERT_EQ(once.dx.data()[i], twice.dx.data()[i]);  // dx is written
  }
}

// (d) and (e): thread counts that split the hidden units (200 = 12.5 chunks of 16) and
// model columns (72) unevenly.
TEST_P(Backward, BitIdenticalForAnyThreadCountAndCacheMode) {
  test::ScopedIsa isa(GetParam());
  for (const Variant& v : {Variant{true, Activation::swish}, Variant{true, Activation::relu},
                           Variant{false, Activation::gelu}, Variant{false, Activation::gelu_tanh}})
    for (int64_t T : {1, 33}) {
      const Block block = Block::random({v, 72, 200, true}, 3);
      const Matrix x = random_matrix(T, 72, 5, 2.0f), dy = random_matrix(T, 72, 8, 1.0f);
      ThreadPool one(1);
      const Result first = run_backward(block, x, dy, false, &one);
      for (int threads : {1, 2, 3})
        for (bool recompute : {false, true}) {
          ThreadPool pool(threads);
          expect_bit_identical(first, run_backward(block, x, dy, recompute, &pool),
                               describe(block.config(), T) + " threads=" + std::to_string(threads) +
                                   " recompute=" + std::to_string(recompute));
        }
    }
}

TEST_P(Backward, DxNotNeededGivesTheSameGradients) {
  test::ScopedIsa isa(GetParam());
  const Block block = Block::random({{true, Activation::swish}, 24, 40, true}, 1);
  const Matrix x = random_matrix(5, 24, 1, 2.0f), dy = random_matrix(5, 24, 2, 1.0f);
  Result without = run_backward(block, x, dy, false, nullptr);
  ForwardCache cache;
  Matrix y(5, 24);
  forward_train(block, x.view(), y.view(), cache, false);
  without.grads = zero_gradients(block.config());
  backward(block, x.view(), cache, dy.view(), MatrixView{}, without.grads);
  expect_bit_identical(run_backward(block, x, dy, false, nullptr), without, "dx not needed");
}

TEST_P(Backward, StridedViews) {
  test::ScopedIsa isa(GetParam());
  const Block block = Block::random({{true, Activation::gelu}, 20, 40, true}, 9);
  const Matrix x_wide = random_matrix(6, 27, 2, 2.0f), dy_wide = random_matrix(6, 23, 3, 1.0f);
  Matrix x(6, 20), dy(6, 20);
  for (int64_t t = 0; t < 6; ++t)
    for (int64_t i = 0; i < 20; ++i) {
      x.row(t)[i] = x_wide.row(t)[i];
      dy.row(t)[i] = dy_wide.row(t)[i];
    }
  const Result dense = run_backward(block, x, dy, false, nullptr);
  Result strided{zero_gradients(block.config()), Matrix(6, 20)};
  Matrix dx_wide(6, 31), y_wide(6, 29);
  ForwardCache cache;
  const ConstMatrixView xv{x_wide.data(), 6, 20, 27};
  forward_train(block, xv, {y_wide.data(), 6, 20, 29}, cache, false);
  backward(block, xv, cache, {dy_wide.data(), 6, 20, 23}, {dx_wide.data(), 6, 20, 31}, strided.grads);
  for (int64_t t = 0; t < 6; ++t)
    for (int64_t i = 0; i < 20; ++i) strided.dx.row(t)[i] = dx_wide.row(t)[i];
  expect_bit_identical(dense, strided, "strided views");
}

// Prefixed "Backward" (not the macro's "Isa") so that --gtest_filter='Backward*' runs them.
INSTANTIATE_TEST_SUITE_P(Backward, Backward, testing::ValuesIn(supported_isas()), test::isa_param_name);

// The bound is tight enough to catch real bugs: each deliberate mistake below puts some
// gradient far outside it.
TEST(BackwardBound, CatchesWrongDerivativeLostTokenAndSwappedOperands) {
  const BlockConfig geglu{{true, Activation::gelu}, 33, 171, true, 0.0};
  const Block block = Block::random(geglu, 1);
  const Matrix x = random_matrix(9, 33, 4, 2.0f), dy = random_matrix(9, 33, 5, 1.0f);
  const Reference ref = reference(block, x, dy);
  EXPECT_LE(worst_bound_ratio(ref, run_backward(block, x, dy, false, nullptr)), 1.0);

  // GELU's tanh form where the exact one was meant: the derivatives differ by < 2e-3.
  Block tanh_form({{true, Activation::gelu_tanh}, 33, 171, true});
  Block same_weights = Block::random(geglu, 1);
  tanh_form.weights() = std::move(same_weights.weights());
  EXPECT_GT(worst_bound_ratio(ref, run_backward(tanh_form, x, dy, false, nullptr)), 10.0);

  // The last token lost from every sum over tokens (dx of the others kept).
  Matrix x8(8, 33), dy8(8, 33);
  for (int64_t i = 0; i < 8 * 33; ++i) {
    x8.data()[i] = x.data()[i];
    dy8.data()[i] = dy.data()[i];
  }
  Result lost = run_backward(block, x8, dy8, false, nullptr);
  Matrix dx9(9, 33);
  for (int64_t i = 0; i < 8 * 33; ++i) dx9.data()[i] = lost.dx.data()[i];
  for (int64_t i = 8 * 33; i < 9 * 33; ++i) dx9.data()[i] = float(ref.dx[size_t(i)]);
  lost.dx = std::move(dx9);
  EXPECT_GT(worst_bound_ratio(ref, lost), 10.0);

  // Gate and up gradients swapped.
  Result swapped = run_backward(block, x, dy, false, nullptr);
  std::swap(swapped.grads.gate, swapped.grads.up);
  EXPECT_GT(worst_bound_ratio(ref, swapped), 10.0);
}

// ---- (b) the oracle against central finite differences of the forward oracle ----

// Σ_t Σ_i dy[t][i] · (y⁺[t][i] − y⁻[t][i]) over the given tokens, with the block's
// parameters as they are on each side: the differences are taken output by output, where
// the double rounding of y⁺ and y⁻ (the same sums but for one term) largely cancels.
class FiniteDifference {
 public:
  FiniteDifference(Block& block, const Matrix& x, const Matrix& dy) : block_(block), x_(x), dy_(dy) {}

  // ∂L/∂p for a float p of the block or of x, by central difference with a relative step
  // of 1e-6 (at least 2⁻⁴·1e-6): the step is exact (the difference of the two f32 values
  // used), the truncation error is O(step²) ≈ 1e-14 and the cancellation error
  // ≈ 1e-16·|y| / step ≈ 1e-9 of the gradient.
  double derivative(float& p, int64_t t0, int64_t t1) {
    const float original = p;
    const double step = 1e-6 * std::max(std::fabs(double(original)), 0x1p-4);
    const float plus = float(original + step), minus = float(original - step);
    p = plus;
    const std::vector<double> y_plus = outputs(t0, t1);
    p = minus;
    const std::vector<double> y_minus = outputs(t0, t1);
    p = original;
    double dl = 0;
    const int64_t D = x_.cols();
    for (int64_t t = t0; t < t1; ++t)
      for (int64_t i = 0; i < D; ++i) {
        const size_t k = size_t((t - t0) * D + i);
        dl += double(dy_.row(t)[i]) * (y_plus[k] - y_minus[k]);
      }
    return dl / (double(plus) - double(minus));
  }

 private:
  std::vector<double> outputs(int64_t t0, int64_t t1) {
    const int64_t D = x_.cols();
    std::vector<double> y(size_t((t1 - t0) * D));
    for (int64_t t = t0; t < t1; ++t) reference_forward_token(block_, x_.row(t), y.data() + (t - t0) * D);
    return y;
  }
  Block& block_;
  const Matrix& x_;
  const Matrix& dy_;
};

// min over the tokens [t0, t1) and hidden units [j0, j1) of the distance of a
// pre-activation to a kink, in double — ReLU's at 0, relu6's at 0 and 6, swiglu_oai's at
// g = 7 and u = ±7 (relu2's slope is continuous: its finite differences need no care):
// it must be far (1e-3) from every argument a perturbation (≤ 1e-6·|p| moves it by ≪ 1e-5)
// touches, or the central difference straddles it.
double distance_to_kink(const Block& block, const Matrix& x, int64_t t0, int64_t t1, int64_t j0, int64_t j1) {
  const auto& c = block.config();
  const auto& w = block.weights();
  auto pre = [&](const Matrix& m, const Matrix& b, int64_t t, int64_t j) {
    double z = b.empty() ? 0.0 : b.data()[j];
    for (int64_t k = 0; k < c.d_model; ++k) z += double(m.row(j)[k]) * double(x.row(t)[k]);
    return z;
  };
  const bool oai = c.variant.activation == Activation::clamped_swish;
  double nearest = INFINITY;
  for (int64_t t = t0; t < t1; ++t)
    for (int64_t j = j0; j < j1; ++j) {
      if (oai) {
        nearest = std::min({nearest, std::fabs(pre(w.gate, w.gate_bias, t, j) - 7.0),
                            std::fabs(std::fabs(pre(w.up, w.up_bias, t, j)) - 7.0)});
      } else {
        const bool gated = c.variant.gated;
        const double z = pre(gated ? w.gate : w.up, gated ? w.gate_bias : w.up_bias, t, j);
        nearest = std::min({nearest, std::fabs(z), c.variant.activation == Activation::relu6 ? std::fabs(z - 6.0) : INFINITY});
      }
    }
  return nearest;
}

// Checks up to `samples` elements of each gradient (and of dx) of `block` against finite
// differences; returns the worst |fd − oracle| / (1e-6 · largest |oracle| of its tensor).
// The oracle's values come from `oracle_block`, normally the same block.
double worst_fd_ratio(Block& block, const Block& oracle_block, const Matrix& x, const Matrix& dy, int samples,
                      int* checked) {
  const auto& c = block.config();
  const int64_t T = x.rows(), D = c.d_model, H = c.hidden;
  const Reference ref = reference(oracle_block, x, dy);
  Matrix x_mut(T, D);
  std::copy(x.data(), x.data() + x.size(), x_mut.data());
  FiniteDifference fd(block, x_mut, dy);
  const Activation a = c.variant.activation;
  const bool kink = a == Activation::relu || a == Activation::relu6 || a == Activation::clamped_swish;
  std::mt19937 rng(17);
  double worst = 0;
  auto scale_of = [](const std::vector<double>& v) {
    double s = 0;
    for (double e : v) s = std::max(s, std::fabs(e));
    return s;
  };
  auto check = [&](double numeric, double oracle, double scale) {
    ++*checked;
    worst = std::max(worst, std::fabs(numeric - oracle) / (1e-6 * scale + 1e-300));
  };
  // Parameters: (tensor, its oracle, hidden unit of element i or -1 for W_down / b_down).
  auto params = [&](Matrix& m, const ReferenceGradient& g, std::function<int64_t(int64_t)> unit) {
    if (m.empty()) return;
    const double scale = scale_of(g.value);
    for (int s = 0; s < samples; ++s) {
      const int64_t i = std::uniform_int_distribution<int64_t>(0, m.size() - 1)(rng);
      const int64_t j = unit(i);
      if (kink && j >= 0 && distance_to_kink(block, x, 0, T, j, j + 1) < 1e-3) continue;
      check(fd.derivative(m.data()[i], 0, T), g.value[size_t(i)], scale);
    }
  };
  auto& w = block.weights();
  params(w.gate, ref.grads.gate, [&](int64_t i) { return i / D; });
  params(w.up, ref.grads.up, [&](int64_t i) { return i / D; });
  params(w.down, ref.grads.down, [](int64_t) { return int64_t{-1}; });
  params(w.gate_bias, ref.grads.gate_bias, [](int64_t i) { return i; });
  params(w.up_bias, ref.grads.up_bias, [](int64_t i) { return i; });
  params(w.down_bias, ref.grads.down_bias, [](int64_t) { return int64_t{-1}; });
  const double dx_scale = scale_of(ref.dx);
  for (int s = 0; s < samples; ++s) {
    const int64_t i = std::uniform_int_distribution<int64_t>(0, x_mut.size() - 1)(rng);
    const int64_t t = i / D;
    if (kink && distance_to_kink(block, x, t, t + 1, 0, H) < 1e-3) continue;
    check(fd.derivative(x_mut.data()[i], t, t + 1), ref.dx[size_t(i)], dx_scale);
  }
  return worst;
}

// Tolerance: 1e-6 of the largest gradient of the tensor — ~1000× the expected error of the
// differences (≈ 1e-9, see FiniteDifference), while a wrong derivative formula errs by
// ≥ 1e-4 of it (the next test shows GELU's tanh form, the nearest wrong one, failing).
TEST(BackwardReference, MatchesFiniteDifferences) {
  const Shape shapes[] = {{1, 3, 2, true}, {7, 13, 1, false}, {9, 21, 5, true}};
  for (const Variant& v : all_variants())
    for (const Shape& s : shapes) {
      Block block = Block::random({v, s.d, s.hidden, s.bias}, 21);
      const Matrix x = random_matrix(s.tokens, s.d, 22, 2.0f), dy = random_matrix(s.tokens, s.d, 23, 1.0f);
      int checked = 0;
      EXPECT_LE(worst_fd_ratio(block, block, x, dy, 12, &checked), 1.0) << describe(block.config(), s.tokens);
      EXPECT_GE(checked, 3 * 12) << describe(block.config(), s.tokens) << ": too many samples near ReLU's kink";
    }
}

// swiglu_oai with its clamps engaged: the gradients through the clamps (0 above the gate's
// limit and beyond the up's) agree with differences of the forward.
TEST(BackwardReference, ClampedSwishWithItsClampsEngagedMatchesFiniteDifferences) {
  Block block = test::clamping_block(9, 21, true, 21);
  const Matrix x = random_matrix(6, 9, 22, 2.0f), dy = random_matrix(6, 9, 23, 1.0f);
  const test::ClampShares shares = test::clamp_shares(block, x);
  EXPECT_GT(shares.gate, 0.05);
  EXPECT_GT(shares.up, 0.1);
  int checked = 0;
  EXPECT_LE(worst_fd_ratio(block, block, x, dy, 24, &checked), 1.0);
  EXPECT_GE(checked, 3 * 24) << "too many samples near the clamps' kinks";
}

TEST(BackwardReference, FiniteDifferencesCatchTheNearestWrongDerivative) {
  Block geglu = Block::random({{true, Activation::gelu}, 9, 21, true}, 21);
  Block tanh_form({{true, Activation::gelu_tanh}, 9, 21, true});
  Block copy = Block::random({{true, Activation::gelu}, 9, 21, true}, 21);
  tanh_form.weights() = std::move(copy.weights());
  const Matrix x = random_matrix(5, 9, 22, 2.0f), dy = random_matrix(5, 9, 23, 1.0f);
  int checked = 0;
  EXPECT_GT(worst_fd_ratio(geglu, tanh_form, x, dy, 12, &checked), 10.0);
}

// ---- (f) shapes, and the small public helpers ----

TEST(BackwardShapes, ErrorsNameTheArgumentAndValue) {
  const Block block = Block::random({{true, Activation::swish}, 8, 16, true}, 1);
  Matrix x(2, 8), y(2, 8), dy(2, 8), dx(2, 8), x_wide(2, 9), dy_short(1, 8), dx_short(1, 8);
  ForwardCache cache;
  forward_train(block, x.view(), y.view(), cache, false);
  BlockGradients g = zero_gradients(block.config());

  expect_error([&] { forward_train(block, x_wide.view(), y.view(), cache, false); }, {"input x", "9 columns", "8"});
  expect_error([&] { forward_train(block, x.view(), {x.data(), 2, 8, 8}, cache, false); }, {"overlaps"});
  expect_error([&] { backward(block, x_wide.view(), cache, dy.view(), dx.view(), g); }, {"input x", "9 columns"});
  expect_error([&] { backward(block, x.view(), cache, dy_short.view(), dx.view(), g); }, {"input x has 2 rows", "gradient dy has 1"});
  expect_error([&] { backward(block, x.view(), cache, dy.view(), dx_short.view(), g); }, {"input x has 2 rows", "gradient dx has 1"});
  expect_error([&] { backward(block, x.view(), cache, dy.view(), {dy.data(), 2, 8, 8}, g); }, {"dx overlaps", "dy"});
  expect_error([&] { backward(block, x.view(), cache, dy.view(), {x.data(), 2, 8, 8}, g); }, {"dx overlaps", "x"});
  expect_error([&] { backward(block, x.view(), cache, {dy.data(), 2, 8, 4}, dx.view(), g); }, {"row stride 4"});

  // A cache from another batch, or one whose tensors were tampered with.
  ForwardCache other;
  Matrix x3(3, 8), y3(3, 8);
  forward_train(block, x3.view(), y3.view(), other, false);
  expect_error([&] { backward(block, x.view(), other, dy.view(), dx.view(), g); }, {"cache holds 3 tokens", "2 rows"});
  ForwardCache broken = std::move(cache);
  broken.gate = Matrix(2, 15);
  expect_error([&] { backward(block, x.view(), broken, dy.view(), dx.view(), g); }, {"gate", "2×15", "2×16"});

  // Gradients of another configuration.
  forward_train(block, x.view(), y.view(), cache, true);
  BlockGradients wrong = zero_gradients({{true, Activation::swish}, 8, 17, true});
  expect_error([&] { backward(block, x.view(), cache, dy.view(), dx.view(), wrong); }, {"gradient gate", "17×8", "16×8"});
  BlockGradients no_bias = zero_gradients({{true, Activation::swish}, 8, 16, false});
  expect_error([&] { backward(block, x.view(), cache, dy.view(), dx.view(), no_bias); }, {"gate_bias", "0×0", "1×16"});
  expect_error([&] { zero_gradients({{true, Activation::swish}, 0, 16, false}); }, {"d_model", "0"});

  // No tokens: nothing to do, gradients untouched.
  Matrix none(0, 8), none_y(0, 8);
  ForwardCache empty;
  EXPECT_NO_THROW(forward_train(block, none.view(), none_y.view(), empty, false));
  EXPECT_NO_THROW(backward(block, none.view(), empty, none.view(), none_y.view(), g));
  for (int64_t i = 0; i < g.up.size(); ++i) ASSERT_EQ(g.up.data()[i], 0.0f);
}

TEST(BackwardShapes, ZeroGradientsHaveTheWeightsShapes) {
  for (const Variant& v : all_variants())
    for (bool bias : {false, true}) {
      const Block block({v, 6, 10, bias});
      const BlockGradients g = zero_gradients(block.config());
      const auto& w = block.weights();
      const std::pair<const Matrix*, const Matrix*> pairs[] = {{&g.gate, &w.gate}, {&g.up, &w.up},
                                                               {&g.down, &w.down}, {&g.gate_bias, &w.gate_bias},
                                                               {&g.up_bias, &w.up_bias},
                                                               {&g.down_bias, &w.down_bias}};
      for (const auto& [grad, weight] : pairs) {
        EXPECT_EQ(grad->rows(), weight->rows()) << variant_name(v);
        EXPECT_EQ(grad->cols(), weight->cols()) << variant_name(v);
        for (int64_t i = 0; i < grad->size(); ++i) ASSERT_EQ(grad->data()[i], 0.0f);
      }
    }
}

TEST(BackwardShapes, SavedBytesPerToken) {
  const BlockConfig swiglu = resolve({parse_variant("swiglu"), 4096, std::nullopt, {}, false});  // hidden 11008
  EXPECT_EQ(saved_bytes_per_token(swiglu, false), (2 * 11008 + 4096) * 4);
  EXPECT_EQ(saved_bytes_per_token(swiglu, true), 4096 * 4);
  const BlockConfig gelu = resolve({parse_variant("gelu"), 4096, std::nullopt, {}, false});  // hidden 16384
  EXPECT_EQ(saved_bytes_per_token(gelu, false), (16384 + 4096) * 4);
  EXPECT_EQ(saved_bytes_per_token(gelu, true), 4096 * 4);
}

}  // namespace
}  // namespace ffn
