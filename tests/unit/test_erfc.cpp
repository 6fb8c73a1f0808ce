// erfc as the gelu formulas evaluate it (libm's erfcf in scalar, erfc_f32.hpp in AVX2 and
// AVX-512), on every ISA, against double-precision erfc at the same f32 inputs: a dense
// sweep of [−12, 12] (where erfc goes from 2 to below FLT_TRUE_MIN), magnitudes from 1e−45
// to 1e5 of both signs, and the special values.
//
// Tolerance, per element: |f32 − exact| ≤ 6·u·exact + FLT_TRUE_MIN, u = 2⁻²⁴. erfc_f32's
// measured worst case is 5.8 ulp (polynomial 0.6, exp 1.0–1.3, t and its correction, four
// f32 roundings); FLT_TRUE_MIN covers results on the subnormal grid (z > 9.2). The mean
// error over the sweep is held to 1 ulp (measured 0.4–0.5): a bias too small for the
// maximum would show there. Each of these fails it: the first or the last coefficient
// wrong in its fifth significant digit, the exp(−lo) factor dropped, the correction of t
// applied with the wrong sign.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <limits>
#include <vector>

#include "float_grids.hpp"
#include "isa_param.hpp"
#include "kernels/activation_kernels.hpp"
#include "kernels/kernels.hpp"

namespace ffn {
namespace {

constexpr double kU = 0x1p-24;
constexpr double kMaxUlps = 6.0;
constexpr double kMeanUlps = 1.0;

class Erfc : public testing::TestWithParam<Isa> {
 protected:
  std::vector<float> erfc(const std::vector<float>& z) const {
    std::vector<float> out(z.size());
    kernels::kernel_table(GetParam()).f32_erfc(z.data(), out.data(), static_cast<int64_t>(z.size()));
    return out;
  }
};

std::vector<float> sweep() {
  std::vector<float> z;
  for (int i = -12 * 4096; i <= 12 * 4096; ++i) z.push_back(static_cast<float>(i) / 4096.0f);
  test::append_signed_magnitudes(z);
  z.push_back(0.3f);  // length 100308: not a multiple of 8 or 16, so the masked tail runs too
  return z;
}

TEST_P(Erfc, WithinSixUlpsOfDoublePrecision) {
  const std::vector<float> z = sweep();
  ASSERT_NE(z.size() % 8, 0u);
  const std::vector<float> got = erfc(z);
  double worst = 0, sum = 0;
  int64_t counted = 0;
  for (size_t i = 0; i < z.size(); ++i) {
    const double exact = std::erfc(static_cast<double>(z[i]));
    const double err = std::fabs(static_cast<double>(got[i]) - exact);
    ASSERT_LE(err, kMaxUlps * kU * exact + FLT_TRUE_MIN) << "erfc(" << z[i] << ") = " << got[i] << ", exact " << exact;
    if (exact >= FLT_MIN) {
      const double ulps = err / (kU * exact);
      worst = std::max(worst, ulps);
      sum += ulps;
      ++counted;
    }
  }
  EXPECT_LE(sum / static_cast<double>(counted), kMeanUlps);
  RecordProperty("worst_ulps", std::to_string(worst));
}

TEST_P(Erfc, SpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> z = {0.0f, -0.0f, inf, -inf, 10.1f, 11.0f, 1e30f, -10.0f, -1e30f, std::nanf("")};
  const std::vector<float> got = erfc(z);
  EXPECT_EQ(got[0], 1.0f);
  EXPECT_EQ(got[1], 1.0f);
  EXPECT_EQ(got[2], 0.0f);
  EXPECT_EQ(got[3], 2.0f);
  EXPECT_EQ(got[4], 0.0f);  // erfc(10.1) ≈ 6.6e−46, below half of FLT_TRUE_MIN
  EXPECT_EQ(got[5], 0.0f);
  EXPECT_EQ(got[6], 0.0f);
  EXPECT_EQ(got[7], 2.0f);
  EXPECT_EQ(got[8], 2.0f);
  EXPECT_TRUE(std::isnan(got[9]));
}

FFN_INSTANTIATE_FOR_EVERY_ISA(Erfc);

}  // namespace
}  // namespace ffn
