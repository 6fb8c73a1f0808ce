// Inference blocks' f32 panels (InferenceBlock) and their kernel, f32_panel_gemm.
//   Every panel kernel registered on every ISA against a double-precision sum, within
//   K·u·Σ|a·p| (the bound of any f32 summation order; a lost k, a wrong column or a skipped
//   K block misses it), at token counts below, at and above the 6-token tile and the
//   256-token block, and K below, at and above the 512-row block.
//   The InferenceBlock forward of every variant against the double-precision reference of
//   the block it was made from, within the reference's rigorous bound (test_forward.cpp),
//   with D and H that fill no panel exactly; bit-identical for any thread count and for a
//   token alone or in any batch; views of the wrong shape refused by name.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "ffn/backward.hpp"
#include "ffn/block.hpp"
#include "ffn/inference_block.hpp"
#include "expect_error.hpp"
#include "ffn/error.hpp"
#include "ffn/quant.hpp"
#include "forward_checks.hpp"
#include "isa_param.hpp"
#include "kernels/kernels.hpp"
#include "random_data.hpp"
#include "same_bits.hpp"

namespace ffn {
namespace {

using test::all_variants;
using test::worst_bound_ratio;

using test::random_matrix;
constexpr int64_t kW = kernels::kPanelWidth;

using kernels::Op;

class PanelKernel : public testing::TestWithParam<Isa> {};

const test::CheckedOps kF32PanelOps = test::checks_ops({Op::f32_panel_gemm});

TEST_P(PanelKernel, MatchesDoubleSumWithinBound) {
  for (const auto& f32_panel_gemm : test::registered_entries<kernels::F32PanelGemm>(GetParam(), kF32PanelOps))
    for (int64_t K : {0, 1, 7, 511, 512, 513, 1100})
      // T: each tile of every ISA and its edges (AVX2 changes tile at 6 and 10 tokens,
      // AVX-512 at 7 and 9).
      for (int64_t T : {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 13, 256, 257, 263}) {
        const Matrix A = random_matrix(T, K + 3, uint32_t(T * 31 + K));  // lda = K + 3
        const Matrix P = random_matrix(K, kW, uint32_t(K + 5));
        Matrix C(T, kW + 2);                                       // ldc = 66
        for (int64_t i = 0; i < C.size(); ++i) C.data()[i] = NAN;  // every element must be written
        f32_panel_gemm(T, K, A.data(), K + 3, P.data(), C.data(), kW + 2);
        for (int64_t t = 0; t < T; ++t)
          for (int64_t j = 0; j < kW; ++j) {
            double exact = 0, magnitude = 0;
            for (int64_t kk = 0; kk < K; ++kk) {
              const double term = double(A.row(t)[kk]) * P.row(kk)[j];
              exact += term;
              magnitude += std::fabs(term);
            }
            const double bound = double(K) * 0x1p-24 * magnitude;
            ASSERT_LE(std::fabs(C.row(t)[j] - exact), bound)
                << f32_panel_gemm.name << " T=" << T << " K=" << K << " t=" << t << " j=" << j;
          }
      }
}

// The 16-bit panels: the same bound on the widened (exact) weights; a widening that read
// the wrong half, or f16 as bf16, misses it by far.
const test::CheckedOps kHalfPanelOps = test::checks_ops({Op::half_panel_gemm});

TEST_P(PanelKernel, HalfPanelsMatchDoubleSumWithinBound) {
  for (const auto& half_panel_gemm : test::registered_entries<kernels::HalfPanelGemm>(GetParam(), kHalfPanelOps))
    for (const bool bf16 : {true, false})
      for (int64_t K : {0, 5, 512, 700})
        for (int64_t T : {1, 2, 3, 4, 6, 7, 13, 18, 257}) {
          const Matrix A = random_matrix(T, K, uint32_t(T + K));
          const Matrix W = random_matrix(K, kW, uint32_t(K + 9));
          // bf16: k in pairs (kernels.hpp), an odd K padded with zeros; f16: [K][64].
          std::vector<uint16_t> P(size_t((bf16 ? kernels::bf16_panel_rows(K) : K) * kW));
          std::vector<double> widened(size_t(K * kW));  // [K][64]
          for (int64_t kk = 0; kk < K; ++kk)
            for (int64_t j = 0; j < kW; ++j) {
              const float w = W.row(kk)[j];
              uint16_t& stored = P[size_t(bf16 ? kernels::bf16_panel_index(kk, j) : kk * kW + j)];
              stored = bf16 ? f32_to_bf16(w) : f32_to_f16(w);
              widened[size_t(kk * kW + j)] = bf16 ? bf16_to_f32(stored) : f16_to_f32(stored);
            }
          Matrix C(T, kW);
          half_panel_gemm(bf16, T, K, A.data(), K, P.data(), C.data(), kW);
          for (int64_t t = 0; t < T; ++t)
            for (int64_t j = 0; j < kW; ++j) {
              double exact = 0, magnitude = 0;
              for (int64_t kk = 0; kk < K; ++kk) {
                const double term = double(A.row(t)[kk]) * widened[size_t(kk * kW + j)];
                exact += term;
                magnitude += std::fabs(term);
              }
              ASSERT_LE(std::fabs(C.row(t)[j] - exact), double(K) * 0x1p-24 * magnitude)
                  << half_panel_gemm.name << (bf16 ? " bf16" : " f16") << " T=" << T << " K=" << K;
            }
        }
}

FFN_INSTANTIATE_FOR_EVERY_ISA(PanelKernel);

// AVX512_BF16's panel product: against the double-precision sum of the rounded operands
// (activations rounded to bf16 by f32_to_bf16_rows, weights as stored) within K·u·Σ|Ã·P|
// — each vdpbf16ps step rounds once per product added, products of bf16 are exact in f32.
// A pair read from the wrong half, a lost pair or an odd K's padding read as anything but
// zero misses it by far. Every such kernel registered on every ISA of this CPU (the
// activations rounded by its own table's f32_to_bf16_rows); skipped where none is (a CPU
// without AVX512_BF16).
const test::CheckedOps kBf16DotOps = test::checks_ops({Op::bf16_dot_panel_gemm});
const test::CheckedOps kToBf16Ops = test::checks_ops({Op::f32_to_bf16_rows});

TEST(Bf16DotPanel, MatchesDoubleSumOfRoundedOperands) {
  bool any = false;
  for (Isa isa : supported_isas())
    for (const auto& bf16_dot_panel_gemm : test::registered_entries<kernels::Bf16DotPanelGemm>(isa, kBf16DotOps)) {
      any = true;
      const auto& k = kernels::kernel_table(isa);
      ASSERT_NE(k.f32_to_bf16_rows, nullptr)
          << isa_name(isa) << " has " << bf16_dot_panel_gemm.name << " but no f32_to_bf16_rows";
      for (int64_t K : {0, 1, 5, 511, 512, 513, 700, 1100})
        for (int64_t T : {1, 6, 7, 13, 257}) {
          const int64_t Kp = kernels::bf16_panel_rows(K), lda = Kp + 2;
          const Matrix A = random_matrix(T, K, uint32_t(T + 3 * K));
          // The rounded activations, with a poisoned padding value that the rounding must clear.
          std::vector<uint16_t> Ab(size_t(T * lda), 0x7FC0);
          k.f32_to_bf16_rows(T, K, A.data(), K, Ab.data(), lda);
          const Matrix W = random_matrix(K, kW, uint32_t(K + 11));
          std::vector<uint16_t> P(size_t(Kp * kW), 0);
          for (int64_t kk = 0; kk < K; ++kk)
            for (int64_t j = 0; j < kW; ++j) P[size_t(kernels::bf16_panel_index(kk, j))] = f32_to_bf16(W.row(kk)[j]);
          Matrix C(T, kW);
          bf16_dot_panel_gemm(T, K, Ab.data(), lda, P.data(), C.data(), kW);
          for (int64_t t = 0; t < T; ++t) {
            if (K % 2) {
              ASSERT_EQ(Ab[size_t(t * lda + K)], 0) << "padding of token " << t << ", K=" << K;
            }
            for (int64_t j = 0; j < kW; ++j) {
              double exact = 0, magnitude = 0;
              for (int64_t kk = 0; kk < K; ++kk) {
                const uint16_t a = Ab[size_t(t * lda + kk)];
                ASSERT_EQ(a, f32_to_bf16(A.row(t)[kk]));  // normal values: round to nearest even
                const double term = double(bf16_to_f32(a)) * bf16_to_f32(P[size_t(kernels::bf16_panel_index(kk, j))]);
                exact += term;
                magnitude += std::fabs(term);
              }
              ASSERT_LE(std::fabs(C.row(t)[j] - exact), double(K) * 0x1p-24 * magnitude)
                  << bf16_dot_panel_gemm.name << " T=" << T << " K=" << K << " t=" << t << " j=" << j;
            }
          }
        }
    }
  if (!any) GTEST_SKIP() << "no ISA of this CPU has a bf16 dot product kernel (AVX512_BF16)";
}

// The rounding of activations to bf16: nearest, ties to even (ffn::f32_to_bf16), NaN stays
// NaN; denormals become zero (the instruction's DAZ) — what the kernel contract states.
TEST(Bf16DotPanel, RoundsActivationsToNearestEven) {
  bool any = false;
  for (Isa isa : supported_isas())
    for (const auto& f32_to_bf16_rows : test::registered_entries<kernels::F32ToBf16Rows>(isa, kToBf16Ops)) {
      any = true;
      const std::vector<float> x = {1.0f,
                                    1.00390625f /* tie, to even: 1 */,
                                    1.01171875f /* tie, to 1.015625 */,
                                    -3.14159f,
                                    65504.0f,
                                    1e-30f,
                                    1e-40f /* denormal */,
                                    NAN,
                                    INFINITY,
                                    -0.0f,
                                    3.0e38f};
      const int64_t K = int64_t(x.size()), ld = kernels::bf16_panel_rows(K);
      std::vector<uint16_t> out(size_t(ld), 0x1234);
      f32_to_bf16_rows(1, K, x.data(), K, out.data(), ld);
      for (int64_t i = 0; i < K; ++i) {
        if (std::isnan(x[size_t(i)])) {
          EXPECT_TRUE(std::isnan(bf16_to_f32(out[size_t(i)])));
        } else if (std::fpclassify(x[size_t(i)]) == FP_SUBNORMAL) {
          EXPECT_EQ(bf16_to_f32(out[size_t(i)]), 0.0f);
        } else {
          EXPECT_EQ(out[size_t(i)], f32_to_bf16(x[size_t(i)])) << f32_to_bf16_rows.name << ": x = " << x[size_t(i)];
        }
      }
      EXPECT_EQ(out[size_t(K)], 0) << f32_to_bf16_rows.name << ": the padding of an odd K";
    }
  if (!any) GTEST_SKIP() << "no ISA of this CPU has a bf16 rounding kernel (AVX512_BF16)";
}

struct Shape {
  int64_t d, hidden, tokens;
  bool bias;
};
// D and H below, across and above whole panels (32 hidden units per gated panel, 64
// otherwise); 263 tokens cross the kernel's 256-token block.
const Shape kShapes[] = {{1, 1, 1, false},  {7, 13, 2, true},     {33, 171, 17, false},
                         {64, 96, 7, true}, {65, 130, 263, true}, {100, 37, 5, false}};

// The InferenceBlock forward (f32 panels; 16-bit and mixes in test_inference_types.cpp).
class PackedForward : public testing::TestWithParam<Isa> {};

TEST_P(PackedForward, EveryVariantMatchesReferenceWithinBound) {
  test::ScopedIsa isa(GetParam());
  ThreadPool pool(2);
  for (const Variant& v : all_variants())
    for (const Shape& s : kShapes) {
      const Block block = Block::random({v, s.d, s.hidden, s.bias}, 7, &pool);
      const InferenceBlock packed(block, WeightType::f32, &pool);
      const Matrix x = random_matrix(s.tokens, s.d, 11, 2.0f);
      Matrix y(s.tokens, s.d);
      packed.forward(x.view(), y.view(), &pool);
      EXPECT_LE(worst_bound_ratio(block, x, y), 1.0)
          << variant_name(v) << " d=" << s.d << " hidden=" << s.hidden << " T=" << s.tokens << " bias=" << s.bias;
    }
}

// bf16 / f16 blocks packed: the f32 bound against the reference on the rounded weights
// (the values the 16-bit panels hold, widened exactly) — with, for bf16 on AVX512_BF16,
// the activations' rounding to bf16 (relative 2⁻⁸, reference.cpp) added to it; without
// that term the bf16 dot product's results lie outside (checked when this was written).
TEST_P(PackedForward, SixteenBitBlocksMatchReferenceOnRoundedWeights) {
  test::ScopedIsa isa(GetParam());
  const bool bf16_dot = kernels::kernel_table(GetParam()).bf16_dot_panel_gemm != nullptr;
  ThreadPool pool(2);
  for (const WeightType type : {WeightType::bf16, WeightType::f16})
    for (const Variant& v : {Variant{true, Activation::swish}, Variant{false, Activation::gelu}})
      for (const Shape& s : {Shape{64, 96, 7, true}, Shape{96, 160, 263, false}, Shape{33, 171, 9, true}}) {
        const Block block = Block::random({v, s.d, s.hidden, s.bias}, 5, &pool);
        const InferenceBlock packed(block, type, &pool);
        EXPECT_EQ(packed.types(), MatrixTypes::all(type));
        Block rounded = Block::random({v, s.d, s.hidden, s.bias}, 5, &pool);
        round_weights_to(rounded, type);
        const Matrix x = random_matrix(s.tokens, s.d, 12, 2.0f);
        Matrix y(s.tokens, s.d);
        packed.forward(x.view(), y.view(), &pool);
        const double operand_rounding = type == WeightType::bf16 && bf16_dot ? 0x1p-8 : 0.0;
        EXPECT_LE(worst_bound_ratio(rounded, x, y, operand_rounding), 1.0)
            << weight_type_info(type).name << " " << variant_name(v) << " T=" << s.tokens;
      }
}

TEST_P(PackedForward, BitIdenticalForAnyThreadCountAndBatch) {
  test::ScopedIsa isa(GetParam());
  for (const Variant& v : {Variant{true, Activation::swish}, Variant{false, Activation::gelu}})
    for (const WeightType type : {WeightType::f32, WeightType::bf16, WeightType::f16, WeightType::q4_0}) {
      const InferenceBlock packed(Block::random({v, 96, 224, true}, 3), type);
      const int64_t T = 270;
      const Matrix x = random_matrix(T, 96, 5, 2.0f);
      ThreadPool one(1);
      Matrix first(T, 96);
      packed.forward(x.view(), first.view(), &one);
      for (int threads : {2, 3, 5}) {
        ThreadPool pool(threads);
        Matrix y(T, 96);
        packed.forward(x.view(), y.view(), &pool);
        ASSERT_TRUE(test::same_bits(first, y)) << variant_name(v) << " threads=" << threads;
      }
      // A token alone, and a window of 3, 4, 8, 9 or 16 tokens (AVX2 takes other tiles up
      // to 2, 4, 5 and 9 tokens, by type, AVX-512 f32 for 7 and 8; 16: three strips of the
      // AVX-512 tile, which step K in 64s) starting anywhere, give the batch's bits.
      for (int64_t t0 : {0, 5, 100, 254, 261}) {
        for (int64_t n : {int64_t(1), std::min<int64_t>(3, T - t0), std::min<int64_t>(4, T - t0),
                          std::min<int64_t>(8, T - t0), std::min<int64_t>(9, T - t0), std::min<int64_t>(16, T - t0)}) {
          Matrix y(n, 96);
          packed.forward({x.row(t0), n, 96, 96}, y.view(), &one);
          for (int64_t t = 0; t < n; ++t)
            for (int64_t i = 0; i < 96; ++i)
              ASSERT_EQ(y.row(t)[i], first.row(t0 + t)[i])
                  << variant_name(v) << " " << weight_type_info(type).name << " token " << t0 + t << " of " << n;
        }
      }
    }
}

FFN_INSTANTIATE_FOR_EVERY_ISA(PackedForward);

TEST(PackedBlock, RefusesViewsOfTheWrongShape) {
  const InferenceBlock packed(Block::random({{true, Activation::swish}, 32, 64, false}, 1), WeightType::f32);
  const Matrix x = random_matrix(2, 32, 1);
  Matrix y(2, 32), wrong(2, 31), short_y(1, 32);
  test::expect_error([&] { packed.forward(x.view(), wrong.view()); }, {"output y", "31 columns"});
  test::expect_error([&] { packed.forward(x.view(), short_y.view()); }, {"input x has 2 rows", "output y has 1"});
  test::expect_error([&] { packed.forward(x.view(), {const_cast<float*>(x.data()), 2, 32, 32}); }, {"overlaps"});
  EXPECT_NO_THROW(packed.forward(x.view(), y.view()));
}

// Scratch kept between calls: a call after a larger one, and after release_scratch(),
// gives the same bits.
TEST(PackedBlock, ScratchReuseChangesNothing) {
  const InferenceBlock packed(Block::random({{true, Activation::swish}, 64, 96, true}, 2), WeightType::f32);
  const Matrix x = random_matrix(300, 64, 4);
  Matrix all(300, 64), first(3, 64), again(3, 64);
  packed.forward({x.data(), 3, 64, 64}, first.view());
  packed.forward(x.view(), all.view());
  packed.forward({x.data(), 3, 64, 64}, again.view());
  EXPECT_TRUE(test::same_bits(first, again));
  release_scratch();
  packed.forward({x.data(), 3, 64, 64}, again.view());
  EXPECT_TRUE(test::same_bits(first, again));
}

TEST(PackedBlock, NonFiniteTokensStayInTheirRow) {
  const InferenceBlock packed(Block::random({{true, Activation::swish}, 40, 70, true}, 2), WeightType::f32);
  Matrix x = random_matrix(8, 40, 3);
  x.row(2)[5] = NAN;
  x.row(6)[0] = INFINITY;
  Matrix y(8, 40);
  packed.forward(x.view(), y.view());
  for (int64_t t = 0; t < 8; ++t)
    for (int64_t i = 0; i < 40; ++i) {
      if (t == 2) {
        EXPECT_TRUE(std::isnan(y.row(t)[i]));
      } else if (t != 6) {
        EXPECT_TRUE(std::isfinite(y.row(t)[i])) << "token " << t;
      }
    }
}

}  // namespace
}  // namespace ffn
