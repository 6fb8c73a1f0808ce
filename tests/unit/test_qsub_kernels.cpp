// The qsub panel kernels (kernels/qsub_panels.hpp: the K-quants, Q4_1 / Q5_0 / Q5_1, the
// codebook types, the ternary types — every qsub type of the list), every one registered on
// every ISA this CPU supports:
//   bit-identical to the scalar kernel (qsub_panels.hpp fixes every operation; the integer
//     sums are exact) and within
//     (K/block + 4)·u·Σ(|ŵ·x̂| + |dmin·m·x̂|) of the double-precision dot product of the
//     dequantised weights ŵ and activations x̂: per super-block the kernel rounds d·d_x,
//     float(I) and one FMA (and the same for the mins term, whose magnitude the second sum
//     covers: the mins cancel against d·I, so Σ|ŵ·x̂| alone can be far smaller), and the
//     chain adds K/block rounded terms (blocks of 256 for the K-quants, IQ4_XS and the
//     ternary types, 32 for Q4_1 / Q5_0 / Q5_1 / IQ4_NL / MXFP4);
//   the unpacking of each type's blocks into the panels' integers (unpack<W>): ggml's values;
//   q8_K activations: ggml's q8_K (−127 at the value of largest magnitude, sums of 16).
// Weights are random well-formed blocks (random bytes, binary16 scales set to moderate
// values, MXFP4's e8m0 exponents to moderate or, one block in 16, subnormal scales), so every
// scale, min, nibble and high bit pattern occurs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <optional>
#include <random>
#include <vector>

#include "core/codecs.hpp"
#include "core/quant.hpp"
#include "core/weight_type_table.hpp"
#include "ffn/error.hpp"
#include "isa_param.hpp"
#include "kernels/kernels.hpp"
#include "kernels/panel_kernels.hpp"
#include "panel_support.hpp"
#include "random_data.hpp"

namespace ffn {
namespace {

using kernels::PanelFamily;
constexpr double kU = 0x1p-24;

// Every qsub type of the list.
const std::vector<WeightType> kQSubTypes = [] {
  std::vector<WeightType> v;
  kernels::for_each_type_of<PanelFamily::qsub>([&]<WeightType W>() { v.push_back(W); });
  return v;
}();

// unpack<W> of the qsub type t.
void unpack_block(WeightType t, const std::byte* block, SubBlockInts& out) {
  kernels::for_each_type_of<PanelFamily::qsub>([&]<WeightType W>() {
    if (W == t) unpack<W>(block, out);
  });
}

// N rows of K weights of type t: random bytes, the binary16 scales replaced by values in
// [2⁻¹⁰, 2⁻⁷] (MXFP4's e8m0 exponents: 2^(e − 128) in [2⁻¹², 2⁻⁸], or e in 0 … 2, the scales
// 2⁻¹²⁸ … 2⁻¹²⁶ whose f32 is subnormal or the smallest normal, in one block of 16), and the
// values they stand for.
struct StoredRows {
  std::vector<std::byte> bytes;
  int64_t row_bytes;
  std::vector<float> values;  // [N][K]
  std::vector<float> mins;    // [N][K]: dmin·m of each value's sub-block
};

// With `fill`, every byte but the binary16 and e8m0 scales is that byte instead of random.
StoredRows random_rows(WeightType t, int64_t N, int64_t K, uint32_t seed, std::optional<std::byte> fill = {}) {
  const auto& info = weight_type_info(t);
  StoredRows s{std::vector<std::byte>(size_t(N * info.row_bytes(K))), info.row_bytes(K),
               std::vector<float>(size_t(N * K)), std::vector<float>(size_t(N * K))};
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> scale(0x1p-10f, 0x1p-7f);
  for (auto& b : s.bytes) b = fill ? *fill : std::byte(gen() & 0xFF);
  const bool e8m0 = weight_type_traits(t).format.e8m0;
  for (int64_t blk = 0; blk < N * K / info.block_elements; ++blk)
    for (int off : weight_type_traits(t).scale_fields) {
      if (off < 0) continue;
      if (e8m0) {
        const uint32_t r = gen();
        s.bytes[size_t(blk * info.block_bytes + off)] = std::byte(r % 16 == 0 ? r / 16 % 3 : 116 + r / 16 % 5);
        continue;
      }
      const uint16_t h = f32_to_f16(scale(gen));
      std::memcpy(s.bytes.data() + blk * info.block_bytes + off, &h, 2);
    }
  const kernels::QFormat f = kernels::q_format(t);
  for (int64_t n = 0; n < N; ++n) {
    weight_type_traits(t).to_f32(s.bytes.data() + n * s.row_bytes, s.values.data() + n * K, K);
    for (int64_t b = 0; b < K / f.block; ++b) {
      SubBlockInts ints;
      unpack_block(t, s.bytes.data() + n * s.row_bytes + b * info.block_bytes, ints);
      for (int64_t i = 0; i < f.block; ++i)
        s.mins[size_t(n * K + b * f.block + i)] = f16_to_f32(ints.dmin) * float(ints.m[i / f.sub]);
    }
  }
  return s;
}

// x quantised as the qsub kernels of type t take it (q8_K for blocks of 256, q8_0 for 32).
test::Activations quantise(WeightType t, int64_t T, int64_t K, const std::vector<float>& x) {
  return test::quantise(kernels::q_activations(t), T, K, x);
}

// The panel of rows [0, N) of w.
test::Panel panel_of(WeightType t, const StoredRows& w, int64_t N, int64_t K) {
  return test::pack(t, w.bytes.data(), w.row_bytes, N, K);
}

// The scalar reference of type t's panel kernel.
kernels::PanelGemm reference(WeightType t) { return kernels::kernel_table(Isa::scalar).panel(t).fn; }

// Largest |C[t][n] − Σ ŵ·x̂| / ((K/block + 4)·u·Σ(|ŵ·x̂| + |min·x̂|)) (> 1: outside the bound).
double worst_ratio(WeightType t, int64_t T, int64_t N, int64_t K, const std::vector<float>& x, const StoredRows& w,
                   const std::vector<float>& values, const std::vector<float>& c, int64_t ldc) {
  const int64_t chain = K / kernels::q_format(t).block + 4;
  double worst = 0;
  for (int64_t r = 0; r < T; ++r)
    for (int64_t n = 0; n < N; ++n) {
      double exact = 0, mag = 0;
      for (int64_t k = 0; k < K; ++k) {
        const double a = x[size_t(r * K + k)];
        exact += a * values[size_t(n * K + k)];
        mag += std::fabs(a * values[size_t(n * K + k)]) + std::fabs(a * w.mins[size_t(n * K + k)]);
      }
      const double err = std::fabs(double(c[size_t(r * ldc + n)]) - exact);
      worst = std::max(worst, err == 0 ? 0.0 : err / (double(chain) * kU * mag));
    }
  return worst;
}

// The panels' integers (unpack<W>) are ggml's values: on random well-formed blocks,
// dl·(q − offset) − dml with dl = d·sc and dml = dmin·m per sub-block (the arithmetic of
// ggml's dequantize_row_q*_K, exact products) equals the dequantiser of core/ggml_blocks_{32,k}.cpp
// (checked against ggml and gguf-py) bit for bit — a wrong nibble, high-bit or scale index
// in the unpacking changes values.
TEST(QSubPack, IntegersReproduceGgmlsDequantisation) {
  for (WeightType t : kQSubTypes) {
    const int64_t N = 7, K = 1024;
    const StoredRows w = random_rows(t, N, K, 11);
    const kernels::QFormat f = kernels::q_format(t);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t b = 0; b < K / f.block; ++b) {
        SubBlockInts s;
        unpack_block(t, w.bytes.data() + n * w.row_bytes + b * weight_type_info(t).block_bytes, s);
        for (int64_t i = 0; i < f.block; ++i) {
          const int u = int(i / f.sub);
          const float d = f.e8m0 ? e8m0_half_to_f32(uint8_t(s.d)) : f16_to_f32(s.d);
          const float dl = d * float(s.sc[u]), dml = f16_to_f32(s.dmin) * float(s.m[u]);
          // The codebook types' panel integer is the nibble; its value the codebook's entry.
          const int q = f.has_codebook() ? f.codebook_values()[s.q[i]] : int(s.q[i]) - f.offset;
          const float scaled = dl * float(q);
          const float value = f.has_min ? scaled - dml : scaled;
          const float want = w.values[size_t(n * K + b * f.block + i)];
          ASSERT_EQ(std::memcmp(&value, &want, 4), 0) << weight_type_name(t) << " row " << n << " block " << b
                                                      << " value " << i << ": " << value << " against " << want;
        }
      }
  }
}

class QSubKernels : public testing::TestWithParam<Isa> {};

const std::vector<PanelFamily> kQSub = test::checks_panels({PanelFamily::qsub});

TEST_P(QSubKernels, EqualScalarBitForBitAndAreWithinBound) {
  for (const test::RegisteredPanel& panel : test::registered_panels(GetParam(), kQSub))
    for (int64_t K : {256, 512, 2304})
      for (int64_t N : {1, 31, 64})
        // 3 and more super-block by super-block; from 8, strips of 4 over half panels where a
        // kernel has them, then of 2 and 1 (9, 11)
        for (int64_t T : {1, 2, 3, 4, 5, 8, 9, 11}) {
          const WeightType t = panel.type;
          const StoredRows w = random_rows(t, N, K, uint32_t(K + N + 1));
          const test::Activations x = quantise(t, T, K, test::random_vector(size_t(T * K), uint32_t(T + 3)));
          const test::Panel packed = panel_of(t, w, N, K);
          std::vector<float> c(size_t(T * 64), std::nanf("")), ref(size_t(T * 64));  // NaN: a row left unwritten fails
          panel.kernel->fn(T, K, x.rows, packed.data(), c.data(), 64);
          reference(t)(T, K, x.rows, packed.data(), ref.data(), 64);
          const std::string where =
              panel.kernel->name + " K=" + std::to_string(K) + " N=" + std::to_string(N) + " T=" + std::to_string(T);
          for (int64_t r = 0; r < T; ++r)
            for (int64_t n = 0; n < N; ++n) ASSERT_EQ(c[size_t(r * 64 + n)], ref[size_t(r * 64 + n)]) << where;
          EXPECT_LE(worst_ratio(t, T, N, K, x.values, w, w.values, c, 64), 1.0) << where;
        }
}

// The integer sums at their largest: every code, scale, min and high bit at its largest
// (bytes 0xFF; 0x00 and 0x77 for the codebooks, whose largest |q| are IQ4's entry 0, −127, and
// MXFP4's entry 7, 12) against activations all −127 or all +127. The AVX2 kernels add up to 8
// vpmaddubsw outputs in int16 before widening them (Q4_K: 8·2·15·127 = 30480, Q6_K:
// 2·2·63·127 = 32004, just below 2¹⁵), so one output more than a type's bound allows wraps
// and breaks the bit-for-bit equality; random rows stay far below the bound.
TEST_P(QSubKernels, IntegerSumsAtTheirLargestEqualScalar) {
  const int64_t K = 512, N = 64;
  for (const test::RegisteredPanel& panel : test::registered_panels(GetParam(), kQSub))
    for (std::byte fill : {std::byte{0xFF}, std::byte{0x00}, std::byte{0x77}})
      for (float sign : {1.0f, -1.0f})
        for (int64_t T : {1, 2, 3, 4, 8, 9}) {
          const WeightType t = panel.type;
          const StoredRows w = random_rows(t, N, K, uint32_t(K + T), fill);
          // q8_K puts −127 at the value of largest magnitude: all −127 for +1, all +127 for −1.
          const test::Activations x = quantise(t, T, K, std::vector<float>(size_t(T * K), sign));
          const test::Panel packed = panel_of(t, w, N, K);
          std::vector<float> c(size_t(T * 64), std::nanf("")), ref(size_t(T * 64));
          panel.kernel->fn(T, K, x.rows, packed.data(), c.data(), 64);
          reference(t)(T, K, x.rows, packed.data(), ref.data(), 64);
          for (int64_t r = 0; r < T; ++r)
            for (int64_t n = 0; n < N; ++n)
              ASSERT_EQ(c[size_t(r * 64 + n)], ref[size_t(r * 64 + n)])
                  << panel.kernel->name << " fill " << int(fill) << " x " << -127 * sign << " T=" << T;
        }
}

// K = 0 (no values): every kernel writes C = 0 for each token, whichever path its T takes,
// and nothing beyond the T rows. C starts as NaN, so a row left unwritten fails. T = 0 too
// (the contract's T ≥ 0): nothing written.
TEST_P(QSubKernels, WithNoValuesWriteZeros) {
  for (const test::RegisteredPanel& panel : test::registered_panels(GetParam(), kQSub))
    for (int64_t T : {0, 1, 2, 3, 9})
      EXPECT_EQ(test::error_with_no_values(*panel.kernel, T), "") << panel.kernel->name << " T=" << T;
}

FFN_INSTANTIATE_FOR_EVERY_ISA(QSubKernels);

// The bound is tight enough to see a wrong sub-block order, a lost scale or a lost min:
// the same products against values with the halves of each sub-block pair swapped, one
// sub-block's scale changed, or the mins dropped are far outside it.
TEST(QSubKernels, BoundCatchesValueOrderScalesAndMins) {
  const int64_t T = 3, N = 5, K = 512;
  for (WeightType t : kQSubTypes) {
    const StoredRows w = random_rows(t, N, K, 7);
    const test::Activations x = quantise(t, T, K, test::random_vector(size_t(T * K), 8));
    const test::Panel panel = panel_of(t, w, N, K);
    std::vector<float> c(size_t(T * 64));
    reference(t)(T, K, x.rows, panel.data(), c.data(), 64);
    ASSERT_LE(worst_ratio(t, T, N, K, x.values, w, w.values, c, 64), 1.0) << weight_type_name(t);
    const int sub = kernels::q_format(t).sub;
    std::vector<float> swapped = w.values, rescaled = w.values, no_mins = w.values;
    for (int64_t i = 0; i < N * K; i += 2 * sub)
      for (int64_t j = 0; j < sub; ++j) std::swap(swapped[size_t(i + j)], swapped[size_t(i + j + sub)]);
    for (int64_t i = 0; i < N * K; ++i) {
      if ((i / sub) % 8 == 3) rescaled[size_t(i)] *= 1.25f;
      no_mins[size_t(i)] += w.mins[size_t(i)];
    }
    EXPECT_GT(worst_ratio(t, T, N, K, x.values, w, swapped, c, 64), 100.0) << weight_type_name(t);
    EXPECT_GT(worst_ratio(t, T, N, K, x.values, w, rescaled, c, 64), 100.0) << weight_type_name(t);
    if (kernels::q_format(t).has_min) {
      EXPECT_GT(worst_ratio(t, T, N, K, x.values, w, no_mins, c, 64), 100.0) << weight_type_name(t);
    }
  }
}

// MXFP4's smallest scales (e = 0, 1: 2^−128, 2^−127, subnormal in f32; e = 2: the smallest
// normal 2^−126), every block of the panel one of them: the vector kernels' e8m0 conversion
// must give the scalar kernel's bits, and the result must still be the dot product — within
// 1e-3 of Σ|ŵ·x̂|, since d·d_x is then a subnormal with fewer than 24 significant bits
// (relative error up to 2^−(149 − 135) ≈ 6e-5 for |d_x| ≈ 2⁻⁷). In the random rows above
// such blocks are drowned by the normal ones, so a vector kernel mapping them to 0 would pass
// there.
TEST_P(QSubKernels, Mxfp4SubnormalScalesMatchTheScalarKernel) {
  const WeightType t = WeightType::mxfp4;
  const int64_t T = 3, N = 64, K = 512;
  StoredRows w = random_rows(t, N, K, 5);
  for (int64_t b = 0; b < N * K / 32; ++b) w.bytes[size_t(b * 17)] = std::byte(b % 3);
  for (int64_t n = 0; n < N; ++n)
    weight_type_traits(t).to_f32(w.bytes.data() + n * w.row_bytes, w.values.data() + n * K, K);
  const test::Activations x = quantise(t, T, K, test::random_vector(size_t(T * K), 6));
  const test::Panel panel = panel_of(t, w, N, K);
  std::vector<float> ref(size_t(T * 64));
  reference(t)(T, K, x.rows, panel.data(), ref.data(), 64);
  for (int64_t r = 0; r < T; ++r)
    for (int64_t n = 0; n < N; ++n) {
      double exact = 0, mag = 0;
      for (int64_t k = 0; k < K; ++k) {
        const double v = double(x.values[size_t(r * K + k)]) * w.values[size_t(n * K + k)];
        exact += v;
        mag += std::fabs(v);
      }
      ASSERT_GT(mag, 0.0);
      ASSERT_LE(std::fabs(double(ref[size_t(r * 64 + n)]) - exact), 1e-3 * mag) << "row " << n << " token " << r;
    }
  for (const test::RegisteredPanel& p : test::registered_panels(GetParam(), kQSub)) {
    if (p.type != t) continue;
    std::vector<float> c(size_t(T * 64));
    p.kernel->fn(T, K, x.rows, panel.data(), c.data(), 64);
    for (int64_t i = 0; i < T * 64; ++i) ASSERT_EQ(c[size_t(i)], ref[size_t(i)]) << p.kernel->name << " " << i;
  }
}

TEST(Q8_KActivations, LargestMagnitudeIsMinus127AndSumsAreOfSixteen) {
  const int64_t T = 2, K = 512;
  auto x = test::random_vector(size_t(T * K), 9);
  for (int64_t i = 256; i < 512; ++i) x[size_t(i)] = 0.0f;  // an all-zero block: d = 0, sums 0
  x[700] = -5.0f;                                           // the largest magnitude of its block
  const test::Activations q = test::quantise(WeightType::q8_K, T, K, x);
  // One buffer, rows K codes apart, so the codes, scales and sums index across the rows.
  const int8_t* qs = q.rows.codes();
  EXPECT_EQ(q.rows.scales[1], 0.0f);
  EXPECT_EQ(qs[700], -127);
  for (int64_t b = 0; b < T * K / 256; ++b) {
    float amax = 0;
    for (int64_t i = 0; i < 256; ++i) amax = std::max(amax, std::fabs(x[size_t(b * 256 + i)]));
    for (int64_t i = 0; i < 256; ++i)  // within half a step of the grid d·q
      EXPECT_LE(std::fabs(q.values[size_t(b * 256 + i)] - x[size_t(b * 256 + i)]), 0.5001 * amax / 127.0)
          << "block " << b << " value " << i;
  }
  for (int64_t g = 0; g < T * K / 16; ++g) {
    int s = 0;
    for (int64_t l = 0; l < 16; ++l) s += qs[16 * g + l];
    EXPECT_EQ(q.rows.sums[g], s);
  }
  x[3] = std::nanf("");
  EXPECT_THROW(test::quantise(WeightType::q8_K, T, K, x), Error);
}

}  // namespace
}  // namespace ffn
