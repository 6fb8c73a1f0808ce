// Hostile values: NaN and ±Inf in the input, and the activations at ±1e4, ±100 and on
// subnormals.
//
// Contract of Block::forward for non-finite inputs: IEEE arithmetic, nothing clamped or
// flushed (but for swiglu_oai's clamps, which are its formula) — each output element is NaN
// exactly where the double-precision reference's is, ±Inf with the same sign where it is
// infinite, and a token's non-finite values never reach another token's outputs (those rows
// are bit-identical to a run without them).
//
// Contract of the activations (kernels::f32_activation / f32_gated_activation, every ISA):
// within kActivationUlps = 8 ulps of the double-precision reference rounded to f32, for
// every input below. 8 ulps is the C library's erfcf / tanhf / expf (each within a few ulps)
// plus the two or three f32 roundings around them; a vectorised implementation built on
// SLEEF (≤ 1 ulp) or a polynomial of similar accuracy fits it too. A wrong formula, a
// clamp that cuts ±1e4 or ±100 short, or flushing subnormal inputs to zero misses it by
// thousands of ulps or more. One exception, stated: where the exact result lies below
// FLT_MIN in magnitude although the input does not (silu(−100) ≈ −3.7e−42, σ(−100)), the
// f32 evaluation underflows — an absolute error up to FLT_MIN is allowed there, as in
// PyTorch's f32 kernels. Subnormal inputs are held to the 8 ulps (of the subnormal grid).
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "block/reference.hpp"
#include "block/reference_math.hpp"
#include "ffn/block.hpp"
#include "ffn/thread_pool.hpp"
#include "isa_param.hpp"
#include "kernels/kernels.hpp"

namespace ffn {
namespace {

constexpr int64_t kActivationUlps = 8;
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// Position of f on the line of floats (−0 and +0 both 0), so |a − b| counts the floats between.
int64_t ordinal(float f) {
  int32_t i;
  std::memcpy(&i, &f, sizeof i);
  return i >= 0 ? int64_t{i} : -int64_t{i & 0x7fffffff};
}

// The inputs the contract names, with both signs, plus 0 and ±1 as anchors.
std::vector<float> extreme_inputs() {
  std::vector<float> v;
  for (float a : {1e4f, 100.0f, 1.0f, FLT_MIN, 1e-40f, FLT_TRUE_MIN}) {
    v.push_back(a);
    v.push_back(-a);
  }
  v.push_back(0.0f);
  return v;
}

const Activation kActivations[] = {Activation::relu,          Activation::gelu,       Activation::gelu_tanh,
                                   Activation::swish,         Activation::sigmoid,    Activation::clamped_swish,
                                   Activation::quick_gelu,    Activation::relu2,      Activation::relu6};

class ActivationExtremes : public testing::TestWithParam<Isa> {};

// Checks out[i] = act(in) within the contract, where out holds every result for `in`.
void expect_within_contract(Activation a, float in, float out, const std::string& where) {
  const double exact = reference::activation(a, static_cast<double>(in));
  const float rounded = static_cast<float>(exact);
  ASSERT_FALSE(std::isnan(out)) << where;
  if (std::fabs(exact) < FLT_MIN && std::fabs(in) >= FLT_MIN) {
    EXPECT_LE(std::fabs(double(out) - exact), FLT_MIN) << where << " (underflowing result): got " << out;
    return;
  }
  EXPECT_LE(std::llabs(ordinal(out) - ordinal(rounded)), kActivationUlps)
      << where << ": got " << out << ", reference " << exact;
}

TEST_P(ActivationExtremes, WithinStatedUlpsOfTheDoubleReference) {
  test::ScopedIsa isa(GetParam());
  for (const Activation a : kActivations) {
    for (const float in : extreme_inputs()) {
      // 37 copies: a vector body and a tail, whatever the vector width.
      // u whose factor is 1: clamped_swish multiplies by clamp(u, −7, 7) + 1.
      const float one = a == Activation::clamped_swish ? 0.0f : 1.0f;
      std::vector<float> v(37, in), g(37, in), u(37, one);
      kernels::f32_activation(a, v.data(), 37);
      kernels::f32_gated_activation(a, g.data(), u.data(), 37);
      const std::string where = std::string(activation_name(a)) + "(" + std::to_string(in) + " = " +
                                std::to_string(static_cast<double>(in)) + ")";
      for (int i = 0; i < 37; ++i) {
        expect_within_contract(a, in, v[i], where + " element " + std::to_string(i));
        expect_within_contract(a, in, u[i], where + " gated, element " + std::to_string(i));
      }
    }
  }
}

TEST_P(ActivationExtremes, NonFiniteInputsFollowIeee) {
  // NaN stays NaN (relu, relu2 and relu6 too: a max() that returns 0 for NaN would hide a
  // poisoned value); ±Inf gives the limits of the formula, or NaN where the formula is ∞·0
  // (gelu(−∞), silu(−∞), quick_gelu(−∞)), exactly as the double-precision reference
  // computes them.
  test::ScopedIsa isa(GetParam());
  for (const Activation a : kActivations) {
    for (const float in : {kNaN, kInf, -kInf}) {
      std::vector<float> v(37, in);
      kernels::f32_activation(a, v.data(), 37);
      const double exact = reference::activation(a, static_cast<double>(in));
      for (int i = 0; i < 37; ++i) {
        const std::string where = std::string(activation_name(a)) + "(" + std::to_string(in) + ")";
        if (std::isnan(exact)) {
          EXPECT_TRUE(std::isnan(v[i])) << where << " = " << v[i] << ", reference NaN";
        } else if (double(float(exact)) != exact) {  // clamped_swish(+Inf): its value at the limit 7
          expect_within_contract(a, in, v[i], where);
        } else {
          EXPECT_EQ(double(v[i]), exact) << where;
        }
      }
    }
  }
}

FFN_INSTANTIATE_FOR_EVERY_ISA(ActivationExtremes);

// The class of a value for comparing non-finite outputs: NaN, +Inf, −Inf or finite.
int value_class(double v) { return std::isnan(v) ? 0 : std::isinf(v) ? (v > 0 ? 1 : -1) : 2; }

class NonFiniteForward : public testing::TestWithParam<Isa> {};

TEST_P(NonFiniteForward, PropagatesAsTheReferenceAndStaysInItsToken) {
  test::ScopedIsa isa(GetParam());
  ThreadPool pool(2);
  const Variant variants[] = {{true, Activation::swish},
                              {true, Activation::gelu},
                              {false, Activation::relu},
                              {false, Activation::gelu_tanh},
                              {true, Activation::sigmoid},
                              {true, Activation::clamped_swish},
                              {false, Activation::quick_gelu},
                              {true, Activation::relu2},
                              {false, Activation::relu6}};
  // 70 tokens: the packed path (from 64 tokens) shares panels between tokens.
  for (const int64_t T : {5, 70}) {
    for (const Variant v : variants) {
      const Block block = Block::random({v, 24, 72, true}, 5);
      Matrix x(T, 24), clean(T, 24), y(T, 24);
      std::mt19937 rng(9);
      std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
      for (int64_t i = 0; i < x.size(); ++i) x.data()[i] = dist(rng);
      block.forward(x.view(), clean.view(), &pool);
      // Token 1: a NaN; token 3: +Inf; token 4: −Inf; token 2: +Inf and −Inf together.
      x.row(1)[5] = kNaN;
      x.row(3)[0] = kInf;
      x.row(4)[23] = -kInf;
      x.row(2)[7] = kInf;
      x.row(2)[8] = -kInf;
      block.forward(x.view(), y.view(), &pool);
      const std::string name = variant_name(v) + " T=" + std::to_string(T) + " " + std::string(isa_name(GetParam()));
      std::vector<double> ref(24);
      for (int64_t t = 0; t < T; ++t) {
        if (t < 1 || t > 4) {
          EXPECT_EQ(std::memcmp(y.row(t), clean.row(t), 24 * sizeof(float)), 0) << name << ": token " << t;
          continue;
        }
        reference_forward_token(block, x.row(t), ref.data());
        for (int64_t j = 0; j < 24; ++j) {
          EXPECT_EQ(value_class(y.row(t)[j]), value_class(ref[j]))
              << name << ": token " << t << " output " << j << " = " << y.row(t)[j] << ", reference " << ref[j];
        }
      }
    }
  }
}

FFN_INSTANTIATE_FOR_EVERY_ISA(NonFiniteForward);

}  // namespace
}  // namespace ffn
