// The activations' quantisation kernels (kernels.hpp, f32_to_q8_rows): every one registered
// on every ISA of this CPU against core's quantize_row_q8_0 / quantize_row_q8_K — ggml's
// functions byte for byte (test_quant.cpp, test_ggml_blocks.cpp, and the gguf package in the
// golden tests) — bit for bit: codes, scales and sums of 16. No tolerance: the integer
// kernels' exactness rests on every ISA making the same codes. The data covers what a
// vector rounding gets wrong first: exact halves (q8_0 rounds them away from zero, q8_K to
// even), blocks of zeros and of values so small that 1/d overflows, a largest |x| held by
// both signs (q8_K keeps the first), and the values the quantisers refuse.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/activation_formats.hpp"
#include "core/ggml_blocks.hpp"
#include "core/quant.hpp"
#include "ffn/error.hpp"
#include "isa_param.hpp"
#include "kernels/kernels.hpp"
#include "panel_support.hpp"

namespace ffn {
namespace {

const test::CheckedOps kQ8RowsOps = test::checks_ops({kernels::Op::f32_to_q8_rows});

struct Quantised {
  std::vector<int8_t> codes;
  std::vector<float> scales;
  std::vector<int16_t> sums;
};

// The reference: core's quantisers a block at a time.
Quantised reference(WeightType format, const std::vector<float>& x) {
  const auto n = static_cast<int64_t>(x.size());
  const int64_t block = format == WeightType::q8_K ? 256 : 32;
  Quantised q{std::vector<int8_t>(x.size()), std::vector<float>(size_t(n / block)),
              std::vector<int16_t>(size_t(n / 16))};
  for (int64_t c = 0; c < n; c += block) {
    const int8_t* codes;
    if (format == WeightType::q8_K) {
      BlockQ8_K b;
      quantize_row_q8_K(x.data() + c, &b, block);
      q.scales[size_t(c / block)] = b.d;
      std::memcpy(q.codes.data() + c, b.qs, size_t(block));
    } else {
      BlockQ8_0 b;
      quantize_row_q8_0(x.data() + c, &b, block);
      q.scales[size_t(c / block)] = f16_to_f32(b.d);
      std::memcpy(q.codes.data() + c, b.qs, size_t(block));
    }
    codes = q.codes.data() + c;
    for (int64_t i = 0; i < block / 16; ++i) {
      int s = 0;
      for (int l = 0; l < 16; ++l) s += codes[16 * i + l];
      q.sums[size_t(c / 16 + i)] = static_cast<int16_t>(s);
    }
  }
  return q;
}

uint32_t bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

// Rows of `block`-value blocks, each a case the rounding or the scale must get right.
std::vector<float> cases(int64_t block) {
  std::vector<float> x;
  auto add_block = [&](auto value) {
    for (int64_t j = 0; j < block; ++j) x.push_back(float(value(j)));
  };
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (float scale : {1.0f, 1e-3f, 3e4f, 1e6f}) add_block([&](int64_t) { return scale * u(rng); });
  // Largest |x| 127 (q8_0: d = 1; q8_K: iscale = −1), the rest exact halves of both signs.
  add_block([](int64_t j) { return j == 0 ? 127.0 : (j % 2 ? -1.0 : 1.0) * (double(j % 9) + 0.5); });
  add_block([](int64_t j) { return j == 3 ? -127.0 : (j % 2 ? 1.0 : -1.0) * (double(j % 13) + 0.5); });
  // Halves after a product that is not exact: largest |x| 63.5 (d = 0.5).
  add_block([](int64_t j) { return j == 1 ? 63.5 : (j % 3 ? -0.25 : 0.75) * double(j % 11); });
  add_block([](int64_t) { return 0.0; });
  add_block([](int64_t j) { return j % 2 ? -0.0 : 0.0; });
  add_block([](int64_t j) { return double(j + 1) * 1e-40; });  // 1/d overflows: codes 0
  add_block([](int64_t j) { return j % 5 ? 1e-38 * double(j % 7) : 0.0; });
  // The largest |x| held by both signs, the negative first and then the positive first.
  add_block([](int64_t j) { return j == 2 ? -5.0 : j == 9 ? 5.0 : 0.01 * double(j % 17); });
  add_block([](int64_t j) { return j == 2 ? 5.0 : j == 9 ? -5.0 : -0.01 * double(j % 17); });
  // One value and zeros; the largest |x| q8_0's binary16 scale still holds (127 · 65504).
  add_block([block](int64_t j) { return j == block - 1 ? -0.37 : 0.0; });
  add_block([](int64_t j) { return j == 5 ? 8.3e6 : double(j); });
  return x;
}

TEST(Q8RowsKernel, MatchesTheQuantisersBitForBit) {
  for (Isa isa : supported_isas())
    for (const auto& quantise : test::registered_entries<kernels::F32ToQ8Rows>(isa, kQ8RowsOps))
      for (WeightType format : {WeightType::q8_0, WeightType::q8_K}) {
        const int64_t block = format == WeightType::q8_K ? 256 : 32;
        const std::vector<float> x = cases(block);
        const Quantised want = reference(format, x);
        // Whole rows, and a row of one block (each block is quantised alone).
        for (int64_t n : {int64_t(x.size()), block, int64_t(0)}) {
          Quantised got{std::vector<int8_t>(x.size(), 99), std::vector<float>(want.scales.size(), NAN),
                        std::vector<int16_t>(want.sums.size(), 9999)};
          ASSERT_TRUE(quantise(format, n, x.data(), got.codes.data(), got.scales.data(), got.sums.data()))
              << quantise.name << " " << weight_type_name(format) << " n=" << n;
          for (int64_t i = 0; i < n; ++i)
            ASSERT_EQ(got.codes[size_t(i)], want.codes[size_t(i)])
                << quantise.name << " " << weight_type_name(format) << " value " << i << " = " << x[size_t(i)];
          for (int64_t b = 0; b < n / block; ++b)
            ASSERT_EQ(bits(got.scales[size_t(b)]), bits(want.scales[size_t(b)]))
                << quantise.name << " " << weight_type_name(format) << " block " << b;
          for (int64_t i = 0; i < n / 16; ++i)
            ASSERT_EQ(got.sums[size_t(i)], want.sums[size_t(i)]) << quantise.name << " sum " << i;
          // Nothing written past n.
          if (n < int64_t(x.size())) {
            ASSERT_EQ(got.codes[size_t(n)], 99) << quantise.name;
          }
        }
      }
}

// Where the quantisers throw — a value not finite, a q8_0 scale beyond binary16 — the
// kernels answer false, and never crash; the block before stays as quantised.
TEST(Q8RowsKernel, RefusesWhatTheQuantisersRefuse) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  for (Isa isa : supported_isas())
    for (const auto& quantise : test::registered_entries<kernels::F32ToQ8Rows>(isa, kQ8RowsOps))
      for (WeightType format : {WeightType::q8_0, WeightType::q8_K}) {
        const int64_t block = format == WeightType::q8_K ? 256 : 32;
        std::vector<float> bad_values = {nan, inf, -inf};
        if (format == WeightType::q8_0) bad_values.push_back(8.4e6f);  // scale 66142 > 65504
        for (float bad : bad_values)
          for (int64_t at : {int64_t(0), block + 7, 2 * block - 1}) {
            std::vector<float> x = test::random_vector(size_t(2 * block), 3);
            x[size_t(at)] = bad;
            std::vector<int8_t> codes(x.size());
            std::vector<float> scales(2);
            std::vector<int16_t> sums(x.size() / 16);
            EXPECT_FALSE(quantise(format, 2 * block, x.data(), codes.data(), scales.data(), sums.data()))
                << quantise.name << " " << weight_type_name(format) << " took " << bad << " at " << at;
          }
      }
}

// The forward's quantisation names the value it cannot quantise, on every ISA.
TEST(Q8RowsKernel, TheForwardsQuantisationNamesTheBadValue) {
  for (Isa isa : supported_isas())
    for (WeightType format : {WeightType::q8_0, WeightType::q8_K}) {
      std::vector<float> x = test::random_vector(512, 5);
      x[300] = std::numeric_limits<float>::quiet_NaN();
      try {
        test::quantise(format, 1, 512, x, isa);
        ADD_FAILURE() << isa_name(isa) << " " << weight_type_name(format) << " quantised a NaN";
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("element 300"), std::string::npos) << e.what();
      }
    }
}

}  // namespace
}  // namespace ffn
