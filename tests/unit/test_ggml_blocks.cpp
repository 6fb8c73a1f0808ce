// ggml's block formats beyond Q8_0 / Q4_0 (core/ggml_blocks.hpp): hand-made blocks whose
// values are worked out here from the layout (nibble order, scale packing, sub-block index,
// offsets), quantise → dequantise error bounds, rows exactly on a type's grid, hostile input,
// and Q8_K's block sums. Bit equality with ggml itself is the golden suite's
// (tests/golden/test_ggml_blocks_oracle.py, against gguf-py).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "core/ggml_blocks.hpp"
#include "core/weight_type_table.hpp"
#include "expect_error.hpp"

namespace ffn {
namespace {

using test::expect_error;

// binary16 bits of a few exact values used below.
constexpr uint16_t kH0_25 = 0x3400, kH0_5 = 0x3800, kH1 = 0x3C00, kHm2 = 0xC000;

template <class Block>
std::vector<float> dequantised(void (*dq)(const Block*, float*, int64_t), const Block& b, int64_t n) {
  std::vector<float> y(n);
  dq(&b, y.data(), n);
  return y;
}

// ---- hand-made blocks ----

TEST(GgmlBlocksDequant, Q4_1) {
  BlockQ4_1 b{};
  b.d = kH0_5;
  b.m = kHm2;
  b.qs[0] = 0x3A;   // value 0: code 10 (low nibble), value 16: code 3 (high nibble)
  b.qs[15] = 0xF0;  // value 15: code 0, value 31: code 15
  const auto y = dequantised(dequantize_row_q4_1, b, 32);
  EXPECT_EQ(y[0], 3.0f);    // 10·0.5 − 2
  EXPECT_EQ(y[16], -0.5f);  // 3·0.5 − 2
  EXPECT_EQ(y[15], -2.0f);
  EXPECT_EQ(y[31], 5.5f);  // 15·0.5 − 2
  EXPECT_EQ(y[7], -2.0f);  // code 0
}

TEST(GgmlBlocksDequant, Q5_0) {
  BlockQ5_0 b{};
  b.d = kH0_25;
  b.qs[1] = 0x7F;  // value 1: low nibble 15, value 17: high nibble 7
  b.qh[0] = 0x02;  // bit 1: value 1's fifth bit; bit 17 (value 17) stays clear
  b.qh[3] = 0x80;  // bit 31: value 31's fifth bit
  const auto y = dequantised(dequantize_row_q5_0, b, 32);
  EXPECT_EQ(y[1], 3.75f);    // (31 − 16)·0.25
  EXPECT_EQ(y[17], -2.25f);  // (7 − 16)·0.25
  EXPECT_EQ(y[31], 0.0f);    // (16 − 16)·0.25
  EXPECT_EQ(y[15], -4.0f);   // (0 − 16)·0.25
}

TEST(GgmlBlocksDequant, Q5_1) {
  BlockQ5_1 b{};
  b.d = kH1;
  b.m = kH0_5;
  b.qs[2] = 0x1F;  // value 2: low nibble 15, value 18: high nibble 1
  b.qh[0] = 0x04;  // bit 2 (value 2)
  b.qh[2] = 0x04;  // bit 18 (value 18)
  const auto y = dequantised(dequantize_row_q5_1, b, 32);
  EXPECT_EQ(y[2], 31.5f);   // 31·1 + 0.5
  EXPECT_EQ(y[18], 17.5f);  // 17·1 + 0.5
  EXPECT_EQ(y[0], 0.5f);
}

TEST(GgmlBlocksDequant, IQ4_NL) {
  BlockIQ4_NL b{};
  b.d = kH0_5;
  b.qs[0] = 0xF0;  // value 0: index 0 (−127), value 16: index 15 (113)
  b.qs[5] = 0x78;  // value 5: index 8 (1), value 21: index 7 (−10)
  const auto y = dequantised(dequantize_row_iq4_nl, b, 32);
  EXPECT_EQ(y[0], -63.5f);
  EXPECT_EQ(y[16], 56.5f);
  EXPECT_EQ(y[5], 0.5f);
  EXPECT_EQ(y[21], -5.0f);
}

// MXFP4: index bit 3 the sign, the doubled e2m1 magnitudes, the scale 2^(e − 128); e = 0, 1
// the f32 subnormals, e = 255 (OCP's NaN) 2^127 as ggml has it (ffn refuses it at load).
TEST(GgmlBlocksDequant, MXFP4) {
  BlockMXFP4 b[3]{};
  b[0].e = 130;       // d = 4
  b[0].qs[0] = 0xF7;  // value 0: index 7 (12), value 16: index 15 (−12)
  b[0].qs[3] = 0x5A;  // value 3: index 10 (−2), value 19: index 5 (6)
  b[0].qs[9] = 0x08;  // value 9: index 8 (−0), value 25: index 0 (+0)
  b[1].e = 0;
  b[1].qs[1] = 0x01;  // value 1: index 1 (1): 2^−128
  b[2].e = 255;
  b[2].qs[2] = 0x0E;  // value 2: index 14 (−8): −2^130 overflows to −Inf
  std::vector<float> y(96);
  dequantize_row_mxfp4(b, y.data(), 96);
  EXPECT_EQ(y[0], 48.0f);
  EXPECT_EQ(y[16], -48.0f);
  EXPECT_EQ(y[3], -8.0f);
  EXPECT_EQ(y[19], 24.0f);
  EXPECT_EQ(y[9], 0.0f);
  EXPECT_EQ(y[25], 0.0f);
  EXPECT_EQ(y[32 + 1], std::ldexp(1.0f, -128));
  EXPECT_EQ(y[64], 0.0f);
  EXPECT_EQ(y[64 + 2], -std::numeric_limits<float>::infinity());
  EXPECT_EQ(e8m0_half_to_f32(255), std::ldexp(1.0f, 127));
  EXPECT_EQ(e8m0_half_to_f32(1), std::ldexp(1.0f, -127));
  EXPECT_EQ(e8m0_half_to_f32(2), std::ldexp(1.0f, -126));
}

// Q2_K / Q3_K: sub-block s (16 values) reads the 2-bit fields at bit 2·((s mod 8) / 2) of
// qs[32·(s / 8) + 16·(s mod 2) + l].
TEST(GgmlBlocksDequant, Q2_K) {
  BlockQ2_K b{};
  b.d = kH1;
  b.dmin = kH0_5;
  b.scales[0] = 0x21;  // sub-block 0: scale 1, min 2
  b.scales[2] = 0x15;  // sub-block 2: scale 5, min 1
  b.scales[7] = 0x11;  // sub-block 7: scale 1, min 1
  b.scales[9] = 0x24;  // sub-block 9: scale 4, min 2
  b.qs[0] = 0x0B;      // bits 0–1: value 0 (sub-block 0) code 3; bits 2–3: value 32 (sub-block 2) code 2
  b.qs[16] = 0xC0;     // bits 6–7: value 112 (sub-block 7, l 0) code 3
  b.qs[53] = 0x01;     // bits 0–1: value 149 (sub-block 9, l 5) code 1
  const auto y = dequantised(dequantize_row_q2_K, b, 256);
  EXPECT_EQ(y[0], 2.0f);     // 1·1·3 − 0.5·2
  EXPECT_EQ(y[1], -1.0f);    // 1·1·0 − 0.5·2
  EXPECT_EQ(y[32], 9.5f);    // 1·5·2 − 0.5·1
  EXPECT_EQ(y[112], 2.5f);   // 1·1·3 − 0.5·1
  EXPECT_EQ(y[149], 3.0f);   // 1·4·1 − 0.5·2
  EXPECT_EQ(y[150], -1.0f);  // code 0 of sub-block 9
  EXPECT_EQ(y[16], 0.0f);    // sub-block 1: scale 0, min 0
}

// Q3_K: the 6-bit scale code of sub-block j has its low 4 bits in the low (j < 8) or high
// nibble of scales[j mod 8], its high 2 bits at bit 2·(j / 4) of scales[8 + j mod 4]; the high
// bit of the code of value v is bit v / 32 of hmask[v mod 32] (set: no −4 offset).
TEST(GgmlBlocksDequant, Q3_K) {
  BlockQ3_K b{};
  b.d = kH0_5;
  b.scales[0] = 0x01;  // sub-block 0: code 33 = 0b10'0001 → scale +1
  b.scales[8] = 0x02;
  b.scales[5] = 0xC0;  // sub-block 13: code 28 = 0b01'1100 → scale −4
  b.scales[9] = 0x40;
  b.qs[0] = 0x03;      // value 0: low bits 3
  b.hmask[0] = 0x01;   // value 0: high bit set
  b.qs[50] = 0x10;     // value 210 = 16·13 + 2 (qs[48 + 2], bits 4–5): low bits 1
  b.hmask[18] = 0x40;  // value 210: bit 6 of hmask[18]
  b.qs[51] = 0x20;     // value 211: low bits 2, high bit clear
  const auto y = dequantised(dequantize_row_q3_K, b, 256);
  EXPECT_EQ(y[0], 1.5f);     // 0.5·1·3
  EXPECT_EQ(y[1], -2.0f);    // 0.5·1·(0 − 4)
  EXPECT_EQ(y[210], -2.0f);  // 0.5·(−4)·1
  EXPECT_EQ(y[211], 4.0f);   // 0.5·(−4)·(2 − 4)
  EXPECT_EQ(y[16], 64.0f);   // sub-block 1: code 0 → scale −32, value code −4
}

// Q4_K / Q5_K scales: sub-block 5's 6-bit scale 19 = 0b01'0011 and min 33 = 0b10'0001 put their
// low nibbles into scales[9] and their top 2 bits into bits 6–7 of scales[1] and scales[5].
void set_k4_test_scales(uint8_t* s) {
  s[0] = 2;         // sub-block 0: scale 2
  s[4] = 4;         //              min 4
  s[1] = 0x40 | 1;  // sub-block 1: scale 1; top bits of sub-block 5's scale
  s[5] = 0x80 | 0;  // sub-block 1: min 0; top bits of sub-block 5's min
  s[9] = 0x13;      // sub-block 5: low nibbles of min (1) and scale (3)
}

TEST(GgmlBlocksDequant, Q4_K) {
  BlockQ4_K b{};
  b.d = kH1;
  b.dmin = kH0_25;
  set_k4_test_scales(b.scales);
  b.qs[0] = 0xA7;   // value 0 (sub-block 0): 7; value 32 (sub-block 1): 10
  b.qs[67] = 0x50;  // value 163 (sub-block 5, high nibble of qs[64 + 3]): 5; value 131 (sub-block 4): 0
  const auto y = dequantised(dequantize_row_q4_K, b, 256);
  EXPECT_EQ(y[0], 13.0f);     // 1·2·7 − 0.25·4
  EXPECT_EQ(y[1], -1.0f);     // code 0 of sub-block 0
  EXPECT_EQ(y[32], 10.0f);    // 1·1·10 − 0
  EXPECT_EQ(y[163], 86.75f);  // 1·19·5 − 0.25·33
  EXPECT_EQ(y[131], 0.0f);    // sub-block 4: scale 0, min 0
}

TEST(GgmlBlocksDequant, Q5_K) {
  BlockQ5_K b{};
  b.d = kH1;
  b.dmin = kH0_25;
  set_k4_test_scales(b.scales);
  b.qs[0] = 0xA7;
  b.qs[67] = 0x50;
  b.qh[0] = 0x01;  // bit 0 (sub-block 0) of value 0: +16; bit 1 (value 32) clear
  b.qh[3] = 0x20;  // bit 5 (sub-block 5) of value 163: +16
  const auto y = dequantised(dequantize_row_q5_K, b, 256);
  EXPECT_EQ(y[0], 45.0f);      // 1·2·23 − 1
  EXPECT_EQ(y[32], 10.0f);     // 1·1·10
  EXPECT_EQ(y[163], 390.75f);  // 1·19·21 − 8.25
  EXPECT_EQ(y[35], 0.0f);      // sub-block 1, code 0, min 0
}

// Q6_K: value 128h + 32k + l has its low 4 bits in nibble k / 2 of ql[64h + 32·(k mod 2) + l],
// its top 2 bits at bit 2k of qh[32h + l], its scale that of sub-block 8h + 2k + l / 16.
TEST(GgmlBlocksDequant, Q6_K) {
  BlockQ6_K b{};
  b.d = kH0_5;
  b.scales[0] = 2;
  b.scales[4] = -1;
  b.scales[15] = 3;
  b.ql[0] = 0x1F;    // value 0 (k 0): low 15; value 64 (k 2): low 1
  b.qh[0] = 0x03;    // value 0: top bits 3; value 64: top bits 0
  b.ql[116] = 0x80;  // value 244 = 128 + 96 + 20 (k 3): low 8 (high nibble of ql[64 + 32 + 20])
  b.qh[52] = 0x80;   // value 244: top bits 2 (bits 6–7 of qh[32 + 20])
  const auto y = dequantised(dequantize_row_q6_K, b, 256);
  EXPECT_EQ(y[0], 31.0f);    // 0.5·2·(63 − 32)
  EXPECT_EQ(y[64], 15.5f);   // 0.5·(−1)·(1 − 32)
  EXPECT_EQ(y[244], 12.0f);  // 0.5·3·(40 − 32)
  EXPECT_EQ(y[1], -32.0f);   // 0.5·2·(0 − 32)
}

// IQ4_XS: sub-block s's 6-bit scale code has its low 4 bits in nibble s mod 2 of scales_l[s / 2],
// its top 2 bits at bit 2s of scales_h; scale = code − 32.
TEST(GgmlBlocksDequant, IQ4_XS) {
  BlockIQ4_XS b{};
  b.d = kH0_25;
  b.scales_h = 0xAA6A;   // top bits 2 (codes 32–47) everywhere but sub-block 3 (top bits 1)
  b.scales_l[0] = 0x02;  // sub-block 0: code 34 → scale 2; sub-block 1: code 32 → scale 0
  b.qs[0] = 0xF0;        // sub-block 0: value 0 index 0 (−127), value 16 index 15 (113)
  b.qs[50] = 0x09;       // sub-block 3 (qs[48…63]): value 98 index 9 (13), value 114 index 0
  const auto y = dequantised(dequantize_row_iq4_xs, b, 256);
  EXPECT_EQ(y[0], -63.5f);    // 0.25·2·(−127)
  EXPECT_EQ(y[16], 56.5f);    // 0.25·2·113
  EXPECT_EQ(y[98], -52.0f);   // 0.25·(16 − 32)·13
  EXPECT_EQ(y[114], 508.0f);  // 0.25·(−16)·(−127)
  EXPECT_EQ(y[40], 0.0f);     // sub-block 1: scale 0
}

// ---- quantise → dequantise ----

std::vector<float> normal_row(int64_t n, uint32_t seed, float sigma = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, sigma);
  std::vector<float> x(n);
  for (auto& v : x) v = dist(rng);
  return x;
}

template <class Block>
std::vector<float> round_trip(void (*q)(const float*, Block*, int64_t), void (*dq)(const Block*, float*, int64_t),
                              const std::vector<float>& x, int64_t block_values) {
  std::vector<Block> b(x.size() / block_values);
  q(x.data(), b.data(), int64_t(x.size()));
  std::vector<float> y(x.size());
  dq(b.data(), y.data(), int64_t(x.size()));
  return y;
}

// The 32-value linear types have a guaranteed element bound: half a step of the block's grid,
// plus what the binary16 rounding of d (relative 2⁻¹¹, times at most the top code) and of the
// offset m (relative 2⁻¹¹) can add, plus a few f32 roundings.
TEST(GgmlBlocksRoundTrip, Q4_1AndQ5_1WithinHalfAStep) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    auto x = normal_row(1024, seed, seed % 2 ? 1.0f : 100.0f);
    for (int64_t i = 0; i < 1024; i += 97) x[i] += 3.0f;  // some blocks off-centre
    const auto y4 = round_trip(quantize_row_q4_1, dequantize_row_q4_1, x, 32);
    const auto y5 = round_trip(quantize_row_q5_1, dequantize_row_q5_1, x, 32);
    for (int64_t b = 0; b < 32; ++b) {
      float lo = x[32 * b], hi = x[32 * b];
      for (int j = 0; j < 32; ++j) lo = std::fmin(lo, x[32 * b + j]), hi = std::fmax(hi, x[32 * b + j]);
      for (int levels : {15, 31}) {
        const float d = (hi - lo) / float(levels);
        const float bound =
            0.5f * d + levels * d * 0x1p-11f + std::fabs(lo) * 0x1p-11f + 1e-5f * (hi - lo + std::fabs(lo));
        const auto& y = levels == 15 ? y4 : y5;
        for (int j = 0; j < 32; ++j)
          ASSERT_LE(std::fabs(y[32 * b + j] - x[32 * b + j]), bound)
              << "levels " << levels << " seed " << seed << " i " << 32 * b + j;
      }
    }
  }
}

// Q5_0 (as Q4_0): the value of largest magnitude maps to code 0, d = max/−16, so the grid
// reaches 15|d| on the other side; within it the error is half a step, beyond it |x| − 15|d|.
TEST(GgmlBlocksRoundTrip, Q5_0WithinHalfAStepInRange) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    const auto x = normal_row(1024, seed);
    const auto y = round_trip(quantize_row_q5_0, dequantize_row_q5_0, x, 32);
    for (int64_t b = 0; b < 32; ++b) {
      float amax = 0;
      for (int j = 0; j < 32; ++j) amax = std::fmax(amax, std::fabs(x[32 * b + j]));
      const float d = amax / 16;
      for (int j = 0; j < 32; ++j) {
        const float xi = x[32 * b + j];
        const float bound = std::fmax(0.5f * d, std::fabs(xi) - 15.0f * d) + 16.0f * d * 0x1p-11f + 1e-6f * amax;
        ASSERT_LE(std::fabs(y[32 * b + j] - xi), bound) << "seed " << seed << " i " << 32 * b + j;
      }
    }
  }
}

// The non-linear and super-block types pick codes by searches whose error has no simple
// element bound; what is bounded here is the row's RMS error relative to the row's RMS, on
// rows of 4096 N(0, 1) values: the worst that ggml's reference quantisers reach over 200 such
// rows, plus ~10 % margin (Q2_K 0.312, Q3_K 0.157, Q4_K 0.075, Q5_K 0.037, Q6_K 0.019,
// IQ4_NL 0.081, IQ4_XS 0.079, Q4_1 0.081, Q5_0 0.045, Q5_1 0.039; MXFP4 0.119, measured with
// gguf-py's quantiser, byte for byte ggml's). A wrong scale, code order or
// offset gives errors of order 1.
template <class Block>
void expect_relative_rms(const char* name, void (*q)(const float*, Block*, int64_t),
                         void (*dq)(const Block*, float*, int64_t), int64_t block_values, double bound) {
  for (uint32_t seed = 100; seed < 110; ++seed) {
    const auto x = normal_row(4096, seed);
    const auto y = round_trip(q, dq, x, block_values);
    double e = 0, s = 0;
    for (size_t i = 0; i < x.size(); ++i) e += double(y[i] - x[i]) * (y[i] - x[i]), s += double(x[i]) * x[i];
    EXPECT_LE(std::sqrt(e / s), bound) << name << " seed " << seed;
  }
}

TEST(GgmlBlocksRoundTrip, RelativeRmsErrorOfEveryType) {
  expect_relative_rms("q4_1", quantize_row_q4_1, dequantize_row_q4_1, 32, 0.089);
  expect_relative_rms("q5_0", quantize_row_q5_0, dequantize_row_q5_0, 32, 0.049);
  expect_relative_rms("q5_1", quantize_row_q5_1, dequantize_row_q5_1, 32, 0.043);
  expect_relative_rms("iq4_nl", quantize_row_iq4_nl, dequantize_row_iq4_nl, 32, 0.089);
  expect_relative_rms("q2_K", quantize_row_q2_K, dequantize_row_q2_K, 256, 0.343);
  expect_relative_rms("q3_K", quantize_row_q3_K, dequantize_row_q3_K, 256, 0.173);
  expect_relative_rms("q4_K", quantize_row_q4_K, dequantize_row_q4_K, 256, 0.082);
  expect_relative_rms("q5_K", quantize_row_q5_K, dequantize_row_q5_K, 256, 0.041);
  expect_relative_rms("q6_K", quantize_row_q6_K, dequantize_row_q6_K, 256, 0.021);
  expect_relative_rms("iq4_xs", quantize_row_iq4_xs, dequantize_row_iq4_xs, 256, 0.087);
  expect_relative_rms("mxfp4", quantize_row_mxfp4, dequantize_row_mxfp4, 32, 0.131);
}

// ---- rows exactly on a type's grid ----

template <class Block>
void expect_exact(const char* name, void (*q)(const float*, Block*, int64_t), void (*dq)(const Block*, float*, int64_t),
                  const std::vector<float>& x, int64_t block_values) {
  const auto y = round_trip(q, dq, x, block_values);
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(y[i], x[i]) << name << " i " << i;
}

// Random codes 0 … levels − 1, the same for the same seed whatever other tests run.
struct RandomCodes {
  std::mt19937 rng;
  explicit RandomCodes(uint32_t seed) : rng(seed) {}
  int operator()(int levels) { return int(rng() % uint32_t(levels)); }
};

// Q4_1 / Q5_1: lo + q·d with d, lo exact binary16 values and both end codes present: the
// scale (hi − lo)/levels is d itself, x − lo = q·d exactly, and (q·d)·(1/d) = q (d a power of two).
TEST(GgmlBlocksExact, LinearGridsComeBackExact) {
  RandomCodes random_code(1);
  for (int levels : {15, 31}) {
    std::vector<float> x(256);
    for (int b = 0; b < 8; ++b) {
      const float d = std::ldexp(1.0f, b - 4), lo = -1.5f * float(b + 1);
      for (int j = 0; j < 32; ++j)
        x[32 * b + j] = lo + d * float(j == 3 ? 0 : j == 9 ? levels : random_code(levels + 1));
    }
    if (levels == 15)
      expect_exact("q4_1", quantize_row_q4_1, dequantize_row_q4_1, x, 32);
    else
      expect_exact("q5_1", quantize_row_q5_1, dequantize_row_q5_1, x, 32);
  }
  // Q5_0: (q − 16)·d with code 0 (−16·d, the largest magnitude) present.
  std::vector<float> x(256);
  for (int b = 0; b < 8; ++b) {
    const float d = std::ldexp(1.0f, -b);
    for (int j = 0; j < 32; ++j) x[32 * b + j] = d * float((j == 5 ? 0 : 1 + random_code(31)) - 16);
  }
  expect_exact("q5_0", quantize_row_q5_0, dequantize_row_q5_0, x, 32);
}

// IQ4_NL: d·kIq4Values[q] with −127·d (index 0, the largest magnitude) present and d a power
// of two: the first scale max/−127 is d, every x·(1/d) is a codebook value, and the
// x²-weighted least-squares refit Σw·q·x / Σw·q² is exactly d (each numerator term is d times
// the denominator's, so both sums round alike).
TEST(GgmlBlocksExact, IQ4_NLCodebookRowsComeBackExact) {
  RandomCodes random_code(2);
  std::vector<float> x(256);
  for (int b = 0; b < 8; ++b) {
    const float d = std::ldexp(1.0f, b - 6);
    for (int j = 0; j < 32; ++j) x[32 * b + j] = d * float(kIq4Values[j == 7 ? 0 : 1 + random_code(15)]);
  }
  expect_exact("iq4_nl", quantize_row_iq4_nl, dequantize_row_iq4_nl, x, 32);
}

// IQ4_XS: sub-block s = D·l_s·kIq4Values[q] with l_0 = −32 (the largest sub-block scale,
// which sets the super-block scale to D) and every l_s a signed power of two; each sub-block's
// least-squares scale is exactly D·l_s as for IQ4_NL, its 6-bit code l_s, and re-coding
// against D·l_s finds the same indices.
TEST(GgmlBlocksExact, IQ4_XSCodebookRowsComeBackExact) {
  RandomCodes random_code(3);
  const int l[8] = {-32, 16, -8, 4, 2, -1, 8, -16};
  std::vector<float> x(512);
  for (int sb = 0; sb < 2; ++sb)
    for (int s = 0; s < 8; ++s) {
      const float scale = std::ldexp(1.0f, -7 - sb) * float(l[s]);
      for (int j = 0; j < 32; ++j)
        x[256 * sb + 32 * s + j] = scale * float(kIq4Values[j == 11 ? 0 : 1 + random_code(15)]);
    }
  expect_exact("iq4_xs", quantize_row_iq4_xs, dequantize_row_iq4_xs, x, 256);
}

// MXFP4: d·kMxfp4Values[q] with ±12·d (the largest magnitude) present and d a power of two:
// floor(log2 12d) − 2 + 127 = log2 d + 128 is d's exponent, and every x is a codebook value
// times d (error 0, found exactly). Blocks whose largest |x| is below 2^−125 take e = 0.
TEST(GgmlBlocksExact, MXFP4CodebookRowsComeBackExact) {
  RandomCodes random_code(4);
  std::vector<float> x(256);
  for (int b = 0; b < 8; ++b) {
    const float d = std::ldexp(1.0f, 3 * b - 12);
    for (int j = 0; j < 32; ++j) x[32 * b + j] = d * float(kMxfp4Values[j == 13 ? 7 + 8 * (b % 2) : random_code(16)]);
  }
  expect_exact("mxfp4", quantize_row_mxfp4, dequantize_row_mxfp4, x, 32);
  std::vector<float> tiny(32, 1e-39f);
  tiny[4] = -2e-38f;  // 2^−125.2: floor(log2) − 2 + 127 = −1
  BlockMXFP4 b;
  quantize_row_mxfp4(tiny.data(), &b, 32);
  EXPECT_EQ(b.e, 0);
  EXPECT_EQ(b.qs[4] & 0x0F, 13);  // −2e-38 = −6.8·2^−128: −6 (index 13) the nearest
}

// Q6_K / Q3_K (symmetric): x = d·sc_s·(q − offset) with a code −offset (the largest magnitude)
// in every sub-block, every d·sc_s a power of two, and the largest |sc| at the type's end
// (Q6_K: −128, Q3_K: −32), so that the super-block scale is d: each sub-block's least-squares
// scale is exactly d·sc_s, its code sc_s, and re-coding divides exactly.
TEST(GgmlBlocksExact, Q6_KAndQ3_KGridRowsComeBackExact) {
  RandomCodes random_code(4);
  {
    const int sc[16] = {-128, 64, -32, 16, 8, -4, 2, 1, -64, 32, 16, -8, 4, 2, -1, 1};
    std::vector<float> x(256);
    for (int s = 0; s < 16; ++s)
      for (int j = 0; j < 16; ++j)
        x[16 * s + j] = 0x1p-10f * float(sc[s]) * float((j == 2 ? 0 : 1 + random_code(63)) - 32);
    expect_exact("q6_K", quantize_row_q6_K, dequantize_row_q6_K, x, 256);
  }
  {
    const int sc[16] = {-32, 16, -8, 4, 2, -1, 1, 8, -16, 16, 4, -2, 1, 2, -4, 8};
    std::vector<float> x(256);
    for (int s = 0; s < 16; ++s)
      for (int j = 0; j < 16; ++j)
        x[16 * s + j] = 0x1p-6f * float(sc[s]) * float((j == 4 ? 0 : 1 + random_code(7)) - 4);
    expect_exact("q3_K", quantize_row_q3_K, dequantize_row_q3_K, x, 256);
  }
}

// Q2_K / Q4_K / Q5_K (asymmetric): every sub-block on the same grid s·q − m with both end codes
// present, s = top·d and m = top·dmin (top = 15 or 63, the scale codes' maximum) for powers of
// two d, dmin: the first grid of the search already fits (error ~0), the super-block scales
// round back to d and dmin in binary16, every scale and min code is top, and re-coding against
// d·top and dmin·top divides exactly.
TEST(GgmlBlocksExact, KQuantGridRowsComeBackExact) {
  RandomCodes random_code(5);
  auto row = [&](int sub, int levels, float s, float m) {
    std::vector<float> x(512);
    for (size_t i = 0; i < x.size(); ++i) {
      const int j = int(i % size_t(sub));
      const int q = j == 1 ? 0 : j == 6 ? levels : random_code(levels + 1);
      x[i] = s * float(q) - m;
    }
    return x;
  };
  expect_exact("q2_K", quantize_row_q2_K, dequantize_row_q2_K, row(16, 3, 15 * 0x1p-4f, 15 * 0x1p-5f), 256);
  expect_exact("q4_K", quantize_row_q4_K, dequantize_row_q4_K, row(32, 15, 63 * 0x1p-6f, 63 * 0x1p-7f), 256);
  expect_exact("q5_K", quantize_row_q5_K, dequantize_row_q5_K, row(32, 31, 63 * 0x1p-8f, 63 * 0x1p-7f), 256);
}

// All-zero rows encode as blocks that decode to zeros, for every type.
TEST(GgmlBlocksExact, ZeroRowsDecodeToZero) {
  const std::vector<float> x(512, 0.0f);
  expect_exact("q4_1", quantize_row_q4_1, dequantize_row_q4_1, x, 32);
  expect_exact("q5_0", quantize_row_q5_0, dequantize_row_q5_0, x, 32);
  expect_exact("q5_1", quantize_row_q5_1, dequantize_row_q5_1, x, 32);
  expect_exact("iq4_nl", quantize_row_iq4_nl, dequantize_row_iq4_nl, x, 32);
  expect_exact("q2_K", quantize_row_q2_K, dequantize_row_q2_K, x, 256);
  expect_exact("q3_K", quantize_row_q3_K, dequantize_row_q3_K, x, 256);
  expect_exact("q4_K", quantize_row_q4_K, dequantize_row_q4_K, x, 256);
  expect_exact("q5_K", quantize_row_q5_K, dequantize_row_q5_K, x, 256);
  expect_exact("q6_K", quantize_row_q6_K, dequantize_row_q6_K, x, 256);
  expect_exact("iq4_xs", quantize_row_iq4_xs, dequantize_row_iq4_xs, x, 256);
  expect_exact("mxfp4", quantize_row_mxfp4, dequantize_row_mxfp4, x, 32);
}

// Every weight type of the list, through its codec as the table holds it: an all-zero row
// decodes to zeros.
TEST(GgmlBlocksExact, ZeroRowsDecodeToZeroForEveryTypeOfTheList) {
  for (const WeightTypeInfo& t : weight_types()) {
    const auto& traits = weight_type_traits(t.type);
    const std::vector<float> x(512, 0.0f);
    std::vector<std::byte> bytes(size_t(t.row_bytes(512)));
    std::vector<float> y(512, 1.0f);
    traits.from_f32(x.data(), bytes.data(), 512);
    traits.to_f32(bytes.data(), y.data(), 512);
    for (size_t i = 0; i < y.size(); ++i) ASSERT_EQ(y[i], 0.0f) << t.name << " value " << i;
  }
}

// ---- the ternary types (BitNet b1.58): TQ1_0, TQ2_0 ----

// A hand-made TQ2_0 block: value 128h + 32l + m is bits 2l … of qs[32h + m], minus 1, times d.
TEST(GgmlBlocksDequant, TQ2_0) {
  BlockTQ2_0 b{};
  b.d = kH0_5;
  b.qs[0] = 0b00'01'10'00;   // values 0, 32, 64, 96: codes 0, 2, 1, 0 → −1, 1, 0, −1
  b.qs[33] = 0b10'00'00'10;  // values 129, 161, 193, 225: codes 2, 0, 0, 2
  const auto y = dequantised(dequantize_row_tq2_0, b, 256);
  EXPECT_EQ(y[0], -0.5f);
  EXPECT_EQ(y[32], 0.5f);
  EXPECT_EQ(y[64], 0.0f);
  EXPECT_EQ(y[96], -0.5f);
  EXPECT_EQ(y[129], 0.5f);
  EXPECT_EQ(y[161], -0.5f);
  EXPECT_EQ(y[193], -0.5f);
  EXPECT_EQ(y[225], 0.5f);
  EXPECT_EQ(y[1], -0.5f);  // code 0 elsewhere
}

// A hand-made TQ1_0 block: five base-3 digits a byte of qs (value m + 32n for bytes 0 … 31,
// 160 + m + 16n for 32 … 47), four of qh (240 + j + 4n), the first digit most significant,
// each byte ⌈digits·256/243⌉.
TEST(GgmlBlocksDequant, TQ1_0) {
  BlockTQ1_0 b{};
  b.d = kH1;
  auto pack = [](std::initializer_list<int> digits, int pad) {
    int v = 0;
    for (int d : digits) v = v * 3 + d;
    for (int i = 0; i < pad; ++i) v *= 3;
    return uint8_t((v * 256 + 242) / 243);
  };
  for (int m = 0; m < 32; ++m) b.qs[m] = pack({1, 1, 1, 1, 1}, 0);  // zeros
  for (int m = 0; m < 16; ++m) b.qs[32 + m] = pack({1, 1, 1, 1, 1}, 0);
  for (int j = 0; j < 4; ++j) b.qh[j] = pack({1, 1, 1, 1}, 1);
  b.qs[5] = pack({2, 0, 1, 2, 0}, 0);   // values 5, 37, 69, 101, 133: 1, −1, 0, 1, −1
  b.qs[40] = pack({0, 2, 2, 1, 0}, 0);  // values 168, 184, 200, 216, 232: −1, 1, 1, 0, −1
  b.qh[2] = pack({2, 0, 1, 2}, 1);      // values 242, 246, 250, 254: 1, −1, 0, 1
  const auto y = dequantised(dequantize_row_tq1_0, b, 256);
  const std::vector<std::pair<int, float>> want = {{5, 1},   {37, -1}, {69, 0},  {101, 1},  {133, -1}, {168, -1},
                                                   {184, 1}, {200, 1}, {216, 0}, {232, -1}, {242, 1},  {246, -1},
                                                   {250, 0}, {254, 1}, {0, 0},   {255, 0}};
  for (const auto& [i, v] : want) EXPECT_EQ(y[size_t(i)], v) << "value " << i;
}

// Rows of d·{−1, 0, 1} with d a power of two (and the block's largest |x| = d) come back
// exactly; on N(0, 1) rows the relative RMS error is what rounding to d·{−1, 0, 1}, d the
// block's largest |x|, gives: 0.80–0.82 measured (a BitNet model's weights are trained on this
// grid; a Gaussian row is not), bounded here by 0.85.
TEST(GgmlBlocksExact, TernaryGridRowsComeBackExact) {
  RandomCodes random_code(5);
  std::vector<float> x(512);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0x1p-5f * float(i % 256 == 7 ? 1 : random_code(3) - 1);
  expect_exact("tq1_0", quantize_row_tq1_0, dequantize_row_tq1_0, x, 256);
  expect_exact("tq2_0", quantize_row_tq2_0, dequantize_row_tq2_0, x, 256);
  expect_relative_rms("tq1_0", quantize_row_tq1_0, dequantize_row_tq1_0, 256, 0.85);
  expect_relative_rms("tq2_0", quantize_row_tq2_0, dequantize_row_tq2_0, 256, 0.85);
}

// ---- Q8_K ----

// bsums are the sums of 16 consecutive codes; d·qs reconstructs every x within half a step
// (d = max/−127 in f32, no binary16 rounding), and the value of largest magnitude exactly.
TEST(GgmlBlocksQ8_K, BlockSumsAndHalfStepReconstruction) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    auto x = normal_row(1024, seed, seed % 3 ? 1.0f : 1e-3f);
    if (seed == 5) std::fill(x.begin() + 256, x.begin() + 512, 0.0f);  // an all-zero block
    std::vector<BlockQ8_K> b(4);
    quantize_row_q8_K(x.data(), b.data(), 1024);
    for (int k = 0; k < 4; ++k) {
      float amax = 0;
      for (int j = 0; j < 256; ++j) amax = std::fmax(amax, std::fabs(x[256 * k + j]));
      EXPECT_NEAR(std::fabs(b[k].d), amax / 127, amax * 1e-6f) << seed;
      for (int g = 0; g < 16; ++g) {
        int sum = 0;
        for (int j = 0; j < 16; ++j) sum += b[k].qs[16 * g + j];
        EXPECT_EQ(b[k].bsums[g], sum) << "seed " << seed << " block " << k << " group " << g;
      }
      for (int j = 0; j < 256; ++j) {
        const float xi = x[256 * k + j];
        ASSERT_LE(std::fabs(b[k].d * float(b[k].qs[j]) - xi), 0.5f * std::fabs(b[k].d) * (1 + 1e-5f) + 1e-7f * amax)
            << "seed " << seed << " i " << 256 * k + j;
        if (std::fabs(xi) == amax && amax > 0) {
          EXPECT_EQ(std::abs(int(b[k].qs[j])), 127);
        }
      }
    }
  }
}

// ---- hostile input ----

TEST(GgmlBlocksErrors, LengthNotAMultipleOfTheBlock) {
  std::vector<float> x(512, 1.0f), y(512);
  std::vector<uint8_t> raw(4096);
  expect_error([&] { quantize_row_q4_K(x.data(), reinterpret_cast<BlockQ4_K*>(raw.data()), 100); },
               {"quantize_row_q4_K", "n = 100", "256"});
  expect_error([&] { quantize_row_q6_K(x.data(), reinterpret_cast<BlockQ6_K*>(raw.data()), 288); },
               {"quantize_row_q6_K", "n = 288"});
  expect_error([&] { quantize_row_q4_1(x.data(), reinterpret_cast<BlockQ4_1*>(raw.data()), 33); },
               {"quantize_row_q4_1", "n = 33", "32"});
  expect_error([&] { quantize_row_q8_K(x.data(), reinterpret_cast<BlockQ8_K*>(raw.data()), -256); },
               {"quantize_row_q8_K", "n = -256"});
  expect_error([&] { dequantize_row_q5_K(reinterpret_cast<const BlockQ5_K*>(raw.data()), y.data(), 255); },
               {"dequantize_row_q5_K", "n = 255"});
  expect_error([&] { dequantize_row_iq4_nl(reinterpret_cast<const BlockIQ4_NL*>(raw.data()), y.data(), 31); },
               {"dequantize_row_iq4_nl", "n = 31"});
  expect_error([&] { quantize_row_mxfp4(x.data(), reinterpret_cast<BlockMXFP4*>(raw.data()), 48); },
               {"quantize_row_mxfp4", "n = 48", "32"});
}

TEST(GgmlBlocksErrors, NonFiniteValuesNameTheElement) {
  std::vector<uint8_t> raw(4096);
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                    -std::numeric_limits<float>::infinity()}) {
    std::vector<float> x(512, 0.5f);
    x[300] = bad;
    expect_error([&] { quantize_row_q4_K(x.data(), reinterpret_cast<BlockQ4_K*>(raw.data()), 512); },
                 {"quantize_row_q4_K", "element 300"});
    expect_error([&] { quantize_row_q2_K(x.data(), reinterpret_cast<BlockQ2_K*>(raw.data()), 512); },
                 {"quantize_row_q2_K", "element 300"});
    expect_error([&] { quantize_row_iq4_xs(x.data(), reinterpret_cast<BlockIQ4_XS*>(raw.data()), 512); },
                 {"quantize_row_iq4_xs", "element 300"});
    expect_error([&] { quantize_row_q5_0(x.data(), reinterpret_cast<BlockQ5_0*>(raw.data()), 512); },
                 {"quantize_row_q5_0", "element 300"});
    expect_error([&] { quantize_row_iq4_nl(x.data(), reinterpret_cast<BlockIQ4_NL*>(raw.data()), 512); },
                 {"quantize_row_iq4_nl", "element 300"});
    expect_error([&] { quantize_row_mxfp4(x.data(), reinterpret_cast<BlockMXFP4*>(raw.data()), 512); },
                 {"quantize_row_mxfp4", "element 300"});
    expect_error([&] { quantize_row_q8_K(x.data(), reinterpret_cast<BlockQ8_K*>(raw.data()), 512); },
                 {"quantize_row_q8_K", "element 300"});
  }
}

// Every block type of the list, through its codec as the table holds it: a row whose length
// is not a multiple of the block, and a non-finite value, are errors naming them; so is a
// block whose binary16 scale would overflow (not MXFP4, whose e8m0 scale reaches 2¹²⁷).
TEST(GgmlBlocksErrors, EveryBlockTypeOfTheListNamesBadInput) {
  for (const WeightTypeInfo& t : weight_types()) {
    if (t.block_elements == 1) continue;
    const auto& traits = weight_type_traits(t.type);
    const int64_t n = 2 * t.block_elements;
    std::vector<std::byte> bytes(size_t(t.row_bytes(n) + t.block_bytes));
    std::vector<float> x(size_t(n + t.block_elements), 0.5f);
    const std::string length = "n = " + std::to_string(n + 1),
                      element = "element " + std::to_string(t.block_elements + 3);
    expect_error([&] { traits.from_f32(x.data(), bytes.data(), n + 1); }, {length.c_str()});
    x[size_t(t.block_elements + 3)] = std::numeric_limits<float>::quiet_NaN();
    expect_error([&] { traits.from_f32(x.data(), bytes.data(), n); }, {element.c_str()});
    x[size_t(t.block_elements + 3)] = 1e9f;
    if (t.type != WeightType::mxfp4)
      expect_error([&] { traits.from_f32(x.data(), bytes.data(), n); }, {"block 1", "beyond binary16"});
  }
}

// A block whose scale (or Q4_1 / Q5_1's offset) does not fit binary16 is an error naming the
// block; so is |x| beyond 1e10, where the searches' sums of cubes would overflow f32.
TEST(GgmlBlocksErrors, ScaleBeyondBinary16) {
  std::vector<uint8_t> raw(4096);
  std::vector<float> x(512, 0.5f);
  x[260] = 1e9f;  // block 1 of the super-block types
  expect_error([&] { quantize_row_q4_K(x.data(), reinterpret_cast<BlockQ4_K*>(raw.data()), 512); },
               {"quantize_row_q4_K", "block 1", "beyond binary16"});
  expect_error([&] { quantize_row_q6_K(x.data(), reinterpret_cast<BlockQ6_K*>(raw.data()), 512); },
               {"quantize_row_q6_K", "block 1", "beyond binary16"});
  expect_error([&] { quantize_row_q3_K(x.data(), reinterpret_cast<BlockQ3_K*>(raw.data()), 512); },
               {"quantize_row_q3_K", "block 1", "beyond binary16"});
  x[260] = 1e20f;
  expect_error([&] { quantize_row_q6_K(x.data(), reinterpret_cast<BlockQ6_K*>(raw.data()), 512); },
               {"quantize_row_q6_K", "block 1", "beyond binary16"});
  expect_error([&] { quantize_row_iq4_xs(x.data(), reinterpret_cast<BlockIQ4_XS*>(raw.data()), 512); },
               {"quantize_row_iq4_xs", "block 1", "beyond binary16"});
  std::vector<float> y(64, 1.0f);
  y[0] = -7e4f;  // block 0: d = 70001/15 fits binary16, the offset (the minimum) −70000 does not
  expect_error([&] { quantize_row_q4_1(y.data(), reinterpret_cast<BlockQ4_1*>(raw.data()), 64); },
               {"quantize_row_q4_1", "block 0", "beyond binary16"});
}

}  // namespace
}  // namespace ffn
