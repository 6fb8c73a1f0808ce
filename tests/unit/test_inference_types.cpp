// InferenceBlock in every weight type and in mixes of types, on every ISA, against the
// double-precision reference on the same (rounded / dequantised) weights. The accuracy
// contract, as in the README:
//   f32 / bf16 / f16: the weights are exact f32 values and every product and sum is f32, so
//     the f32 bound of reference_forward_token holds unchanged — except bf16 on
//     AVX512_BF16, whose products take x and h rounded to bf16: that bound plus the
//     rounding (operand_rounding 2⁻⁸).
//   q8_0 / q4_0 (and the qsub types of 32-value blocks, Q4_1 … IQ4_NL, MXFP4, which take q8_0
//   activations too): that bound plus the activations' quantisation to q8_0 (at every T): an
//     activation of a block with largest magnitude a is off by at most
//     e(a) = a/254 + 127·max(2⁻¹¹·a/127, 2⁻²⁵)   (half a step, plus the binary16 rounding
//     of the scale a/127, relative 2⁻¹¹ or absolute 2⁻²⁵ when subnormal), propagated:
//       δg_n = Σ_k |W_gate[n][k]|·e_k,  δu_n likewise (x's blocks);
//       δh = L·δg·(|u| + δu) + max(|g|, 1)·δu   (gated; L = 1.13 ≥ |act'|, |act(g)| ≤ max(|g|, 1));
//            swiglu_oai: |v| for |u|, v = clamp(u, −7, 7) + 1 (1-Lipschitz, so δv ≤ δu),
//       δh = L·δu                                (2-matrix);
//            relu2, whose slope is unbounded: L = 2·(|g| + δg) (|u| + δu, 2-matrix) and g²
//            for max(|g|, 1) (reference::lipschitz and reference::magnitude);
//       h is quantised too: e_k from the blocks of |h| + δh;
//       δy_n = Σ_k |W_down[n][k]|·(δh_k + e_k).
//   q6_K … q2_K, iq4_xs, tq1_0, tq2_0: the same with the activations quantised to q8_K (blocks of 256, an f32
//     scale): e(a) = a/254 + a·2⁻²⁰ (half a step, and the f32 scale's rounding with margin),
//     a the largest magnitude of the value's block of 256.
//   A mix of types meets the bound of its widest terms: the quantisation term where any
//     matrix is an integer type (each stage with the block of its activations' format) and
//     the bf16 rounding where any is bf16 (each bounds the stages that do not quantise or
//     round, too).
// A wrong nibble order or a doubled block scale falls outside it (checked below).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "block/reference.hpp"
#include "block/reference_math.hpp"
#include "block_copies.hpp"
#include "expect_error.hpp"
#include "ffn/block.hpp"
#include "ffn/error.hpp"
#include "ffn/inference_block.hpp"
#include "forward_checks.hpp"
#include "isa_param.hpp"
#include "kernels/kernels.hpp"
#include "kernels/panel_family.hpp"
#include "parallel/scratch.hpp"
#include "quantisation_bound.hpp"
#include "random_data.hpp"

namespace ffn {
namespace {

using test::random_matrix;

using test::all_variants;

using test::QuantBlocks;
using test::worst_ratio;

bool is_kquant(WeightType t) { return kernels::panel_family(t) == kernels::PanelFamily::qsub; }
bool is_integer(WeightType t) { return kernels::panel_family(t) == kernels::PanelFamily::qblock || is_kquant(t); }
bool any_integer(const MatrixTypes& t) { return is_integer(t.gate) || is_integer(t.up) || is_integer(t.down); }
// The activation blocks of a stage: 256 where its matrix is a qsub type of 256-value blocks
// (q8_K), else 32 (q8_0).
size_t activation_block(WeightType t) { return is_kquant(t) ? size_t(kernels::q_format(t).block) : 32u; }
QuantBlocks quant_blocks(const MatrixTypes& t) {
  return {std::max(activation_block(t.gate), activation_block(t.up)), activation_block(t.down)};
}

// Every weight type of the list whose rows come in blocks of at most 32 values (the element
// types and the 32-value block types); the 256-value ones below need D and H of whole blocks.
std::vector<WeightType> weight_types_with_blocks(bool of_256) {
  std::vector<WeightType> v;
  for (const WeightTypeInfo& t : weight_types())
    if ((t.block_elements == 256) == of_256) v.push_back(t.type);
  return v;
}
const std::vector<WeightType> kTypes = weight_types_with_blocks(false);
// Mixes as quantisation mixes store them (gate and up in one type, down in another: one
// panel holds gate and up) and with gate and up in different types (their own panels).
const MatrixTypes kMixes[] = {{WeightType::q4_0, WeightType::q4_0, WeightType::q8_0},
                              {WeightType::q8_0, WeightType::q8_0, WeightType::bf16},
                              {WeightType::q8_0, WeightType::f16, WeightType::q4_0},
                              {WeightType::bf16, WeightType::f32, WeightType::f16},
                              {WeightType::mxfp4, WeightType::mxfp4, WeightType::iq4_nl}};

struct Shape {
  int64_t d, hidden, tokens;
  bool bias;
};
// T below, at and above a strip of tokens and the kernels' token block (256); D and H
// multiples of 32, one not a multiple of 64, with and without bias.
const Shape kShapes[] = {{32, 64, 1, false},  {64, 96, 3, true},  {96, 160, 7, false},
                         {64, 96, 100, true}, {32, 224, 2, true}, {32, 64, 515, false}};

class InferenceTypes : public testing::TestWithParam<Isa> {};

// The activations' rounding to bf16 (relative 2⁻⁸) where a matrix is bf16 and the ISA dots
// bf16 pairs; 0 otherwise.
double bf16_operand_rounding(Isa isa, const MatrixTypes& t) {
  const bool bf16_dot = kernels::kernel_table(isa).panel(WeightType::bf16).activations == WeightType::bf16;
  const bool any_bf16 = t.gate == WeightType::bf16 || t.up == WeightType::bf16 || t.down == WeightType::bf16;
  return bf16_dot && any_bf16 ? 0x1p-8 : 0.0;
}

// y of `types` against the reference of the rounded weights, within the contract.
void expect_within_contract(const Block& f32, const MatrixTypes& types, const Matrix& x, ThreadPool& pool,
                            const std::string& what) {
  const InferenceBlock fast(f32, types, &pool);
  const Block rounded = test::rounded_copy(f32, types);
  Matrix y(x.rows(), x.cols());
  fast.forward(x.view(), y.view(), &pool);
  EXPECT_LE(
      worst_ratio(rounded, x, y, any_integer(types), bf16_operand_rounding(active_isa(), types), quant_blocks(types)),
      1.0)
      << what << " " << matrix_types_name(types, f32.config().variant.gated);
}

TEST_P(InferenceTypes, EveryVariantAndTypeWithinItsContract) {
  test::ScopedIsa isa(GetParam());
  ThreadPool pool(2);
  for (const Variant& v : all_variants()) {
    // quick_gelu and relu6 take the activation loops every type shares (test_forward.cpp and
    // test_activation.cpp check them); relu2 stays, for its own terms in the quantisation bound.
    if (v.activation == Activation::quick_gelu || v.activation == Activation::relu6) continue;
    for (const Shape& s : kShapes) {
      const Block f32 = Block::random({v, s.d, s.hidden, s.bias}, 7, &pool);
      const Matrix x = random_matrix(s.tokens, s.d, 11, 2.0f);
      const std::string what = variant_name(v) + " d=" + std::to_string(s.d) + " hidden=" + std::to_string(s.hidden) +
                               " T=" + std::to_string(s.tokens) + " bias=" + std::to_string(s.bias);
      for (WeightType t : kTypes) expect_within_contract(f32, MatrixTypes::all(t), x, pool, what);
      for (const MatrixTypes& m : kMixes) expect_within_contract(f32, m, x, pool, what);
    }
  }
}

// swiglu_oai with its clamps engaged (gates above 7, ups beyond ±7), every 32-block type.
TEST_P(InferenceTypes, ClampedSwishWithItsClampsEngagedWithinItsContract) {
  test::ScopedIsa isa(GetParam());
  ThreadPool pool(2);
  for (const Shape& s : {Shape{64, 96, 7, true}, Shape{32, 64, 100, false}}) {
    const Block f32 = test::clamping_block(s.d, s.hidden, s.bias, 5);
    const Matrix x = random_matrix(s.tokens, s.d, 11, 2.0f);
    const test::ClampShares shares = test::clamp_shares(f32, x);
    EXPECT_GT(shares.gate, 0.05);
    EXPECT_GT(shares.up, 0.1);
    const std::string what = "swiglu_oai d=" + std::to_string(s.d) + " T=" + std::to_string(s.tokens);
    for (WeightType t : kTypes) expect_within_contract(f32, MatrixTypes::all(t), x, pool, what);
    for (const MatrixTypes& m : kMixes) expect_within_contract(f32, m, x, pool, what);
  }
}

// The types of 256-value blocks (the K-quants, IQ4_XS, the ternary types) need rows of whole
// blocks (D and H multiples of 256). Each type alone,
// llama.cpp's mixes (Q4_K_M / Q5_K_M: down in Q6_K on some layers; Q3_K_M, Q2_K) and mixes
// with the 32-block and 16-bit types, whose stages take different activation formats.
const std::vector<WeightType> kKTypes = weight_types_with_blocks(true);
const MatrixTypes kKMixes[] = {{WeightType::q4_K, WeightType::q4_K, WeightType::q6_K},
                               {WeightType::q5_K, WeightType::q5_K, WeightType::q6_K},
                               {WeightType::q3_K, WeightType::q3_K, WeightType::q5_K},
                               {WeightType::q2_K, WeightType::q2_K, WeightType::q3_K},
                               {WeightType::q4_K, WeightType::q4_K, WeightType::q8_0},
                               {WeightType::q8_0, WeightType::q4_K, WeightType::bf16},
                               {WeightType::f16, WeightType::q6_K, WeightType::q4_0},
                               {WeightType::iq4_xs, WeightType::iq4_xs, WeightType::q6_K},
                               {WeightType::iq4_xs, WeightType::iq4_xs, WeightType::mxfp4}};
const Shape kKShapes[] = {{256, 256, 1, false}, {256, 512, 5, true}, {512, 256, 20, false}};

TEST_P(InferenceTypes, KQuantTypesAndMixesWithinTheirContract) {
  test::ScopedIsa isa(GetParam());
  ThreadPool pool(2);
  // A gated and a 2-matrix variant: the stages' activation formats are what the types change.
  for (const Variant& v : {Variant{true, Activation::swish}, Variant{false, Activation::gelu}})
    for (const Shape& s : kKShapes) {
      const Block f32 = Block::random({v, s.d, s.hidden, s.bias}, 7, &pool);
      const Matrix x = random_matrix(s.tokens, s.d, 11, 2.0f);
      const std::string what = variant_name(v) + " d=" + std::to_string(s.d) + " hidden=" + std::to_string(s.hidden) +
                               " T=" + std::to_string(s.tokens) + " bias=" + std::to_string(s.bias);
      for (WeightType t : kKTypes) expect_within_contract(f32, MatrixTypes::all(t), x, pool, what);
      if (v.gated)
        for (const MatrixTypes& m : kKMixes) expect_within_contract(f32, m, x, pool, what);
    }
}

// 16-bit rows at odd D and H: a bf16 pair panel over an odd K ends in a padding weight that
// meets the activations' zero padding. The thread's scratch is filled with NaNs first, so a
// padding left stale turns outputs into NaN.
TEST_P(InferenceTypes, SixteenBitPanelsAtOddSizesIgnoreStaleScratch) {
  test::ScopedIsa isa(GetParam());
  ThreadPool one(1);  // the calling thread runs the forward: its scratch is the one poisoned
  for (const WeightType t : {WeightType::bf16, WeightType::f16}) {
    const int64_t T = 67;
    const BlockConfig c{{true, Activation::swish}, 33, 171, true, 0.0};
    const Block f32 = Block::random(c, 9);
    const InferenceBlock fast(f32, t, &one);
    const Block rounded = test::rounded_copy(f32, MatrixTypes::all(t));
    const Matrix x = random_matrix(T, 33, 3, 2.0f);
    for (const Scratch slot : {Scratch::tile, Scratch::tile2, Scratch::x_activations, Scratch::hidden_activations}) {
      const MatrixView poison = scratch_matrix(slot, 1, int64_t(1) << 20);
      std::fill(poison.data, poison.data + poison.cols, std::nanf(""));
    }
    Matrix y(T, 33);
    fast.forward(x.view(), y.view(), &one);
    EXPECT_LE(worst_ratio(rounded, x, y, false, bf16_operand_rounding(GetParam(), MatrixTypes::all(t))), 1.0)
        << weight_type_info(t).name;
  }
}

TEST_P(InferenceTypes, BitIdenticalForAnyThreadCountAndBatch) {
  test::ScopedIsa isa(GetParam());
  for (const Variant& v : {Variant{true, Activation::swish}, Variant{false, Activation::gelu}})
    for (const bool k_quants : {false, true}) {
      // D and H: multiples of 32 but not all of 64 for the 32-block types; of 256 for the K-quants.
      const int64_t D = k_quants ? 256 : 96, H = k_quants ? 512 : 224;
      const Block f32 = Block::random({v, D, H, true}, 3);
      std::vector<MatrixTypes> all;
      if (k_quants) {
        all.assign(std::begin(kKMixes), std::end(kKMixes));
        for (WeightType t : kKTypes) all.push_back(MatrixTypes::all(t));
      } else {
        all.assign(std::begin(kMixes), std::end(kMixes));
        for (WeightType t : kTypes) all.push_back(MatrixTypes::all(t));
      }
      for (const MatrixTypes& types : all) {
        const InferenceBlock fast(f32, types);
        // The last T: two of the stages' token blocks, the second a tail of 3 tokens.
        for (int64_t T : {int64_t{3}, int64_t{100}, kernels::kPanelTokenBlock + 3}) {
          const Matrix x = random_matrix(T, D, 5, 2.0f);
          Matrix first(T, D);
          ThreadPool one(1);
          fast.forward(x.view(), first.view(), &one);
          for (int threads : {2, 3}) {
            ThreadPool pool(threads);
            Matrix y(T, D);
            fast.forward(x.view(), y.view(), &pool);
            for (int64_t i = 0; i < y.size(); ++i)
              ASSERT_EQ(first.data()[i], y.data()[i])
                  << matrix_types_name(types, v.gated) << " T=" << T << " threads=" << threads << " element " << i;
          }
          // The last token alone gives its bits in the batch.
          Matrix alone(1, D);
          fast.forward({x.row(T - 1), 1, D, D}, alone.view(), &one);
          for (int64_t i = 0; i < D; ++i)
            ASSERT_EQ(first.row(T - 1)[i], alone.data()[i]) << matrix_types_name(types, v.gated) << " T=" << T;
        }
      }
    }
}

FFN_INSTANTIATE_FOR_EVERY_ISA(InferenceTypes);

// The q8_0 / q4_0 contract is tight enough to see real mistakes: the output of a correct
// forward, judged against the reference of wrongly decoded weights, must fall outside it.
TEST(InferenceTypes, QuantisedBoundCatchesNibbleOrderAndScale) {
  const BlockConfig c{{true, Activation::swish}, 64, 96, false, 0.0};
  const Block f32 = Block::random(c, 1);
  const Matrix x = random_matrix(3, 64, 4, 2.0f);
  Matrix y(3, 64);
  InferenceBlock(f32, WeightType::q4_0).forward(x.view(), y.view());
  const Block rounded = test::rounded_copy(f32, MatrixTypes::all(WeightType::q4_0));
  EXPECT_LE(worst_ratio(rounded, x, y, true), 1.0);

  Block swapped = test::rounded_copy(rounded, MatrixTypes{});  // low and high nibbles exchanged
  for (Matrix* m : {&swapped.weights().gate, &swapped.weights().up, &swapped.weights().down})
    for (int64_t i = 0; i < m->size(); i += 32)
      for (int64_t j = 0; j < 16; ++j) std::swap(m->data()[i + j], m->data()[i + j + 16]);
  EXPECT_GT(worst_ratio(swapped, x, y, true), 1.0);

  // Every other block's scale doubled. (The bound is a worst case, Σ|W|·e, while real
  // quantisation errors partly cancel: a 25% error on every other scale stays inside it
  // at this size, which is why the kernels are also held bit for bit to the scalar one.)
  Block rescaled = test::rounded_copy(rounded, MatrixTypes{});
  for (Matrix* m : {&rescaled.weights().gate, &rescaled.weights().up, &rescaled.weights().down})
    for (int64_t i = 0; i < m->size(); ++i) m->data()[i] *= (i / 32) % 2 ? 2.0f : 1.0f;
  EXPECT_GT(worst_ratio(rescaled, x, y, true), 1.0);
}

TEST(InferenceTypes, WeightBytesAreEachMatrixsType) {
  const Block f32 = Block::random({{true, Activation::swish}, 64, 96, true}, 1);
  const int64_t biases = 4 * (2 * 96 + 64);
  EXPECT_EQ(InferenceBlock(f32, WeightType::q4_0).weight_bytes(), 2 * 96 * 2 * 18 + 64 * 3 * 18 + biases);
  EXPECT_EQ(InferenceBlock(f32, WeightType::bf16).weight_bytes(), 3 * 96 * 64 * 2 + biases);
  const InferenceBlock mix(f32, MatrixTypes{WeightType::q4_0, WeightType::q4_0, WeightType::q8_0});
  EXPECT_EQ(mix.weight_bytes(), 2 * 96 * 2 * 18 + 64 * 3 * 34 + biases);
  EXPECT_EQ(mix.types(), (MatrixTypes{WeightType::q4_0, WeightType::q4_0, WeightType::q8_0}));
  EXPECT_EQ(matrix_types_name(mix.types(), true), "gate q4_0, up q4_0, down q8_0");
  const Block odd = Block::random({{true, Activation::swish}, 40, 96, false}, 1);
  test::expect_error([&] { (void)InferenceBlock(odd, WeightType::q8_0); }, {"gate", "40 weights", "blocks of 32"});
  EXPECT_NO_THROW((void)InferenceBlock(odd, WeightType::f16));
  // Only the matrix whose rows are not whole blocks is refused: down's rows (H = 96) are.
  EXPECT_NO_THROW((void)InferenceBlock(odd, MatrixTypes{WeightType::f16, WeightType::f16, WeightType::q8_0}));
}

TEST(InferenceTypes, NonFiniteWeightsOfABlockTypeAreAnErrorNamingTheMatrix) {
  Block f32 = Block::random({{true, Activation::swish}, 32, 64, false}, 1);
  f32.weights().down.data()[5] = std::nanf("");
  test::expect_error([&] { (void)InferenceBlock(f32, WeightType::q8_0); }, {"down"});
  EXPECT_NO_THROW((void)InferenceBlock(f32, WeightType::bf16));
}

}  // namespace
}  // namespace ffn
