#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/quant.hpp"
#include "expect_error.hpp"

namespace ffn {
namespace {

using test::expect_error;

float from_bits(uint32_t b) {
  float x;
  std::memcpy(&x, &b, 4);
  return x;
}

template <class Block>
std::vector<uint8_t> bytes_of(const Block& b) {
  std::vector<uint8_t> out(sizeof b);
  std::memcpy(out.data(), &b, sizeof b);
  return out;
}

// ---- binary16 ----

TEST(QuantF16, EveryBitPatternConvertsExactlyAndRoundTrips) {
  for (uint32_t i = 0; i < 65536; ++i) {
    const auto h = uint16_t(i);
    const float f = f16_to_f32(h);
    const int e = (i >> 10) & 0x1F, m = i & 0x3FF;
    const double sign = (i & 0x8000) ? -1.0 : 1.0;
    if (e == 31 && m != 0) {
      // NaN stays NaN with its sign and payload; a signalling NaN comes back quieted.
      ASSERT_TRUE(std::isnan(f)) << i;
      ASSERT_EQ(f32_to_f16(f), h | 0x0200) << i;
      continue;
    }
    const double want = e == 31 ? sign * INFINITY
                        : e     ? sign * std::ldexp(1.0 + m / 1024.0, e - 15)
                                : sign * std::ldexp(m / 1024.0, -14);
    ASSERT_EQ(double(f), want) << "f16 bits " << i;
    ASSERT_EQ(std::signbit(f), sign < 0) << i;
    ASSERT_EQ(f32_to_f16(f), h) << "f16 bits " << i;
  }
}

// Between two neighbouring binary16 values lo < hi: the midpoint (exact in f32) goes to the
// one with an even mantissa, one f32 ulp either side goes to the nearer one. Covers every
// rounding boundary of the format: subnormals, the subnormal/normal edge, binade edges and
// 65504 → Inf (hi = 0x7C00, midpoint 65520).
TEST(QuantF16, RoundsToNearestEvenAtEveryBoundary) {
  for (uint32_t h = 0; h < 0x7C00; ++h) {
    const double lo = f16_to_f32(uint16_t(h));
    const double hi = h + 1 == 0x7C00 ? 65536.0 : f16_to_f32(uint16_t(h + 1));
    const auto mid = float((lo + hi) / 2);
    ASSERT_EQ(double(mid), (lo + hi) / 2) << h;
    for (const uint32_t sign : {0u, 0x8000u}) {
      const float s = sign ? -1.0f : 1.0f;
      ASSERT_EQ(f32_to_f16(s * mid), (h & 1 ? h + 1 : h) | sign) << "midpoint above " << h;
      ASSERT_EQ(f32_to_f16(s * std::nextafter(mid, 0.0f)), h | sign) << h;
      ASSERT_EQ(f32_to_f16(s * std::nextafter(mid, INFINITY)), (h + 1) | sign) << h;
    }
  }
}

TEST(QuantF16, OverflowSubnormalsAndNaN) {
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7BFF);
  EXPECT_EQ(f32_to_f16(65519.99f), 0x7BFF);
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7C00);  // the tie goes to the even side: Inf
  EXPECT_EQ(f32_to_f16(1e10f), 0x7C00);
  EXPECT_EQ(f32_to_f16(-FLT_MAX), 0xFC00);
  EXPECT_EQ(f32_to_f16(INFINITY), 0x7C00);
  EXPECT_EQ(f32_to_f16(-INFINITY), 0xFC00);
  EXPECT_EQ(f32_to_f16(0.0f), 0x0000);
  EXPECT_EQ(f32_to_f16(-0.0f), 0x8000);
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -24)), 0x0001);       // smallest subnormal
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -25)), 0x0000);       // half of it: tie to even (0)
  EXPECT_EQ(f32_to_f16(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(f32_to_f16(std::ldexp(3.0f, -25)), 0x0002);       // 1.5 units: tie to even (2)
  EXPECT_EQ(f32_to_f16(std::ldexp(1023.5f, -24)), 0x0400);    // tie between 0x3FF and 2⁻¹⁴
  EXPECT_EQ(f32_to_f16(from_bits(0x00000001)), 0x0000);       // f32 subnormals underflow
  EXPECT_EQ(f32_to_f16(from_bits(0x80000001)), 0x8000);
  const uint16_t qnan = f32_to_f16(std::nanf(""));
  EXPECT_EQ(qnan & 0x7E00, 0x7E00);
  EXPECT_EQ(f32_to_f16(-std::nanf("")) & 0x8000, 0x8000);
  EXPECT_EQ(f32_to_f16(from_bits(0x7F800001)), 0x7E00);       // signalling, payload below f16's: quiet NaN
  EXPECT_EQ(f32_to_f16(from_bits(0xFFC02000)), 0xFE01);       // payload's top bits kept
}

TEST(QuantF16, RandomFloatsGoToTheNearestValue) {
  // Random sign and mantissa, exponent uniform over 2⁻²⁷ .. 2¹⁵ (f16's range and below it).
  std::mt19937 rng(7);
  for (int i = 0; i < 200000; ++i) {
    const uint32_t exponent = 127 - 27 + rng() % 43;
    const float x = from_bits((rng() & 0x807FFFFFu) | (exponent << 23));
    if (std::fabs(x) >= 65520.0f) continue;
    const uint16_t h = f32_to_f16(x);
    const double err = std::fabs(double(f16_to_f32(h)) - x);
    for (int step : {-1, 1}) {
      const int n = (h & 0x7FFF) + step;
      if (n < 0 || n >= 0x7C00) continue;
      const double other = std::fabs(double(f16_to_f32(uint16_t(n | (h & 0x8000)))) - x);
      ASSERT_TRUE(err < other || (err == other && (h & 1) == 0)) << x;
    }
  }
}

// ---- bfloat16 ----

TEST(QuantBf16, EveryBitPatternRoundTrips) {
  for (uint32_t i = 0; i < 65536; ++i) {
    const auto h = uint16_t(i);
    const float f = bf16_to_f32(h);
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    ASSERT_EQ(bits, i << 16);
    ASSERT_EQ(f32_to_bf16(f), std::isnan(f) ? (h | 0x40) : h) << i;  // NaNs come back quiet
  }
}

TEST(QuantBf16, RoundsToNearestEvenAtEveryBoundary) {
  for (uint32_t h = 0; h < 0x7F80; ++h) {
    // Midpoint and its f32 neighbours, in bits: the lower half of the f32 is 0x8000 at the tie.
    const uint32_t mid = (h << 16) | 0x8000u;
    for (const uint32_t sign : {0u, 0x80000000u}) {
      const uint16_t s = uint16_t(sign >> 16);
      ASSERT_EQ(f32_to_bf16(from_bits(mid | sign)), uint16_t((h & 1 ? h + 1 : h) | s)) << h;
      ASSERT_EQ(f32_to_bf16(from_bits((mid - 1) | sign)), uint16_t(h | s)) << h;
      ASSERT_EQ(f32_to_bf16(from_bits((mid + 1) | sign)), uint16_t((h + 1) | s)) << h;
    }
  }
}

TEST(QuantBf16, OverflowSubnormalsAndNaN) {
  EXPECT_EQ(f32_to_bf16(FLT_MAX), 0x7F80);                    // above the largest bf16's midpoint: Inf
  EXPECT_EQ(f32_to_bf16(from_bits(0x7F7F7FFF)), 0x7F7F);
  EXPECT_EQ(f32_to_bf16(-INFINITY), 0xFF80);
  EXPECT_EQ(f32_to_bf16(from_bits(0x00018000)), 0x0002);      // subnormals rounded, not flushed
  EXPECT_EQ(f32_to_bf16(from_bits(0x00008000)), 0x0000);
  EXPECT_EQ(f32_to_bf16(from_bits(0x00008001)), 0x0001);
  EXPECT_EQ(f32_to_bf16(-0.0f), 0x8000);
  EXPECT_EQ(f32_to_bf16(from_bits(0x7F800001)), 0x7FC0);      // signalling NaN, payload in the low half
  EXPECT_EQ(f32_to_bf16(from_bits(0xFF81FFFF)), 0xFFC1);      // NaN never rounds: truncated, quiet bit set
  EXPECT_EQ(f32_to_bf16(3.140625f), 0x4049);
}

// ---- Q8_0 ----

TEST(QuantQ8_0, HandComputedBlocks) {
  // amax = 127: d = 1 exactly (f16 0x3C00), id = 1; q = roundf(x), ties away from zero
  // (2.5 → 3 and −2.5 → −3, where round-to-even would give 2 and −2).
  std::vector<float> x(32, 0.0f);
  const float head[] = {0.5f, 1.5f, 2.5f, -0.5f, -2.5f, 126.4f, -127.0f, 127.0f, 0.49f};
  std::copy(std::begin(head), std::end(head), x.begin());
  BlockQ8_0 b{};
  quantize_row_q8_0(x.data(), &b, 32);
  std::vector<uint8_t> want(34, 0);
  const uint8_t want_head[] = {0x00, 0x3C, 0x01, 0x02, 0x03, 0xFF, 0xFD, 0x7E, 0x81, 0x7F, 0x00};
  std::copy(std::begin(want_head), std::end(want_head), want.begin());
  EXPECT_EQ(bytes_of(b), want);

  // amax = 1: d = 1/127 = 2⁻⁷·1.00787…, whose nearest f16 is 2⁻⁷·(1 + 8/1024) = 0x2008;
  // q = roundf(x·127): 1 → 127, −1 → −127, 0.25 → 31.75 → 32, −0.1 → −12.7 → −13.
  std::fill(x.begin(), x.end(), 0.0f);
  x[0] = 1.0f, x[1] = -1.0f, x[2] = 0.25f, x[3] = -0.1f;
  quantize_row_q8_0(x.data(), &b, 32);
  std::fill(want.begin(), want.end(), 0);
  const uint8_t want2[] = {0x08, 0x20, 0x7F, 0x81, 0x20, 0xF3};
  std::copy(std::begin(want2), std::end(want2), want.begin());
  EXPECT_EQ(bytes_of(b), want);
  float y[32];
  dequantize_row_q8_0(&b, y, 32);
  const float d = std::ldexp(1.0f + 8.0f / 1024, -7);
  EXPECT_EQ(y[0], 127 * d);
  EXPECT_EQ(y[3], -13 * d);
  EXPECT_EQ(y[4], 0.0f);
}

TEST(QuantQ8_0, ZeroAndTinyBlocksEncodeAsZero) {
  // All zeros: d = 0, id = 0, q = 0. Values so small that 1/d overflows (where ggml's result
  // is undefined) give the same block; their f16 scale is 0 regardless.
  for (const float v : {0.0f, 1e-38f, -3e-39f}) {
    std::vector<float> x(64, 0.0f);
    x[5] = v, x[40] = -v;
    BlockQ8_0 b[2];
    quantize_row_q8_0(x.data(), b, 64);
    for (const auto& blk : b) EXPECT_EQ(bytes_of(blk), std::vector<uint8_t>(34, 0)) << v;
    float y[64];
    dequantize_row_q8_0(b, y, 64);
    for (float f : y) EXPECT_EQ(f, 0.0f);
  }
}

// Blocks of random data at scales from 1e-6 to 1e4, with an outlier (20×) in some — below
// the largest |x| whose Q4_0 scale fits binary16 (~5.2e5).
std::vector<float> random_blocks(int blocks, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::uniform_real_distribution<float> exponent(-6.0f, 4.0f);
  std::vector<float> x;
  for (int b = 0; b < blocks; ++b) {
    const float scale = std::pow(10.0f, exponent(rng));
    for (int j = 0; j < 32; ++j) x.push_back(normal(rng) * scale);
    if (b % 3 == 0) x[x.size() - 1 - rng() % 32] = 20 * scale * (rng() % 2 ? 1.0f : -1.0f);
  }
  return x;
}

// Q8_0 error bound, per element: |x − q·d16| ≤ d/2 + 127·|d − d16| + amax·2⁻²⁰, where d =
// amax/127 is the exact-arithmetic scale, d16 its stored f16 rounding: rounding x/d to an
// integer costs at most d/2, storing d as f16 at most |q|·|d − d16| ≤ 127·|d − d16|, and the
// f32 operations (d, 1/d, x·id, q·d16) a few ulps of amax.
TEST(QuantQ8_0, ErrorWithinHalfAStepPlusScaleRounding) {
  const int blocks = 2000;
  const auto x = random_blocks(blocks, 11);
  std::vector<BlockQ8_0> q(blocks);
  std::vector<float> y(x.size());
  quantize_row_q8_0(x.data(), q.data(), int64_t(x.size()));
  dequantize_row_q8_0(q.data(), y.data(), int64_t(x.size()));
  for (int b = 0; b < blocks; ++b) {
    double amax = 0;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(double(x[b * 32 + j])));
    const double d = amax / 127, d16 = f16_to_f32(q[b].d);
    const double bound = d / 2 + 127 * std::fabs(d - d16) + amax * std::ldexp(1.0, -20);
    for (int j = 0; j < 32; ++j) {
      const size_t i = size_t(b * 32 + j);
      ASSERT_LE(std::fabs(double(x[i]) - y[i]), bound) << "block " << b << " element " << j;
      ASSERT_LE(std::abs(q[b].qs[j]), 127);
    }
  }
}

// ---- Q4_0 ----

TEST(QuantQ4_0, HandComputedBlocks) {
  // x = −8..7, then 7..−8: the first −8 has the largest |x|, so d = −8/−8 = 1 (f16 0x3C00),
  // q = x + 8: 0..15 in the low nibbles, 15..0 in the high ones → qs[j] = j | (15 − j) << 4.
  std::vector<float> x(32);
  for (int j = 0; j < 16; ++j) x[size_t(j)] = float(j - 8), x[size_t(16 + j)] = float(7 - j);
  BlockQ4_0 b{};
  quantize_row_q4_0(x.data(), &b, 32);
  const std::vector<uint8_t> want{0x00, 0x3C, 0xF0, 0xE1, 0xD2, 0xC3, 0xB4, 0xA5, 0x96, 0x87,
                                  0x78, 0x69, 0x5A, 0x4B, 0x3C, 0x2D, 0x1E, 0x0F};
  EXPECT_EQ(bytes_of(b), want);
  float y[32];
  dequantize_row_q4_0(&b, y, 32);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(y[j], x[size_t(j)]);

  // The largest magnitude positive (8, ahead of −8 at equal |x|): d = 8/−8 = −1 (0xBC00),
  // id = −1, q = int(−x + 8.5) clamped to 15: 8 → 0, −8 → 16 → 15, 0.5 → 8, −0.5 → 9,
  // 1.5 → 7, 0 → 8; x[16] = 3 → 5, x[17] = −7.4 → 15.
  std::fill(x.begin(), x.end(), 0.0f);
  x[0] = 8, x[1] = -8, x[2] = 0.5f, x[3] = -0.5f, x[4] = 1.5f, x[16] = 3, x[17] = -7.4f;
  quantize_row_q4_0(x.data(), &b, 32);
  std::vector<uint8_t> want2(18, 0x88);
  const uint8_t head[] = {0x00, 0xBC, 0x50, 0xFF, 0x88, 0x89, 0x87};
  std::copy(std::begin(head), std::end(head), want2.begin());
  EXPECT_EQ(bytes_of(b), want2);
  dequantize_row_q4_0(&b, y, 32);
  EXPECT_EQ(y[0], 8.0f);
  EXPECT_EQ(y[1], -7.0f);  // clamped: the grid reaches only 7|d| on the other side
  EXPECT_EQ(y[16], 3.0f);
}

TEST(QuantQ4_0, ZeroAndTinyBlocksEncodeAsZero) {
  // d = max/−8 is −0 for an all-zero block (f16 0x8000, as ggml stores it) and a tiny
  // negative number, stored as −0, for the tiny one; q = 8 encodes 0.
  for (const float v : {0.0f, 1e-38f}) {
    std::vector<float> x(32, 0.0f);
    x[3] = v;
    BlockQ4_0 b;
    quantize_row_q4_0(x.data(), &b, 32);
    std::vector<uint8_t> want(18, 0x88);
    want[0] = 0x00, want[1] = 0x80;
    EXPECT_EQ(bytes_of(b), want) << v;
    float y[32];
    dequantize_row_q4_0(&b, y, 32);
    for (float f : y) EXPECT_EQ(f, 0.0f);
  }
}

// Q4_0 error bound, per element, with d = max/−8 and d16 its f16 rounding: within range
// (x·id < 7.5, i.e. not clamped) |x − (q − 8)·d16| ≤ |d|/2 + 8·|d − d16| + amax·2⁻²⁰; the
// clamped elements (x·id in [7.5, 8], only on the side opposite to max) lose up to |d| instead.
TEST(QuantQ4_0, ErrorWithinHalfAStepInRange) {
  const int blocks = 2000;
  const auto x = random_blocks(blocks, 12);
  std::vector<BlockQ4_0> q(blocks);
  std::vector<float> y(x.size());
  quantize_row_q4_0(x.data(), q.data(), int64_t(x.size()));
  dequantize_row_q4_0(q.data(), y.data(), int64_t(x.size()));
  int clamped = 0;
  for (int b = 0; b < blocks; ++b) {
    double amax = 0, max = 0;
    for (int j = 0; j < 32; ++j)
      if (std::fabs(double(x[b * 32 + j])) > amax) amax = std::fabs(double(x[b * 32 + j])), max = x[b * 32 + j];
    const double d = max / -8, d16 = f16_to_f32(q[b].d);
    const double slack = 8 * std::fabs(d - d16) + amax * std::ldexp(1.0, -20);
    for (int j = 0; j < 32; ++j) {
      const size_t i = size_t(b * 32 + j);
      const bool in_range = x[i] / d < 7.5;
      clamped += !in_range;
      ASSERT_LE(std::fabs(double(x[i]) - y[i]), (in_range ? 0.5 : 1.0) * std::fabs(d) + slack)
          << "block " << b << " element " << j;
    }
  }
  EXPECT_GT(clamped, 0);  // the data exercises the clamp
}

// ---- errors ----

TEST(QuantErrors, LengthNotAMultipleOf32) {
  std::vector<float> x(64, 1.0f);
  BlockQ8_0 b8[2];
  BlockQ4_0 b4[2];
  expect_error([&] { quantize_row_q8_0(x.data(), b8, 33); }, {"quantize_row_q8_0", "n = 33"});
  expect_error([&] { quantize_row_q4_0(x.data(), b4, 31); }, {"quantize_row_q4_0", "n = 31"});
  expect_error([&] { dequantize_row_q8_0(b8, x.data(), 48); }, {"n = 48"});
  expect_error([&] { dequantize_row_q4_0(b4, x.data(), -32); }, {"n = -32"});
}

TEST(QuantErrors, NonFiniteValuesAndScaleOverflow) {
  std::vector<float> x(64, 1.0f);
  BlockQ8_0 b8[2];
  BlockQ4_0 b4[2];
  x[37] = NAN;
  expect_error([&] { quantize_row_q8_0(x.data(), b8, 64); }, {"element 37", "nan"});
  x[37] = -INFINITY;
  expect_error([&] { quantize_row_q4_0(x.data(), b4, 64); }, {"element 37", "inf"});
  // Q8_0's scale amax/127 overflows binary16 from amax ≈ 8.32e6, Q4_0's amax/8 from ≈ 5.24e5.
  x[37] = 1e7f;
  expect_error([&] { quantize_row_q8_0(x.data(), b8, 64); }, {"block 1", "beyond binary16"});
  x[37] = 8e6f;
  EXPECT_NO_THROW(quantize_row_q8_0(x.data(), b8, 64));
  expect_error([&] { quantize_row_q4_0(x.data(), b4, 64); }, {"block 1", "beyond binary16"});
}

}  // namespace
}  // namespace ffn
