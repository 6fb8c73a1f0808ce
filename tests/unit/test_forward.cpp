// The fast forward of every variant on every ISA against the double-precision reference,
// within the rigorous f32 error bound the reference computes (see src/block/reference.cpp:
// about 2·(D+H)·u of the magnitude Σ|W_down·h|, a bound no summation order can break,
// while a wrong index, activation, operand or bias misses it by orders of magnitude —
// the tests below check that too). Shapes include d = 1, odd d, hidden not a multiple of
// 16, T = 1 and T = 257, with and without bias.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <utility>
#include <vector>

#include "ffn/block.hpp"
#include "ffn/error.hpp"
#include "forward_checks.hpp"
#include "isa_param.hpp"
#include "random_data.hpp"

namespace ffn {
namespace {

using test::random_matrix;

using test::all_variants;
using test::worst_bound_ratio;

struct Shape {
  int64_t d, hidden, tokens;
  bool bias;
};
const Shape kShapes[] = {{1, 1, 1, false},     {1, 5, 3, true},     {7, 13, 2, false},  {16, 48, 4, true},
                         {33, 171, 17, false}, {64, 96, 257, true}, {100, 37, 5, false}};

class Forward : public testing::TestWithParam<Isa> {};

TEST_P(Forward, EveryVariantMatchesReferenceWithinBound) {
  test::ScopedIsa isa(GetParam());
  ThreadPool pool(2);
  for (const Variant& v : all_variants())
    for (const Shape& s : kShapes) {
      const Block block = Block::random({v, s.d, s.hidden, s.bias}, 7, &pool);
      const Matrix x = random_matrix(s.tokens, s.d, 11, 2.0f);
      Matrix y(s.tokens, s.d);
      block.forward(x.view(), y.view(), &pool);
      EXPECT_LE(worst_bound_ratio(block, x, y), 1.0)
          << variant_name(v) << " d=" << s.d << " hidden=" << s.hidden << " T=" << s.tokens << " bias=" << s.bias;
    }
}

TEST_P(Forward, BitIdenticalForAnyThreadCount) {
  test::ScopedIsa isa(GetParam());
  for (const Variant& v : {Variant{true, Activation::swish}, Variant{false, Activation::gelu}}) {
    const Block block = Block::random({v, 72, 200, true}, 3);
    // 9 tokens take the dot-product kernel, 70 the packed one (kernels::forward_gemm).
    for (int64_t T : {9, 70}) {
      const Matrix x = random_matrix(T, 72, 5, 2.0f);
      Matrix first(T, 72);
      ThreadPool one(1);
      block.forward(x.view(), first.view(), &one);
      for (int threads : {2, 3, 5, 8}) {
        ThreadPool pool(threads);
        Matrix y(T, 72);
        block.forward(x.view(), y.view(), &pool);
        for (int64_t i = 0; i < y.size(); ++i)
          ASSERT_EQ(first.data()[i], y.data()[i]) << variant_name(v) << " threads=" << threads << " element " << i;
      }
    }
  }
}

TEST_P(Forward, StridedViews) {
  test::ScopedIsa isa(GetParam());
  const Block block = Block::random({{true, Activation::swish}, 20, 40, false}, 9);
  const Matrix wide = random_matrix(6, 27, 2, 2.0f);  // x is the first 20 columns of each row
  Matrix y_wide(6, 31);
  block.forward({wide.data(), 6, 20, 27}, {y_wide.data(), 6, 20, 31});
  Matrix x(6, 20), y(6, 20);
  for (int64_t t = 0; t < 6; ++t)
    for (int64_t i = 0; i < 20; ++i) x.row(t)[i] = wide.row(t)[i];
  block.forward(x.view(), y.view());
  for (int64_t t = 0; t < 6; ++t)
    for (int64_t i = 0; i < 20; ++i) ASSERT_EQ(y.row(t)[i], y_wide.row(t)[i]);
}

// swiglu_oai with its clamps engaged (a good share of gates above 7, of ups beyond ±7), at
// T below and above the packed kernels' threshold, with and without bias.
TEST_P(Forward, ClampedSwishWithItsClampsEngagedWithinBound) {
  test::ScopedIsa isa(GetParam());
  ThreadPool pool(2);
  for (const Shape& s : {Shape{33, 171, 17, true}, Shape{64, 96, 70, false}, Shape{16, 48, 3, true}}) {
    const Block block = test::clamping_block(s.d, s.hidden, s.bias, 5);
    const Matrix x = random_matrix(s.tokens, s.d, 13, 2.0f);
    const test::ClampShares shares = test::clamp_shares(block, x);
    EXPECT_GT(shares.gate, 0.05);
    EXPECT_GT(shares.up, 0.1);
    Matrix y(s.tokens, s.d);
    block.forward(x.view(), y.view(), &pool);
    EXPECT_LE(worst_bound_ratio(block, x, y), 1.0) << "d=" << s.d << " hidden=" << s.hidden << " T=" << s.tokens;
  }
}

// Hugging Face's activations at pre-activations over about ±7: relu6 past its limit 6 (a
// good share of the units), relu2 where its slope is ~10, quick_gelu far into both tails.
TEST_P(Forward, HuggingFaceActivationsAtLargePreActivationsWithinBound) {
  test::ScopedIsa isa(GetParam());
  ThreadPool pool(2);
  for (const Variant v : {Variant{false, Activation::relu6}, Variant{true, Activation::relu6},
                          Variant{false, Activation::relu2}, Variant{true, Activation::relu2},
                          Variant{false, Activation::quick_gelu}, Variant{true, Activation::quick_gelu}})
    for (const Shape& s : {Shape{33, 171, 17, true}, Shape{64, 96, 70, false}}) {
      const Block block = test::scaled_block(v, s.d, s.hidden, s.bias, 5);
      const Matrix x = random_matrix(s.tokens, s.d, 13, 2.0f);
      EXPECT_GT(test::share_above(block, x, 6.0), 0.05) << variant_name(v);
      Matrix y(s.tokens, s.d);
      block.forward(x.view(), y.view(), &pool);
      EXPECT_LE(worst_bound_ratio(block, x, y), 1.0) << variant_name(v) << " d=" << s.d << " T=" << s.tokens;
    }
}

FFN_INSTANTIATE_FOR_EVERY_ISA(Forward);

// The bound tells each of Hugging Face's activations from its nearest neighbour in ffn, on
// the same weights: relu6 from relu (past 6), relu2 from relu, quick_gelu from gelu (the
// function it approximates) — so none could stand in for another unnoticed.
TEST(ReferenceBound, TellsHuggingFaceActivationsFromTheirNeighbours) {
  const Matrix x = random_matrix(17, 33, 13, 2.0f);
  const std::pair<Activation, Activation> pairs[] = {{Activation::relu6, Activation::relu},
                                                     {Activation::relu2, Activation::relu},
                                                     {Activation::quick_gelu, Activation::gelu}};
  for (const auto& [right, wrong] : pairs) {
    const Block block = test::scaled_block({false, right}, 33, 171, true, 5);
    Block imposter = test::scaled_block({false, right}, 33, 171, true, 5);
    Block other({{false, wrong}, 33, 171, true});
    other.weights() = std::move(imposter.weights());
    Matrix y(17, 33);
    other.forward(x.view(), y.view());
    EXPECT_GT(worst_bound_ratio(block, x, y), 10.0) << activation_name(right) << " run as " << activation_name(wrong);
  }
}

// The bound sees each part of swiglu_oai: the clamps and the + 1 of the up factor.
TEST(ReferenceBound, CatchesAMissingClampOrShiftOfSwigluOai) {
  const Block block = test::clamping_block(33, 171, true, 5);
  const Matrix x = random_matrix(17, 33, 13, 2.0f);
  Matrix y(17, 33);

  // No + 1: the up bias lowered by 1 gives clamp(u − 1) + 1 = u wherever |u − 1| ≤ 7.
  Block no_shift = test::clamping_block(33, 171, true, 5);
  for (int64_t j = 0; j < 171; ++j) no_shift.weights().up_bias.data()[j] -= 1.0f;
  no_shift.forward(x.view(), y.view());
  EXPECT_GT(worst_bound_ratio(block, x, y), 10.0);

  // No clamps: swish of 1.702·g is 1.702·(g·σ(1.702·g)), so a swiglu block with the gate
  // scaled by 1.702, the down weights by 1/1.702 and the up bias by + 1 is the unclamped formula.
  Block unclamped({{true, Activation::swish}, 33, 171, true});
  Block same_weights = test::clamping_block(33, 171, true, 5);
  unclamped.weights() = std::move(same_weights.weights());
  auto& w = unclamped.weights();
  for (Matrix* m : {&w.gate, &w.gate_bias})
    for (int64_t i = 0; i < m->size(); ++i) m->data()[i] *= 1.702f;
  for (int64_t i = 0; i < w.down.size(); ++i) w.down.data()[i] /= 1.702f;
  for (int64_t j = 0; j < 171; ++j) w.up_bias.data()[j] += 1.0f;
  unclamped.forward(x.view(), y.view());
  EXPECT_GT(worst_bound_ratio(block, x, y), 10.0);
}

// The bound is tight enough to catch real bugs: each of these deliberate mistakes must
// put some output outside it.
TEST(ReferenceBound, CatchesWrongActivationOperandAndTail) {
  const BlockConfig swiglu{{true, Activation::swish}, 33, 171, false, 0.0};
  const Block block = Block::random(swiglu, 1);
  const Matrix x = random_matrix(3, 33, 4, 2.0f);
  Matrix y(3, 33);

  // GELU (tanh form) where Swish was meant: same weights, different activation.
  Block wrong_act({{true, Activation::gelu_tanh}, 33, 171, false});
  Block same_weights = Block::random(swiglu, 1);
  wrong_act.weights() = std::move(same_weights.weights());
  wrong_act.forward(x.view(), y.view());
  EXPECT_GT(worst_bound_ratio(block, x, y), 10.0);

  // Gate and up swapped.
  Block swapped = Block::random(swiglu, 1);
  std::swap(swapped.weights().gate, swapped.weights().up);
  swapped.forward(x.view(), y.view());
  EXPECT_GT(worst_bound_ratio(block, x, y), 10.0);

  // The last input feature dropped (a lost K tail).
  Block no_tail = Block::random(swiglu, 1);
  for (int64_t j = 0; j < 171; ++j) no_tail.weights().up.row(j)[32] = 0.0f;
  no_tail.forward(x.view(), y.view());
  EXPECT_GT(worst_bound_ratio(block, x, y), 10.0);

  // A down-projection bias forgotten.
  const BlockConfig with_bias{{true, Activation::swish}, 33, 171, true, 0.0};
  const Block biased = Block::random(with_bias, 1);
  Block unbiased = Block::random(with_bias, 1);
  unbiased.weights().down_bias = Matrix(1, 33);
  unbiased.forward(x.view(), y.view());
  EXPECT_GT(worst_bound_ratio(biased, x, y), 10.0);
}

TEST(Forward, ShapeErrors) {
  const Block block = Block::random({{true, Activation::swish}, 8, 16, false}, 1);
  Matrix x(2, 8), y(2, 8), y_short(1, 8), x_wide(2, 9);
  EXPECT_THROW(block.forward(x_wide.view(), y.view()), Error);
  EXPECT_THROW(block.forward(x.view(), y_short.view()), Error);
  EXPECT_THROW(block.forward(x.view(), {x.data(), 2, 8, 8}), Error);  // y aliases x
  EXPECT_THROW(block.forward({x.data(), 2, 8, 4}, y.view()), Error);  // stride < cols
  Matrix none(0, 8), none_out(0, 8);
  EXPECT_NO_THROW(block.forward(none.view(), none_out.view()));
}

TEST(Forward, NanAndInfPropagate) {
  const Block block = Block::random({{true, Activation::swish}, 8, 16, false}, 1);
  Matrix x = random_matrix(3, 8, 1, 2.0f);
  x.row(0)[3] = NAN;
  x.row(1)[0] = INFINITY;
  Matrix y(3, 8);
  block.forward(x.view(), y.view());
  for (int64_t i = 0; i < 8; ++i) EXPECT_TRUE(std::isnan(y.row(0)[i]));
  for (int64_t i = 0; i < 8; ++i) EXPECT_TRUE(std::isfinite(y.row(2)[i]));
}

TEST(Block, RandomInitIsDeterministicAndBounded) {
  const BlockConfig c{{true, Activation::swish}, 64, 96, true, 0.0};
  ThreadPool one(1), three(3);
  const Block a = Block::random(c, 42, &one), b = Block::random(c, 42, &three), other = Block::random(c, 43, &one);
  const auto& wa = a.weights();
  for (int64_t i = 0; i < wa.down.size(); ++i) ASSERT_EQ(wa.down.data()[i], b.weights().down.data()[i]);
  EXPECT_NE(wa.up.data()[0], other.weights().up.data()[0]);
  // nn.Linear's default: U(-1/√fan_in, 1/√fan_in); mean ≈ 0.
  const double bound_in = 1.0 / std::sqrt(64.0), bound_down = 1.0 / std::sqrt(96.0);
  double sum = 0, max_abs = 0;
  for (int64_t i = 0; i < wa.gate.size(); ++i) {
    sum += wa.gate.data()[i];
    max_abs = std::max(max_abs, double(std::fabs(wa.gate.data()[i])));
  }
  EXPECT_LE(max_abs, bound_in);
  EXPECT_GT(max_abs, 0.95 * bound_in);
  EXPECT_NEAR(sum / double(wa.gate.size()), 0.0, 0.01);
  for (int64_t i = 0; i < wa.down.size(); ++i) ASSERT_LE(std::fabs(wa.down.data()[i]), bound_down);
  for (int64_t i = 0; i < wa.down_bias.size(); ++i) ASSERT_LE(std::fabs(wa.down_bias.data()[i]), bound_down);
}

}  // namespace
}  // namespace ffn
