// Activation-sparse decode (SparseDecode, gate_first_forward.cpp) on every ISA, f32 and the
// 16-bit types:
//   exact mode (threshold 0) — the dense block's contract: y within the double reference's
//     rigorous f32 bound of the whole block (forward_checks.hpp), since a skipped channel is
//     one whose activation is exactly zero;
//   a calibrated threshold — y is the block restricted to the channels the token keeps:
//     checked against the reference of a block made of only those channels (its gate, up
//     rows and down columns), within that block's bound;
//   Gemma 3n's Gaussian top-k — relu(g − c) keeps g − c on the channels above the cutoff c
//     and zero elsewhere, so y is the restricted block of those channels with gate bias
//     b − c (c from the reference's own double gate values);
//   a token's y the same bits alone or beside others and for any thread count; the dense
//     branch above max_tokens; bad options refused by name; sparsity_threshold's quantile.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "block/reference_math.hpp"
#include "block_copies.hpp"
#include "core/quant.hpp"
#include "core/weight_type_table.hpp"
#include "expect_error.hpp"
#include "ffn/block.hpp"
#include "ffn/error.hpp"
#include "ffn/inference_block.hpp"
#include "forward_checks.hpp"
#include "isa_param.hpp"
#include "kernels/kernels.hpp"
#include "quantisation_bound.hpp"
#include "random_data.hpp"
#include "same_bits.hpp"

namespace ffn {
namespace {

using test::random_matrix;
using test::worst_bound_ratio;

class SparseDecodeForward : public testing::TestWithParam<Isa> {};

// The block restricted to hidden channels `kept`, with every bias present (zero where the
// block has none) and `gate_shift` subtracted from the gate's. Empty `kept`: nullopt.
std::optional<Block> restricted(const Block& b, const std::vector<int64_t>& kept, double gate_shift = 0.0) {
  if (kept.empty()) return std::nullopt;
  const BlockConfig& c = b.config();
  const int64_t D = c.d_model, n = int64_t(kept.size());
  Block r({c.variant, D, n, true});
  const auto& w = b.weights();
  auto& o = r.weights();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t j = kept[size_t(i)];
    for (int64_t k = 0; k < D; ++k) {
      if (c.variant.gated) o.gate.row(i)[k] = w.gate.row(j)[k];
      o.up.row(i)[k] = w.up.row(j)[k];
      o.down.row(k)[i] = w.down.row(k)[j];
    }
    if (c.variant.gated) o.gate_bias.data()[i] = float((c.bias ? w.gate_bias.data()[j] : 0.0) - gate_shift);
    o.up_bias.data()[i] = c.bias ? w.up_bias.data()[j] : 0.0f;
  }
  for (int64_t k = 0; k < D; ++k) o.down_bias.data()[k] = c.bias ? w.down_bias.data()[k] : 0.0f;
  return r;
}

// Token t's y against the restricted block's reference (bound ratio; 0 when y is exactly
// the down bias with no channel kept), with the quantisation term of `quantised` where given.
double restricted_ratio(const Block& b, const std::vector<int64_t>& kept, const Matrix& x, const Matrix& y, int64_t t,
                        double gate_shift = 0.0, double operand_rounding = 0.0,
                        std::optional<test::QuantBlocks> quantised = std::nullopt) {
  const int64_t D = b.config().d_model;
  Matrix xt(1, D), yt(1, D);
  for (int64_t k = 0; k < D; ++k) {
    xt.row(0)[k] = x.row(t)[k];
    yt.row(0)[k] = y.row(t)[k];
  }
  const auto r = restricted(b, kept, gate_shift);
  if (!r) {
    for (int64_t k = 0; k < D; ++k)
      if (yt.row(0)[k] != (b.config().bias ? b.weights().down_bias.data()[k] : 0.0f)) return INFINITY;
    return 0.0;
  }
  if (quantised) return test::worst_ratio(*r, xt, yt, true, operand_rounding, *quantised);
  return worst_bound_ratio(*r, xt, yt, operand_rounding);
}

// The channels token t keeps: |a| > threshold.
std::vector<int64_t> kept_channels(const Matrix& a, int64_t t, float threshold) {
  std::vector<int64_t> kept;
  for (int64_t j = 0; j < a.cols(); ++j)
    if (!(std::abs(a.row(t)[j]) <= threshold)) kept.push_back(j);
  return kept;
}

double operand_rounding_of(WeightType t) {
  const bool bf16_dot = kernels::active_kernels().panel(WeightType::bf16).activations == WeightType::bf16;
  return t == WeightType::bf16 && bf16_dot ? 0x1p-8 : 0.0;
}

struct Shape {
  int64_t d, hidden, tokens;
  bool bias;
};
const Shape kShapes[] = {{7, 13, 1, true}, {64, 96, 3, true}, {33, 171, 4, false}, {65, 130, 9, true}};
const WeightType kTypes[] = {WeightType::f32, WeightType::bf16, WeightType::f16};

// ReLU-family blocks make exact zeros; SwiGLU almost none (then nothing is skipped).
const Variant kExactVariants[] = {{true, Activation::relu},  {false, Activation::relu}, {false, Activation::relu2},
                                  {true, Activation::relu6}, {true, Activation::swish}, {true, Activation::relu2}};

TEST_P(SparseDecodeForward, ExactModeKeepsTheDenseContract) {
  test::ScopedIsa isa(GetParam());
  ThreadPool pool(2);
  for (WeightType type : kTypes)
    for (const Variant& v : kExactVariants)
      for (const Shape& s : kShapes)
        // Every token dense (after the gate), some of each, every token sparse.
        for (double max_kept : {0.0, 0.5, 1.0}) {
          Block block = Block::random({v, s.d, s.hidden, s.bias}, 3, &pool);
          round_weights_to(block, type);
          const InferenceBlock sparse(block, type, &pool,
                                      SparseDecode{.enabled = true, .max_tokens = 4, .max_kept_share = max_kept});
          const Matrix x = random_matrix(s.tokens, s.d, 21, 2.0f);
          Matrix y(s.tokens, s.d);
          sparse.forward(x.view(), y.view(), &pool);
          EXPECT_LE(worst_bound_ratio(block, x, y, operand_rounding_of(type)), 1.0)
              << weight_type_name(type) << " " << variant_name(v) << " d=" << s.d << " T=" << s.tokens
              << " max_kept_share " << max_kept;
        }
}

TEST_P(SparseDecodeForward, CalibratedThresholdRunsTheKeptChannelsOnly) {
  test::ScopedIsa isa(GetParam());
  ThreadPool pool(2);
  for (WeightType type : kTypes)
    for (const Variant& v :
         {Variant{true, Activation::swish}, Variant{false, Activation::gelu}, Variant{true, Activation::gelu_tanh}})
      for (const Shape& s : kShapes) {
        Block block = Block::random({v, s.d, s.hidden, s.bias}, 4, &pool);
        round_weights_to(block, type);
        const InferenceBlock dense(block, type, &pool);
        const Matrix x = random_matrix(s.tokens, s.d, 22, 2.0f);
        Matrix a(s.tokens, s.hidden);
        dense.hidden_activations(x.view(), a.view(), &pool);
        const float threshold = sparsity_threshold(a.view(), 0.5);
        const InferenceBlock sparse(
            block, type, &pool,
            SparseDecode{.enabled = true, .threshold = threshold, .max_tokens = 4, .max_kept_share = 1.0});
        Matrix y(s.tokens, s.d);
        sparse.forward(x.view(), y.view(), &pool);
        int64_t dropped = 0;
        for (int64_t t = 0; t < s.tokens; ++t) {
          const auto kept = kept_channels(a, t, threshold);
          dropped += s.hidden - int64_t(kept.size());
          EXPECT_LE(restricted_ratio(block, kept, x, y, t, 0.0, operand_rounding_of(type)), 1.0)
              << weight_type_name(type) << " " << variant_name(v) << " d=" << s.d << " T=" << s.tokens << " t=" << t;
        }
        // The quantile drops at least half of these very activations (ties may add more).
        EXPECT_GE(dropped * 2, s.tokens * s.hidden) << variant_name(v);
      }
}

// A threshold on |h| (down_threshold) besides the gate's: token t's y is the block of the
// channels with |a_j| > threshold and |h_j| > down_threshold. h comes from hidden_values (the
// dense panels) and the sparse path makes its own u by rows_dot, so the two may differ in the
// last bits: down_threshold is put in the middle of a wide gap between the |h| of the kept
// channels (a relative 1e-3 of the value, where the two differ by ~1e-6), so that both paths
// and this test decide alike. The dense path (more tokens than max_tokens) drops the same.
TEST_P(SparseDecodeForward, DownThresholdDropsSmallHiddenValuesFromDownToo) {
  test::ScopedIsa isa(GetParam());
  ThreadPool pool(2);
  for (WeightType type : kTypes)
    for (const Variant& v : {Variant{true, Activation::swish}, Variant{true, Activation::gelu_tanh}})
      for (const Shape& s : kShapes) {
        Block block = Block::random({v, s.d, s.hidden, s.bias}, 4, &pool);
        round_weights_to(block, type);
        const InferenceBlock dense(block, type, &pool);
        const Matrix x = random_matrix(s.tokens, s.d, 22, 2.0f);
        Matrix a(s.tokens, s.hidden), h(s.tokens, s.hidden);
        dense.hidden_activations(x.view(), a.view(), &pool);
        dense.hidden_values(x.view(), h.view(), &pool);
        const float threshold = sparsity_threshold(a.view(), 0.3);
        // The widest gap among the kept channels' |h| between their 40th and 80th percentiles.
        std::vector<float> m;
        for (int64_t i = 0; i < h.size(); ++i)
          if (std::abs(a.data()[i]) > threshold) m.push_back(std::abs(h.data()[i]));
        std::sort(m.begin(), m.end());
        size_t best = m.size() * 2 / 5;
        for (size_t i = best; i + 1 < m.size() * 4 / 5; ++i)
          if ((m[i + 1] - m[i]) / m[i + 1] > (m[best + 1] - m[best]) / m[best + 1]) best = i;
        if (m.size() < 5 || (m[best + 1] - m[best]) < 1e-3f * m[best + 1]) continue;  // no clean gap: skip shape
        const float down_threshold = (m[best] + m[best + 1]) / 2;
        for (const int64_t max_tokens : {int64_t(4), int64_t(1)}) {  // sparse where T ≤ 4; dense above
          const InferenceBlock sparse(block, type, &pool,
                                      SparseDecode{.enabled = true,
                                                   .threshold = threshold,
                                                   .max_tokens = max_tokens,
                                                   .max_kept_share = 1.0,
                                                   .down_threshold = down_threshold});
          Matrix y(s.tokens, s.d);
          sparse.forward(x.view(), y.view(), &pool);
          int64_t dropped_by_h = 0;
          for (int64_t t = 0; t < s.tokens; ++t) {
            std::vector<int64_t> kept;
            for (int64_t j = 0; j < s.hidden; ++j) {
              if (!(std::abs(a.row(t)[j]) > threshold)) continue;
              if (std::abs(h.row(t)[j]) > down_threshold)
                kept.push_back(j);
              else
                ++dropped_by_h;
            }
            EXPECT_LE(restricted_ratio(block, kept, x, y, t, 0.0, operand_rounding_of(type)), 1.0)
                << weight_type_name(type) << " " << variant_name(v) << " d=" << s.d << " T=" << s.tokens << " t=" << t
                << " max_tokens " << max_tokens;
          }
          EXPECT_GT(dropped_by_h, 0);  // the second threshold dropped channels the gate kept
        }
      }
}

// hidden_values is the input of down: act(g + b_g)·(u + b_u) (2-matrix: act(u + b_u)), against
// the double reference within 1e-5 of the terms' magnitudes (f32 sums of ≤ 65 products),
// for a fused block and a gate-first one (sparse decode on: gate and up in panels of their own).
TEST_P(SparseDecodeForward, HiddenValuesAreDownsInput) {
  test::ScopedIsa isa(GetParam());
  ThreadPool pool(2);
  for (const Variant& v : {Variant{true, Activation::swish}, Variant{false, Activation::gelu}})
    for (const bool gate_first : {false, true}) {
      const Shape s{65, 130, 9, true};
      const Block block = Block::random({v, s.d, s.hidden, s.bias}, 6, &pool);
      const InferenceBlock b(block, WeightType::f32, &pool, SparseDecode{.enabled = gate_first});
      const Matrix x = random_matrix(s.tokens, s.d, 24, 2.0f);
      Matrix h(s.tokens, s.hidden);
      b.hidden_values(x.view(), h.view(), &pool);
      const auto& w = block.weights();
      for (int64_t t = 0; t < s.tokens; ++t)
        for (int64_t j = 0; j < s.hidden; ++j) {
          double u = w.up_bias.data()[j], g = v.gated ? w.gate_bias.data()[j] : 0.0, mass_u = 1, mass_g = 1;
          for (int64_t k = 0; k < s.d; ++k) {
            u += double(x.row(t)[k]) * w.up.row(j)[k];
            mass_u += std::abs(double(x.row(t)[k]) * w.up.row(j)[k]);
            if (v.gated) {
              g += double(x.row(t)[k]) * w.gate.row(j)[k];
              mass_g += std::abs(double(x.row(t)[k]) * w.gate.row(j)[k]);
            }
          }
          const double ref =
              v.gated ? reference::activation(v.activation, g) * u : reference::activation(v.activation, u);
          const double tol = 1e-5 * (v.gated ? mass_g * mass_u : mass_u);
          EXPECT_NEAR(h.row(t)[j], ref, tol) << variant_name(v) << " gate-first " << gate_first << " t=" << t;
        }
    }
}

TEST_P(SparseDecodeForward, GaussianTopKIsTheBlockOfTheChannelsAboveTheCutoff) {
  test::ScopedIsa isa(GetParam());
  ThreadPool pool(2);
  for (bool sparse_on : {false, true})
    for (const Shape& s : {Shape{64, 256, 3, false}, Shape{33, 171, 9, true}}) {
      BlockConfig c{{true, Activation::gelu_tanh}, s.d, s.hidden, s.bias, 0.0};
      c.gate_sparsity = 0.9;
      Block block = Block::random(c, 5, &pool);
      const InferenceBlock b(block, WeightType::f32, &pool, SparseDecode{.enabled = sparse_on, .max_tokens = 4});
      // About 10 % of the channels kept: the sparse path when it is on.
      const Matrix x = random_matrix(s.tokens, s.d, 23, 2.0f);
      Matrix y(s.tokens, s.d);
      b.forward(x.view(), y.view(), &pool);
      const auto& w = block.weights();
      const double z = normal_quantile(0.9);
      for (int64_t t = 0; t < s.tokens; ++t) {
        std::vector<double> g(size_t(s.hidden));
        double mean = 0, var = 0;
        for (int64_t j = 0; j < s.hidden; ++j) {
          double v = s.bias ? w.gate_bias.data()[j] : 0.0;
          for (int64_t k = 0; k < s.d; ++k) v += double(w.gate.row(j)[k]) * x.row(t)[k];
          g[size_t(j)] = v;
          mean += v / double(s.hidden);
        }
        for (double v : g) var += (v - mean) * (v - mean) / double(s.hidden);
        const double cutoff = mean + std::sqrt(var) * z;
        std::vector<int64_t> kept;
        for (int64_t j = 0; j < s.hidden; ++j)
          if (g[size_t(j)] > cutoff) kept.push_back(j);
        EXPECT_LE(restricted_ratio(block, kept, x, y, t, cutoff), 1.0) << "sparse " << sparse_on << " t=" << t;
        EXPECT_LT(double(kept.size()), 0.3 * double(s.hidden));  // about 10 % of Gaussian gate values
      }
    }
}

TEST_P(SparseDecodeForward, TokenBitsAreTheSameAloneInABatchAndOnAnyThreads) {
  test::ScopedIsa isa(GetParam());
  ThreadPool one(1), two(2);
  for (WeightType type : kTypes)
    for (float threshold : {0.0f, 0.05f}) {
      const Block block = Block::random({{true, Activation::relu}, 64, 200, true}, 6, &two);
      const Matrix x = random_matrix(4, 64, 24, 2.0f);
      // A max_kept_share between the tokens' own kept shares: two tokens take the sparse
      // path, two the dense.
      Matrix a(4, 200);
      InferenceBlock(block, type, &two).hidden_activations(x.view(), a.view(), &two);
      std::vector<double> shares;
      for (int64_t t = 0; t < 4; ++t) shares.push_back(double(kept_channels(a, t, threshold).size()) / 200);
      std::sort(shares.begin(), shares.end());
      ASSERT_LT(shares[1], shares[2]) << "the tokens' kept shares must differ to split them";
      const InferenceBlock b(block, type, &two,
                             SparseDecode{.enabled = true,
                                          .threshold = threshold,
                                          .max_tokens = 4,
                                          .max_kept_share = 0.5 * (shares[1] + shares[2])});
      Matrix batch(4, 64), batch1(4, 64);
      b.forward(x.view(), batch.view(), &two);
      b.forward(x.view(), batch1.view(), &one);
      EXPECT_TRUE(test::same_bits(batch, batch1)) << weight_type_name(type);
      for (int64_t t = 0; t < 4; ++t) {
        Matrix xt(1, 64), yt(1, 64), expected(1, 64);
        for (int64_t k = 0; k < 64; ++k) {
          xt.row(0)[k] = x.row(t)[k];
          expected.row(0)[k] = batch.row(t)[k];
        }
        b.forward(xt.view(), yt.view(), &two);
        EXPECT_TRUE(test::same_bits(yt, expected)) << weight_type_name(type) << " token " << t;
      }
    }
}

// A block type's up and down are held as q8_0 copies along D (sparse_rows_type; f32, f16
// and bf16 as they are): the value of each, requantised by ggml's q8_0 quantiser from the
// file's values, block by block of 32 along D — a row of up, a column of down.
Block q8_copies(const Block& rounded, const MatrixTypes& types) {
  Block out = test::copy_of(rounded);
  const auto& w = rounded.weights();
  auto& o = out.weights();
  const auto& q8 = weight_type_traits(WeightType::q8_0);
  std::byte block[34];
  float values[32];
  const int64_t D = rounded.config().d_model, H = rounded.config().hidden;
  for (int64_t j = 0; j < H; ++j)
    for (int64_t d0 = 0; d0 < D; d0 += 32) {
      if (rounded.config().variant.gated && sparse_rows_type(types.up) != types.up) {
        q8.from_f32(w.up.row(j) + d0, block, 32);
        q8.to_f32(block, o.up.row(j) + d0, 32);
      }
      if (weight_type_info(types.down).block_elements == 1) continue;  // q8_0's blocks ran along H: requantised
      for (int64_t i = 0; i < 32; ++i) values[i] = w.down.row(d0 + i)[j];
      q8.from_f32(values, block, 32);
      q8.to_f32(block, values, 32);
      for (int64_t i = 0; i < 32; ++i) o.down.row(d0 + i)[j] = values[i];
    }
  return out;
}

// Block types: the sparse path reads q8_0 copies of up and down, so a token's y is the block
// of its kept channels with those copies' values, within that block's f32 contract (the gate
// f32 here, so that no quantised activation enters: the bound is then the tight one of f32
// arithmetic, which a copy's wrong block, scale or transpose misses by orders of magnitude);
// the copies lie within half a q8_0 step of the file's values; and a token's bits are the
// same alone, in a batch and on one or two threads.
TEST_P(SparseDecodeForward, BlockTypesRunOnTheirQ8CopiesWithinTheirContract) {
  test::ScopedIsa isa(GetParam());
  ThreadPool one(1), two(2);
  const WeightType f32 = WeightType::f32;
  const MatrixTypes mixes[] = {{f32, WeightType::q8_0, WeightType::q8_0},
                               {f32, WeightType::q4_K, WeightType::q6_K},
                               {f32, WeightType::iq4_xs, WeightType::q4_0},
                               {f32, WeightType::f16, WeightType::q5_K},
                               {f32, WeightType::q4_0, WeightType::bf16}};
  for (const MatrixTypes& types : mixes)
    for (const Variant& v : {Variant{true, Activation::relu}, Variant{true, Activation::swish}}) {
      const int64_t D = 256, H = 512, T = 3;
      const Block block = Block::random({v, D, H, true}, 11, &two);
      const Block rounded = test::rounded_copy(block, types);
      const Block copies = q8_copies(rounded, types);
      const InferenceBlock dense(block, types, &two);
      const Matrix x = random_matrix(T, D, 26, 2.0f);
      Matrix a(T, H);
      dense.hidden_activations(x.view(), a.view(), &two);
      // SwiGLU: a third of the channels kept; ReGLU: its exact zeros, every token sparse.
      const float threshold = v.activation == Activation::swish ? sparsity_threshold(a.view(), 0.67) : 0.0f;
      const InferenceBlock sparse(
          block, types, &two,
          SparseDecode{.enabled = true, .threshold = threshold, .max_tokens = 4, .max_kept_share = 1.0});
      Matrix y(T, D), y1(T, D);
      sparse.forward(x.view(), y.view(), &two);
      const std::string what = matrix_types_name(types, true) + " " + variant_name(v);
      for (int64_t t = 0; t < T; ++t) {
        const auto kept = kept_channels(a, t, threshold);
        ASSERT_LT(double(kept.size()), 0.53 * double(H)) << what << ": every token must take the sparse path";
        // Up's q8_0 rows take x in q8_0 (rows_dot_q8_0): the f32 bound plus that quantisation's
        // term (the dense q8_0 contract's, test_inference_types.cpp), the f32 gate and h exact.
        std::optional<test::QuantBlocks> up_x;
        if (sparse_rows_type(types.up) == WeightType::q8_0) up_x = test::QuantBlocks{.x = 32, .h = 0, .gate_x = false};
        EXPECT_LE(restricted_ratio(copies, kept, x, y, t, 0.0, 0.0, up_x), 1.0) << what << " t=" << t;
        Matrix xt(1, D), yt(1, D);
        std::copy(x.row(t), x.row(t) + D, xt.row(0));
        sparse.forward(xt.view(), yt.view(), &one);
        for (int64_t k = 0; k < D; ++k) ASSERT_EQ(yt.row(0)[k], y.row(t)[k]) << what << " token " << t << " alone";
      }
      sparse.forward(x.view(), y1.view(), &one);
      EXPECT_TRUE(test::same_bits(y, y1)) << what << " on one thread";
      // Every copy within half a step of the file's value: the step d = |w|max / 127 of its 32
      // values, stored as f16 (relative error ≤ 2⁻¹¹, times |q| ≤ 127): d·(1/2 + 127·2⁻¹¹).
      struct Pair {
        const Matrix *copy, *file;
        bool rows_of_d;  // down: D rows, a channel's values down a column
      };
      for (const Pair& pair : {Pair{&copies.weights().up, &rounded.weights().up, false},
                               Pair{&copies.weights().down, &rounded.weights().down, true}})
        for (int64_t j = 0; j < H; ++j)
          for (int64_t d0 = 0; d0 < D; d0 += 32) {
            auto at = [&](const Matrix* m, int64_t i) {
              return pair.rows_of_d ? m->row(d0 + i)[j] : m->row(j)[d0 + i];
            };
            const Matrix *copy = pair.copy, *file = pair.file;
            float most = 0;
            for (int64_t i = 0; i < 32; ++i) most = std::max(most, std::abs(at(file, i)));
            for (int64_t i = 0; i < 32; ++i)
              ASSERT_LE(std::abs(at(copy, i) - at(file, i)), most / 127 * (0.5f + 127 * 0x1p-11f) * 1.0001f)
                  << what << " channel " << j;
          }
    }
}

// hidden_activations of a fused block (gate and up in one panel) is the same as of the
// gate-first layout: the same kernel chain per gate value.
TEST_P(SparseDecodeForward, HiddenActivationsAreTheSameFusedOrGateFirst) {
  test::ScopedIsa isa(GetParam());
  ThreadPool pool(2);
  const Block block = Block::random({{true, Activation::swish}, 40, 100, true}, 8, &pool);
  const InferenceBlock fused(block, WeightType::f32, &pool),
      gate_first(block, WeightType::f32, &pool, {.enabled = true});
  const Matrix x = random_matrix(5, 40, 25, 2.0f);
  Matrix a(5, 100), b(5, 100);
  fused.hidden_activations(x.view(), a.view(), &pool);
  gate_first.hidden_activations(x.view(), b.view(), &pool);
  EXPECT_TRUE(test::same_bits(a, b));
}

FFN_INSTANTIATE_FOR_EVERY_ISA(SparseDecodeForward);

TEST(SparseDecode, BadOptionsAreRefusedByName) {
  const Block block = Block::random({{true, Activation::relu}, 64, 96, false}, 9);
  // A block type's copies are q8_0 rows of d_model values: whole blocks of 32 or refused.
  const Block narrow = Block::random({{true, Activation::relu}, 48, 64, false}, 9);
  MatrixTypes mixed = MatrixTypes::all(WeightType::bf16);
  mixed.down = WeightType::q8_0;
  test::expect_error([&] { InferenceBlock(narrow, mixed, nullptr, {.enabled = true}); },
                     {"sparse decode", "down (q8_0)", "d_model = 48", "blocks of 32"});
  EXPECT_NO_THROW(InferenceBlock(narrow, mixed));  // dense: its rows of 64 are whole blocks
  const InferenceBlock q8(block, mixed, nullptr, {.enabled = true});
  EXPECT_EQ(q8.sparse_layout_bytes(), 96 * 64 * 2 + 96 * 2 * 34);  // bf16 up rows, q8_0 down rows
  EXPECT_EQ(sparse_rows_type(WeightType::q4_K), WeightType::q8_0);
  EXPECT_EQ(sparse_rows_type(WeightType::f16), WeightType::f16);
  mixed.down = WeightType::bf16;
  mixed.gate = WeightType::q8_0;  // the gate runs through its panels: any type
  EXPECT_NO_THROW(InferenceBlock(block, mixed, nullptr, {.enabled = true}));
  // A 2-matrix block reads only down by rows: up may be of any type, and is not held again.
  const Block relu = Block::random({{false, Activation::relu}, 64, 96, false}, 10);
  MatrixTypes q8_up = MatrixTypes::all(WeightType::f32);
  q8_up.up = WeightType::q8_0;
  const InferenceBlock two_matrix(relu, q8_up, nullptr, {.enabled = true});
  EXPECT_EQ(two_matrix.sparse_layout_bytes(), 96 * 64 * 4);
  EXPECT_TRUE(auto_sparse_decode(relu.config(), q8_up).enabled);
  EXPECT_FALSE(auto_sparse_decode(block.config(), MatrixTypes::all(WeightType::q8_0)).enabled);
  test::expect_error([&] { InferenceBlock(block, WeightType::f32, nullptr, {.enabled = true, .threshold = -1}); },
                     {"threshold", "≥ 0"});
  test::expect_error([&] { InferenceBlock(block, WeightType::f32, nullptr, {.enabled = true, .threshold = NAN}); },
                     {"threshold"});
  test::expect_error([&] { InferenceBlock(block, WeightType::f32, nullptr, {.enabled = true, .max_tokens = 0}); },
                     {"max_tokens"});
  test::expect_error([&] { InferenceBlock(block, WeightType::f32, nullptr, {.enabled = true, .down_threshold = -1}); },
                     {"down_threshold", "≥ 0"});
  test::expect_error(
      [&] { InferenceBlock(block, WeightType::f32, nullptr, {.enabled = true, .down_threshold = INFINITY}); },
      {"down_threshold"});
  test::expect_error([&] { InferenceBlock(relu, WeightType::f32, nullptr, {.enabled = true, .down_threshold = 0.1f}); },
                     {"down_threshold", "2-matrix"});
  test::expect_error([&] { InferenceBlock(block, WeightType::f32, nullptr, {.enabled = true, .max_kept_share = 1.5}); },
                     {"max_kept_share"});
  for (double share : {0.0, 1.5, double(NAN)})
    test::expect_error(
        [&] { InferenceBlock(block, WeightType::f32, nullptr, {.enabled = true, .down_kept_share = share}); },
        {"down_kept_share", "(0, 1]"});
  const InferenceBlock b(block, WeightType::f32);
  Matrix x(2, 64), a(2, 95);
  test::expect_error([&] { b.hidden_activations(x.view(), a.view()); }, {"[2, 95]", "[2, 96]"});
  test::expect_error([&] { b.hidden_values(x.view(), a.view()); }, {"hidden_values", "[2, 95]", "[2, 96]"});
}

// With a down threshold, SparseDecode::down_kept_share counts a kept channel's down row at
// that share when a token's bytes are judged against max_kept_share: a token whose gate
// keeps every channel takes the sparse path when the down rows it is expected to skip bring
// it under. Which path ran shows in y's bits: those of the block that always takes the
// sparse path (max_kept_share 1), or those of the one that never does (0).
TEST(SparseDecode, DownKeptShareCountsDownsRowsAtIt) {
  ThreadPool pool(2);
  const Block block = Block::random({{true, Activation::swish}, 64, 256, false}, 8, &pool);
  const Matrix x = random_matrix(1, 64, 30, 2.0f);
  Matrix h(1, 256);
  InferenceBlock(block, WeightType::f32, &pool).hidden_values(x.view(), h.view(), &pool);
  const float down_threshold = sparsity_threshold(h.view(), 0.8);  // down reads about a fifth
  // Threshold 0: silu makes no exact zero, so the gate keeps all 256 channels.
  auto y_of = [&](double max_kept_share, double down_kept_share) {
    const InferenceBlock b(block, WeightType::f32, &pool,
                           SparseDecode{.enabled = true,
                                        .max_kept_share = max_kept_share,
                                        .down_threshold = down_threshold,
                                        .down_kept_share = down_kept_share});
    Matrix y(1, 64);
    b.forward(x.view(), y.view(), &pool);
    return y;
  };
  const Matrix sparse = y_of(1.0, 1.0), dense = y_of(0.0, 1.0);
  ASSERT_FALSE(test::same_bits(sparse, dense)) << "the two paths must differ in some bit to tell them apart";
  // f32 rows are as many bytes as stored: a token keeping every channel reads (1 + share) / 2
  // of up's and down's bytes — 1 at a share of 1, 0.625 at a quarter.
  EXPECT_TRUE(test::same_bits(y_of(0.7, 1.0), dense));
  EXPECT_TRUE(test::same_bits(y_of(0.7, 0.25), sparse));
  EXPECT_TRUE(test::same_bits(y_of(0.6, 0.25), dense));
  // Without a down threshold the share changes nothing: down reads what the gate keeps.
  const InferenceBlock no_down(block, WeightType::f32, &pool,
                               SparseDecode{.enabled = true, .max_kept_share = 0.7, .down_kept_share = 0.25});
  const InferenceBlock no_down_dense(block, WeightType::f32, &pool,
                                     SparseDecode{.enabled = true, .max_kept_share = 0.0});
  Matrix y1(1, 64), y2(1, 64);
  no_down.forward(x.view(), y1.view(), &pool);
  no_down_dense.forward(x.view(), y2.view(), &pool);
  EXPECT_TRUE(test::same_bits(y1, y2));
}

// down_kept_share counts, of the pairs the gate keeps (|a| > threshold, NaN kept), those whose
// |h| > down_threshold (NaN kept); 1 when there are none; a and h must be of one shape.
TEST(SparseDecode, DownKeptShareIsTheShareOfTheGatesKeptPairsDownKeeps) {
  Matrix a(2, 4), h(2, 4);
  const float av[8] = {0.5f, -2.0f, 0.1f, NAN, 3.0f, 0.2f, -1.0f, 0.05f};
  const float hv[8] = {0.3f, 0.01f, 9.0f, 0.02f, -0.4f, 5.0f, NAN, 0.0f};
  std::copy(av, av + 8, a.data());
  std::copy(hv, hv + 8, h.data());
  // The gate keeps |a| > 0.3: 0.5, -2, NaN, 3, -1 (five pairs); of them |h| > 0.25: 0.3, -0.4, NaN.
  EXPECT_DOUBLE_EQ(down_kept_share(a.view(), h.view(), 0.3f, 0.25f), 3.0 / 5.0);
  EXPECT_DOUBLE_EQ(down_kept_share(a.view(), h.view(), 10.0f, 0.25f), 1.0);        // the gate keeps none
  EXPECT_DOUBLE_EQ(down_kept_share(a.view(), h.view(), 0.3f, 100.0f), 1.0 / 5.0);  // only h's NaN is kept
  // |a| > 1.5: -2, NaN, 3, whose h down keeps none of by 100.
  EXPECT_DOUBLE_EQ(down_kept_share(a.view(), h.view(), 1.5f, 100.0f), 1.0);
  Matrix h3(2, 3);
  test::expect_error([&] { down_kept_share(a.view(), h3.view(), 0.3f, 0.25f); }, {"down_kept_share", "[2, 3]"});
}

TEST(SparseDecode, ThresholdIsTheQuantileOfTheMagnitudes) {
  Matrix a(1, 4);
  const float v[] = {0.0f, -1.0f, 2.0f, 3.0f};
  for (int i = 0; i < 4; ++i) a.data()[i] = v[i];
  EXPECT_EQ(sparsity_threshold(a.view(), 0.0), 0.0f);
  EXPECT_EQ(sparsity_threshold(a.view(), 0.25), 0.0f);
  EXPECT_EQ(sparsity_threshold(a.view(), 0.5), 1.0f);
  EXPECT_EQ(sparsity_threshold(a.view(), 0.6), 2.0f);  // ⌈2.4⌉ = 3rd smallest
  EXPECT_EQ(sparsity_threshold(a.view(), 0.75), 2.0f);
  test::expect_error([&] { sparsity_threshold(a.view(), 1.0); }, {"sparsity", "[0, 1)"});
  test::expect_error([&] { sparsity_threshold(a.view(), -0.1); }, {"sparsity"});
  a.data()[2] = NAN;
  test::expect_error([&] { sparsity_threshold(a.view(), 0.5); }, {"NaN", "[0, 2]"});
  EXPECT_NEAR(normal_quantile(0.95), 1.6448536269514722, 1e-12);
  EXPECT_NEAR(normal_quantile(0.025), -1.959963984540054, 1e-12);
  EXPECT_EQ(normal_quantile(0.5), 0.0);
}

}  // namespace
}  // namespace ffn
