// The qblock panel kernels (Q8_0, Q4_0: kernels/qblock_panels.hpp), every one registered on
// every ISA this CPU supports, for every qblock type of the list:
//   bit-identical to the scalar kernel (the contract fixes every operation, integer dot
//   products are exact), and within (K/32 + 8)·u·Σ|ŵ·x̂| of the double-precision dot product
//   of the dequantised values;
//   q8_0 activations (core/activation_formats.hpp): ggml's bytes and the sums of 16.
// Sizes below, at and above the 32-block and the tiles, odd and even, up to K = 2240.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "core/quant.hpp"
#include "isa_param.hpp"
#include "panel_support.hpp"

namespace ffn {
namespace {

using kernels::PanelFamily;
constexpr double kU = 0x1p-24;

// Largest |C − exact| / (factor·u·Σ|a·b|) over C = A·Bᵀ (> 1: outside the bound).
double worst_ratio(int64_t T, int64_t N, int64_t K, const std::vector<float>& a, const std::vector<float>& b,
                   const std::vector<float>& c, double factor) {
  double worst = 0;
  for (int64_t t = 0; t < T; ++t)
    for (int64_t n = 0; n < N; ++n) {
      double exact = 0, mag = 0;
      for (int64_t k = 0; k < K; ++k) {
        exact += double(a[size_t(t * K + k)]) * b[size_t(n * K + k)];
        mag += std::fabs(double(a[size_t(t * K + k)]) * b[size_t(n * K + k)]);
      }
      const double err = std::fabs(double(c[size_t(t * N + n)]) - exact);
      worst = std::max(worst, err == 0 ? 0.0 : err / (factor * kU * mag));
    }
  return worst;
}

class QBlockKernels : public testing::TestWithParam<Isa> {};

const std::vector<PanelFamily> kQBlock = test::checks_panels({PanelFamily::qblock});

// The scalar reference of type t's panel kernel.
kernels::PanelGemm reference(WeightType t) { return kernels::kernel_table(Isa::scalar).panel(t).fn; }

TEST_P(QBlockKernels, EqualScalarBitForBitAndAreWithinBound) {
  for (const test::RegisteredPanel& p : test::registered_panels(GetParam(), kQBlock))
    for (int64_t K : {32, 96, 2240})
      for (int64_t N : {1, 31, 64})
        // (AVX-512 VNNI) 3 and 4 in one pass, then block by block; q8_0 from 9 in K blocks, q4_0
        // from 16 in K blocks unpacked once; (AMX) a tile of 16, two tiles and a token on VNNI (33),
        // two tiles and one of 8 (40)
        for (int64_t T : {1, 2, 3, 4, 5, 7, 8, 9, 12, 15, 16, 17, 33, 40}) {
          const WeightType t = p.type;
          const test::StoredRows w = test::store(t, N, K, uint32_t(K + N + 1));
          const test::Activations x =
              test::quantise(p.kernel->activations, T, K, test::random_vector(size_t(T * K), uint32_t(T + 3)));
          const test::Panel panel = test::pack(t, w, N, K, GetParam());
          std::vector<float> c(size_t(T * 64), std::nanf("")), ref(size_t(T * 64));  // NaN: a row left unwritten fails
          p.kernel->fn(T, K, x.rows, panel.data(), c.data(), 64);
          reference(t)(T, K, x.rows, panel.data(), ref.data(), 64);
          std::vector<float> first_n(size_t(T * N));
          for (int64_t r = 0; r < T; ++r)
            for (int64_t n = 0; n < N; ++n) {
              ASSERT_EQ(c[size_t(r * 64 + n)], ref[size_t(r * 64 + n)])
                  << p.kernel->name << " K=" << K << " N=" << N << " T=" << T;
              first_n[size_t(r * N + n)] = c[size_t(r * 64 + n)];
            }
          EXPECT_LE(worst_ratio(T, N, K, x.values, w.values, first_n, double(K / 32 + 8)), 1.0)
              << p.kernel->name << " K=" << K << " N=" << N << " T=" << T;
        }
}

// The integer sums at their extremes: activations at ±127 (quantize_row_q8_0's range),
// nibbles all 15 or all 0 and byte codes at −128 and 127, in every sign pattern — where a
// kernel that adds pairs in int16 or multiplies in bytes would saturate or wrap.
TEST_P(QBlockKernels, AtExtremeValuesEqualScalarBitForBit) {
  const int64_t K = 128, N = 64;
  for (const test::RegisteredPanel& p : test::registered_panels(GetParam(), kQBlock)) {
    const WeightType t = p.type;
    const auto& info = weight_type_info(t);
    const bool nibbles = kernels::q_format(t).nibbles;
    const int64_t row_bytes = K / 32 * info.block_bytes;
    std::vector<std::byte> bytes(size_t(N * row_bytes));
    for (int64_t n = 0; n < N; ++n)
      for (int64_t b = 0; b < K / 32; ++b) {
        std::byte* blk = bytes.data() + n * row_bytes + b * info.block_bytes;
        const uint16_t d = 0x3C00;  // 1.0
        std::memcpy(blk, &d, 2);
        // Row n: all at one extreme (n % 4 < 2) or alternating between the two.
        for (int64_t i = 0; i < info.block_bytes - 2; ++i) {
          const bool high = n % 4 == 0 || (n % 4 >= 2 && (i + n / 4) % 2 == 0);
          const uint8_t q4 = high ? 0xFF : 0x00, q8 = high ? 0x7F : 0x80;
          blk[2 + i] = std::byte(nibbles ? q4 : q8);
        }
      }
    for (int pattern = 0; pattern < 6; ++pattern) {
      const int64_t T = pattern < 3 ? 2 : 16;  // one pass; an AMX tile
      std::vector<float> xs(size_t(T * K));
      for (int64_t i = 0; i < T * K; ++i)
        xs[size_t(i)] = pattern % 3 == 0   ? 1.0f
                        : pattern % 3 == 1 ? -1.0f
                                           : (i % 2 ? -1.0f : 1.0f) * (i / K % 2 ? -1.0f : 1.0f);
      const test::Activations x = test::quantise(p.kernel->activations, T, K, xs);
      const test::Panel panel = test::pack(t, bytes.data(), row_bytes, N, K, GetParam());
      std::vector<float> c(size_t(T * 64), std::nanf("")), ref(size_t(T * 64));  // NaN: a row left unwritten fails
      p.kernel->fn(T, K, x.rows, panel.data(), c.data(), 64);
      reference(t)(T, K, x.rows, panel.data(), ref.data(), 64);
      for (int64_t i = 0; i < T * 64; ++i)
        ASSERT_EQ(c[size_t(i)], ref[size_t(i)]) << p.kernel->name << " pattern " << pattern << " element " << i;
    }
  }
}

// K = 0 (no values): every kernel writes C = 0 for each token, whichever path its T takes
// (one pass, block by block, K blocks), and nothing beyond the T rows. C starts as NaN, so
// a row left unwritten fails. T = 0 too (the contract's T ≥ 0): nothing written, and no
// share of a block's prefetch dealt to no tokens (block_major, which Intel's cores take at
// any T: this suite runs again as Intel's).
TEST_P(QBlockKernels, WithNoValuesWriteZeros) {
  for (const test::RegisteredPanel& p : test::registered_panels(GetParam(), kQBlock))
    for (int64_t T : {0, 1, 2, 3, 9, 16})
      EXPECT_EQ(test::error_with_no_values(*p.kernel, T), "") << p.kernel->name << " T=" << T;
}

// The bound above is tight enough to see a wrong nibble order or a lost block scale.
TEST(QBlockKernels, BoundCatchesNibbleOrderAndScale) {
  const int64_t T = 3, N = 5, K = 96;
  const test::StoredRows w = test::store(WeightType::q4_0, N, K, 1);
  const test::Activations x = test::quantise(WeightType::q8_0, T, K, test::random_vector(size_t(T * K), 2));
  const test::Panel panel = test::pack(WeightType::q4_0, w, N, K);
  std::vector<float> tile(static_cast<size_t>(T * 64)), c(static_cast<size_t>(T * N));
  reference(WeightType::q4_0)(T, K, x.rows, panel.data(), tile.data(), 64);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t n = 0; n < N; ++n) c[size_t(t * N + n)] = tile[size_t(t * 64 + n)];
  std::vector<float> swapped = w.values, rescaled = w.values;
  for (int64_t i = 0; i < N * K; i += 32)
    for (int64_t j = 0; j < 16; ++j) std::swap(swapped[size_t(i + j)], swapped[size_t(i + j + 16)]);
  for (int64_t i = 0; i < N * K; ++i) rescaled[size_t(i)] *= (i / 32) % 2 ? 1.25f : 1.0f;
  EXPECT_GT(worst_ratio(T, N, K, x.values, swapped, c, double(K / 32 + 8)), 100.0);
  EXPECT_GT(worst_ratio(T, N, K, x.values, rescaled, c, double(K / 32 + 8)), 100.0);
}

#if defined(__x86_64__)
// The AMX kernel puts the thread's tile configuration back as it found it — another
// library's (ggml's, oneDNN's) loaded once a thread and counted on, or none — so that tile
// code run after it on the thread finds its tiles shaped as it left them.
TEST(QBlockKernels, AmxKernelKeepsTheCallersTileConfiguration) {
  if (!isa_supported(Isa::amx_int8)) GTEST_SKIP() << "this CPU (or OS) lacks AMX-INT8";
  struct alignas(64) TileConfig {
    unsigned char bytes[64] = {};
  };
  auto stored = [] {
    TileConfig c;
    asm volatile("sttilecfg %0" : "=m"(c) : : "memory");
    return c;
  };
  const int64_t T = 16, K = 64;
  const test::StoredRows w = test::store(WeightType::q8_0, 64, K, 5);
  const test::Activations x = test::quantise(WeightType::q8_0, T, K, test::random_vector(size_t(T * K), 6));
  const test::Panel panel = test::pack(WeightType::q8_0, w, 64, K, Isa::amx_int8);
  const kernels::PanelGemm amx = kernels::kernel_table(Isa::amx_int8).panel(WeightType::q8_0).fn;
  std::vector<float> c(size_t(T * 64));
  // A caller's configuration: palette 1, tile 0 of 3 rows of 12 bytes, tile 7 of 16 × 64.
  TileConfig callers;
  callers.bytes[0] = 1;
  callers.bytes[16] = 12;
  callers.bytes[48] = 3;
  callers.bytes[16 + 2 * 7] = 64;
  callers.bytes[48 + 7] = 16;
  asm volatile("ldtilecfg %0" : : "m"(callers) : "memory");
  amx(T, K, x.rows, panel.data(), c.data(), 64);
  EXPECT_EQ(std::memcmp(stored().bytes, callers.bytes, 64), 0) << "the caller's tile configuration was not restored";
  asm volatile("tilerelease" ::: "memory");
  amx(T, K, x.rows, panel.data(), c.data(), 64);
  EXPECT_EQ(std::memcmp(stored().bytes, TileConfig{}.bytes, 64), 0) << "tiles left configured where none were";
}
#endif

FFN_INSTANTIATE_FOR_EVERY_ISA(QBlockKernels);

// q8_0 activations: each block byte for byte quantize_row_q8_0's codes and scale, and the
// sums of each 16 codes (from which the kernels take −offset·Σx).
TEST(Q8_0Activations, BlocksAreGgmlBytesAndSumsAreOfSixteen) {
  const int64_t T = 2, K = 96;
  auto x = test::random_vector(size_t(T * K), 4);
  x[5] = 0.0f;
  const test::Activations q = test::quantise(WeightType::q8_0, T, K, x);
  for (int64_t r = 0; r < T; ++r) {
    const kernels::ActivationRows row = q.rows.from_token(r);
    std::vector<BlockQ8_0> ref(static_cast<size_t>(K / 32));
    quantize_row_q8_0(x.data() + r * K, ref.data(), K);
    for (int64_t b = 0; b < K / 32; ++b) {
      EXPECT_EQ(row.scales[b], f16_to_f32(ref[size_t(b)].d));
      EXPECT_EQ(0, std::memcmp(row.codes() + 32 * b, ref[size_t(b)].qs, 32));
    }
    for (int64_t g = 0; g < K / 16; ++g) {
      int32_t s = 0;
      for (int64_t j = 0; j < 16; ++j) s += row.codes()[16 * g + j];
      EXPECT_EQ(row.sums[g], s);
    }
  }
}

}  // namespace
}  // namespace ffn
