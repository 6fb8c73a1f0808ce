// Forward of blocks stored as bf16, f16, q8_0 and q4_0, on every ISA, against the
// double-precision reference on the same (rounded / dequantised) weights. The accuracy
// contract, as in the README:
//   bf16 / f16: the weights are exact f32 values and every product and sum is f32, so the
//     f32 bound of reference_forward_token holds unchanged — except bf16 on AVX512_BF16
//     from stored_packed_min_tokens, whose products take x and h rounded to bf16: that
//     bound plus the rounding (operand_rounding 2⁻⁸).
//   q8_0 / q4_0: that bound plus the activations' quantisation to q8_0 (few-token path): an
//     activation of a block with largest magnitude a is off by at most
//     e(a) = a/254 + 127·max(2⁻¹¹·a/127, 2⁻²⁵)   (half a step, plus the binary16 rounding
//     of the scale a/127, relative 2⁻¹¹ or absolute 2⁻²⁵ when subnormal), propagated:
//       δg_n = Σ_k |W_gate[n][k]|·e_k,  δu_n likewise (x's blocks);
//       δh = L·δg·(|u| + δu) + max(|g|, 1)·δu   (gated; L = 1.13 ≥ |act'|, |act(g)| ≤ max(|g|, 1)),
//       δh = L·δu                                (2-matrix);
//       h is quantised too: e_k from the blocks of |h| + δh;
//       δy_n = Σ_k |W_down[n][k]|·(δh_k + e_k).
//     The many-token path quantises nothing and meets the f32 bound alone, inside this one.
// A wrong nibble order or a doubled block scale falls outside it (checked below).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "block/reference_math.hpp"
#include "kernels/kernels.hpp"
#include "parallel/scratch.hpp"
#include "expect_error.hpp"
#include "ffn/backward.hpp"
#include "ffn/block.hpp"
#include "ffn/error.hpp"
#include "forward_checks.hpp"
#include "isa_param.hpp"
#include "random_data.hpp"

namespace ffn {
namespace {

using test::random_matrix;

using test::all_variants;

// Per-value error of q8_0 quantisation in a block whose largest magnitude is a.
double q8_error(double a) { return a / 254.0 + 127.0 * std::max(a / 127.0 * 0x1p-11, 0x1p-25) + a * 0x1p-20; }

// e_k for each value of v (blocks of 32).
std::vector<double> q8_errors(const std::vector<double>& v) {
  std::vector<double> e(v.size());
  for (size_t b = 0; b < v.size(); b += 32) {
    double a = 0;
    for (size_t j = b; j < b + 32; ++j) a = std::max(a, std::fabs(v[j]));
    for (size_t j = b; j < b + 32; ++j) e[j] = q8_error(a);
  }
  return e;
}

// The contract's quantisation term δy for one token of an f32 block.
std::vector<double> quantisation_bound(const Block& block, const float* x) {
  const auto& c = block.config();
  const auto& w = block.weights();
  const int64_t D = c.d_model, H = c.hidden;
  std::vector<double> xv(x, x + D);
  const auto ex = q8_errors(xv);
  auto project = [&](const Matrix& m, const Matrix& bias, int64_t n, double& value, double& err) {
    value = bias.empty() ? 0.0 : bias.data()[n];
    err = 0;
    for (int64_t k = 0; k < D; ++k) {
      value += double(m.row(n)[k]) * xv[size_t(k)];
      err += std::fabs(double(m.row(n)[k])) * ex[size_t(k)];
    }
  };
  std::vector<double> h_mag(static_cast<size_t>(H)), dh(static_cast<size_t>(H));
  for (int64_t n = 0; n < H; ++n) {
    double u, du;
    project(w.up, w.up_bias, n, u, du);
    if (c.variant.gated) {
      double g, dg;
      project(w.gate, w.gate_bias, n, g, dg);
      const double h = reference::activation(c.variant.activation, g) * u;
      dh[size_t(n)] = reference::kLipschitz * dg * (std::fabs(u) + du) + std::max(std::fabs(g), 1.0) * du;
      h_mag[size_t(n)] = std::fabs(h) + dh[size_t(n)];
    } else {
      dh[size_t(n)] = reference::kLipschitz * du;
      h_mag[size_t(n)] = std::fabs(reference::activation(c.variant.activation, u)) + dh[size_t(n)];
    }
  }
  const auto eh = q8_errors(h_mag);
  std::vector<double> dy(static_cast<size_t>(D));
  for (int64_t n = 0; n < D; ++n)
    for (int64_t k = 0; k < H; ++k)
      dy[size_t(n)] += std::fabs(double(w.down.row(n)[k])) * (dh[size_t(k)] + eh[size_t(k)]);
  return dy;
}

// Largest |y − reference| / bound over all outputs, the reference being `f32` (the block's
// rounded weights); the bound includes the quantisation term when `quantised`, and the
// activations' rounding (as reference_forward_token) when operand_rounding > 0.
double worst_ratio(const Block& f32, const Matrix& x, const Matrix& y, bool quantised, double operand_rounding = 0.0) {
  const int64_t D = f32.config().d_model;
  std::vector<double> ref(static_cast<size_t>(D)), bound(static_cast<size_t>(D));
  double worst = 0;
  for (int64_t t = 0; t < x.rows(); ++t) {
    reference_forward_token(f32, x.row(t), ref.data(), bound.data(), operand_rounding);
    const auto dq = quantised ? quantisation_bound(f32, x.row(t)) : std::vector<double>(size_t(D));
    for (int64_t i = 0; i < D; ++i) {
      const double r = std::fabs(double(y.row(t)[i]) - ref[size_t(i)]) / (bound[size_t(i)] + dq[size_t(i)]);
      worst = std::isnan(r) ? INFINITY : std::max(worst, r);
    }
  }
  return worst;
}

bool is_integer(WeightType t) { return t == WeightType::q8_0 || t == WeightType::q4_0; }

const WeightType kStored[] = {WeightType::bf16, WeightType::f16, WeightType::q8_0, WeightType::q4_0};

struct Shape {
  int64_t d, hidden, tokens;
  bool bias;
};
// Few-token (integer / widened-in-register) and many-token (panel) paths — 100 tokens take
// panels for bf16/f16, 515 for every type (stored_packed_min_tokens); D and H multiples of
// 32, one not a multiple of 64, with and without bias.
const Shape kShapes[] = {{32, 64, 1, false}, {64, 96, 3, true},    {96, 160, 7, false},
                         {64, 96, 100, true}, {32, 224, 2, true}, {32, 64, 515, false}};

class TypedForward : public testing::TestWithParam<Isa> {};

// The activations' rounding to bf16 (relative 2⁻⁸) of a bf16 block's panel path where the
// ISA dots bf16 pairs; 0 for every other path.
double bf16_operand_rounding(Isa isa, WeightType t, int64_t tokens) {
  const bool bf16_dot = kernels::kernel_table(isa).bf16_dot_panel_gemm != nullptr;
  return t == WeightType::bf16 && bf16_dot && tokens >= stored_packed_min_tokens(t) ? 0x1p-8 : 0.0;
}

TEST_P(TypedForward, EveryVariantAndTypeWithinItsContract) {
  test::ScopedIsa isa(GetParam());
  ThreadPool pool(2);
  for (const Variant& v : all_variants())
    for (const Shape& s : kShapes) {
      const Block f32 = Block::random({v, s.d, s.hidden, s.bias}, 7, &pool);
      const Matrix x = random_matrix(s.tokens, s.d, 11, 2.0f);
      for (WeightType t : kStored) {
        const Block stored = f32.stored_as(t, &pool);
        Block rounded = f32.stored_as(WeightType::f32);
        round_weights_to(rounded, t);
        Matrix y(s.tokens, s.d);
        stored.forward(x.view(), y.view(), &pool);
        EXPECT_LE(worst_ratio(rounded, x, y, is_integer(t), bf16_operand_rounding(GetParam(), t, s.tokens)), 1.0)
            << variant_name(v) << " " << weight_type_info(t).name << " d=" << s.d << " hidden=" << s.hidden
            << " T=" << s.tokens << " bias=" << s.bias;
      }
    }
}

// 16-bit rows at odd D and H on the panel path: a bf16 pair panel over an odd K ends in a
// padding weight that meets the activations' zero padding. The thread's scratch is filled
// with NaNs first, so a padding left stale turns outputs into NaN.
TEST_P(TypedForward, SixteenBitPanelsAtOddSizesIgnoreStaleScratch) {
  test::ScopedIsa isa(GetParam());
  ThreadPool one(1);  // the calling thread runs the forward: its scratch is the one poisoned
  for (const WeightType t : {WeightType::bf16, WeightType::f16}) {
    const int64_t T = stored_packed_min_tokens(t) + 3;
    const BlockConfig c{{true, Activation::swish}, 33, 171, true};
    const Block f32 = Block::random(c, 9);
    const Block stored = f32.stored_as(t);
    Block rounded = f32.stored_as(WeightType::f32);
    round_weights_to(rounded, t);
    const Matrix x = random_matrix(T, 33, 3, 2.0f);
    for (const Scratch slot : {Scratch::tile, Scratch::tile2}) {
      const MatrixView poison = scratch_matrix(slot, 1, int64_t(1) << 20);
      std::fill(poison.data, poison.data + poison.cols, std::nanf(""));
    }
    Matrix y(T, 33);
    stored.forward(x.view(), y.view(), &one);
    EXPECT_LE(worst_ratio(rounded, x, y, false, bf16_operand_rounding(GetParam(), t, T)), 1.0)
        << weight_type_info(t).name;
  }
}

TEST_P(TypedForward, BitIdenticalForAnyThreadCount) {
  test::ScopedIsa isa(GetParam());
  for (const Variant& v : {Variant{true, Activation::swish}, Variant{false, Activation::gelu}}) {
    const Block f32 = Block::random({v, 96, 224, true}, 3);
    for (WeightType t : kStored) {
      const Block stored = f32.stored_as(t);
      for (int64_t T : {3, 100, 515}) {  // every path (stored_packed_min_tokens)
        const Matrix x = random_matrix(T, 96, 5, 2.0f);
        Matrix first(T, 96);
        ThreadPool one(1);
        stored.forward(x.view(), first.view(), &one);
        for (int threads : {2, 3}) {
          ThreadPool pool(threads);
          Matrix y(T, 96);
          stored.forward(x.view(), y.view(), &pool);
          for (int64_t i = 0; i < y.size(); ++i)
            ASSERT_EQ(first.data()[i], y.data()[i])
                << weight_type_info(t).name << " T=" << T << " threads=" << threads << " element " << i;
        }
      }
    }
  }
}

FFN_INSTANTIATE_FOR_EVERY_ISA(TypedForward);

// The q8_0 / q4_0 contract is tight enough to see real mistakes: the output of a correct
// forward, judged against the reference of wrongly decoded weights, must fall outside it.
TEST(TypedForward, QuantisedBoundCatchesNibbleOrderAndScale) {
  const BlockConfig c{{true, Activation::swish}, 64, 96, false};
  const Block f32 = Block::random(c, 1);
  const Matrix x = random_matrix(3, 64, 4, 2.0f);
  Matrix y(3, 64);
  f32.stored_as(WeightType::q4_0).forward(x.view(), y.view());
  Block rounded = f32.stored_as(WeightType::f32);
  round_weights_to(rounded, WeightType::q4_0);
  EXPECT_LE(worst_ratio(rounded, x, y, true), 1.0);

  Block swapped = rounded.stored_as(WeightType::f32);  // low and high nibbles exchanged
  for (Matrix* m : {&swapped.weights().gate, &swapped.weights().up, &swapped.weights().down})
    for (int64_t i = 0; i < m->size(); i += 32)
      for (int64_t j = 0; j < 16; ++j) std::swap(m->data()[i + j], m->data()[i + j + 16]);
  EXPECT_GT(worst_ratio(swapped, x, y, true), 1.0);

  // Every other block's scale doubled. (The bound is a worst case, Σ|W|·e, while real
  // quantisation errors partly cancel: a 25% error on every other scale stays inside it
  // at this size, which is why the kernels are also held bit for bit to the scalar one.)
  Block rescaled = rounded.stored_as(WeightType::f32);
  for (Matrix* m : {&rescaled.weights().gate, &rescaled.weights().up, &rescaled.weights().down})
    for (int64_t i = 0; i < m->size(); ++i) m->data()[i] *= (i / 32) % 2 ? 2.0f : 1.0f;
  EXPECT_GT(worst_ratio(rescaled, x, y, true), 1.0);
}

TEST(TypedForward, StorageKeepsOnlyTheStoredType) {
  const Block f32 = Block::random({{true, Activation::swish}, 64, 96, true}, 1);
  const Block q4 = f32.stored_as(WeightType::q4_0);
  EXPECT_EQ(q4.weight_type(), WeightType::q4_0);
  EXPECT_EQ(q4.typed_weights().up.bytes.size(), size_t(96 * 2 * 18));
  EXPECT_EQ(q4.typed_weights().down.bytes.size(), size_t(64 * 3 * 18));
  EXPECT_EQ(q4.typed_weights().down_bias.size(), 64);
  const Block bf = f32.stored_as(WeightType::bf16);
  EXPECT_EQ(bf.typed_weights().gate.bytes.size(), size_t(96 * 64 * 2));
  test::expect_error([&] { (void)q4.weights(); }, {"stores its weights as q4_0"});
  test::expect_error([&] { (void)q4.stored_as(WeightType::q8_0); }, {"already stored as q4_0"});
  const Block odd = Block::random({{true, Activation::swish}, 40, 96, false}, 1);
  test::expect_error([&] { (void)odd.stored_as(WeightType::q8_0); }, {"40 weights"});
  EXPECT_NO_THROW((void)odd.stored_as(WeightType::f16));
}

// Training reads f32 weights: a stored block refuses it by name rather than reading nothing.
TEST(TypedForward, TrainingAStoredBlockIsAnError) {
  const Block q8 = Block::random({{true, Activation::swish}, 32, 64, false}, 1).stored_as(WeightType::q8_0);
  const Matrix x = random_matrix(2, 32, 1, 2.0f);
  Matrix y(2, 32);
  ForwardCache cache;
  test::expect_error([&] { forward_train(q8, x.view(), y.view(), cache, false); }, {"stores its weights as q8_0"});
  BlockGradients grads = zero_gradients(q8.config());
  Matrix dx(2, 32);
  test::expect_error([&] { backward(q8, x.view(), cache, y.view(), dx.view(), grads); }, {"q8_0"});
}

}  // namespace
}  // namespace ffn
