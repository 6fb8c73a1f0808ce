// The kernels for stored weight types, every one registered on every ISA this CPU supports:
//   q_panel_gemm (q8_0 / q4_0 panels × q8_0 activations): bit-identical to the scalar
//     kernel (the contract fixes every operation, integer dot products are exact), and
//     within (K/32 + 8)·u·Σ|ŵ·x̂| of the double-precision dot product of the dequantised
//     values;
//   quantize_q8_rows: ggml's bytes; rows_to_panel32 / 16: every bit in its place, nothing
//     else touched.
// Sizes below, at and above the 32-block, the 64-value pair and the tiles, odd and even, up
// to K = 4096.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "ffn/quant.hpp"
#include "isa_param.hpp"
#include "core/weight_type_table.hpp"
#include "kernels/kernels.hpp"
#include "random_data.hpp"

namespace ffn {
namespace {

using kernels::Op;
constexpr double kU = 0x1p-24;

struct QuantRows {
  std::vector<int8_t> qs;
  std::vector<float> d;
  std::vector<int32_t> corr;
  std::vector<float> values;  // the dequantised activations, [T][K]
};

QuantRows quantise(WeightType wtype, int64_t T, int64_t K, const std::vector<float>& x) {
  QuantRows q{std::vector<int8_t>(size_t(T * K)), std::vector<float>(size_t(T * K / 32)),
              std::vector<int32_t>(size_t(T * K / 4)), std::vector<float>(size_t(T * K))};
  kernels::quantize_q8_rows(wtype, T, K, 0, K, x.data(), K, q.qs.data(), q.d.data(), q.corr.data());
  for (int64_t i = 0; i < T * K; ++i) q.values[size_t(i)] = float(q.qs[size_t(i)]) * q.d[size_t(i / 32)];
  return q;
}

// Weights [N][K] stored as type t, and their exact values.
struct StoredRows {
  std::vector<std::byte> bytes;
  int64_t row_bytes;
  std::vector<float> values;
};

StoredRows store(WeightType t, int64_t N, int64_t K, uint32_t seed) {
  const auto w = test::random_vector(size_t(N * K), seed);
  const auto& info = weight_type_info(t);
  StoredRows s{std::vector<std::byte>(size_t(N * K / info.block_elements * info.block_bytes)),
               K / info.block_elements * info.block_bytes, std::vector<float>(size_t(N * K))};
  for (int64_t n = 0; n < N; ++n) {
    const float* src = w.data() + n * K;
    std::byte* dst = s.bytes.data() + n * s.row_bytes;
    for (int64_t k = 0; k < K && (t == WeightType::bf16 || t == WeightType::f16); ++k) {
      const uint16_t h = t == WeightType::bf16 ? f32_to_bf16(src[k]) : f32_to_f16(src[k]);
      std::memcpy(dst + 2 * k, &h, 2);
    }
    if (t == WeightType::q8_0) quantize_row_q8_0(src, reinterpret_cast<BlockQ8_0*>(dst), K);
    if (t == WeightType::q4_0) quantize_row_q4_0(src, reinterpret_cast<BlockQ4_0*>(dst), K);
  }
  for (int64_t n = 0; n < N; ++n)
    weight_type_traits(t).to_f32(s.bytes.data() + n * s.row_bytes, s.values.data() + n * K, K);
  return s;
}

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

class TypedKernels : public testing::TestWithParam<Isa> {};

const test::CheckedOps kQPanelOps = test::checks_ops({Op::q_panel_gemm});

TEST_P(TypedKernels, IntegerPanelEqualsScalarBitForBitAndIsWithinBound) {
  for (const auto& q_panel_gemm : test::registered_entries<kernels::QPanelGemm>(GetParam(), kQPanelOps))
    for (WeightType t : {WeightType::q8_0, WeightType::q4_0})
      for (int64_t K : {32, 96, 2240})
        for (int64_t N : {1, 31, 64})
          for (int64_t T : {1, 2, 3, 5, 8}) {
            const StoredRows w = store(t, N, K, uint32_t(K + N + 1));
            const QuantRows x = quantise(t, T, K, test::random_vector(size_t(T * K), uint32_t(T + 3)));
            const kernels::Q8Rows rows{x.qs.data(), x.d.data(), x.corr.data()};
            AlignedFloats storage(K / 32 * kernels::q_panel_block_bytes(t) / 4);
            auto* panel = reinterpret_cast<std::byte*>(storage.data());
            weight_type_traits(t).rows_into_panel(kernels::kernel_table(GetParam()), w.bytes.data(), w.row_bytes, N,
                                                  K, panel, 0);
            std::vector<float> c(size_t(T * 64)), ref(size_t(T * 64));
            q_panel_gemm(t, T, K, rows, panel, c.data(), 64);
            kernels::q_panel_gemm_scalar(t, T, K, rows, panel, ref.data(), 64);
            std::vector<float> first_n(size_t(T * N));
            for (int64_t r = 0; r < T; ++r)
              for (int64_t n = 0; n < N; ++n) {
                ASSERT_EQ(c[size_t(r * 64 + n)], ref[size_t(r * 64 + n)])
                    << q_panel_gemm.name << " " << weight_type_info(t).name << " K=" << K << " N=" << N << " T=" << T;
                first_n[size_t(r * N + n)] = c[size_t(r * 64 + n)];
              }
            EXPECT_LE(worst_ratio(T, N, K, x.values, w.values, first_n, double(K / 32 + 8)), 1.0)
                << q_panel_gemm.name << " " << weight_type_info(t).name << " K=" << K << " N=" << N << " T=" << T;
          }
}

// The integer sums at their extremes: activations at ±127 (quantize_row_q8_0's range),
// q4_0 nibbles all 15 or all 0 and q8_0 weights at −128 and 127, in every sign pattern —
// where a kernel that adds pairs in int16 or multiplies in bytes would saturate or wrap.
TEST_P(TypedKernels, IntegerPanelAtExtremeValuesEqualsScalarBitForBit) {
  const int64_t K = 128, N = 64;
  for (const auto& q_panel_gemm : test::registered_entries<kernels::QPanelGemm>(GetParam(), kQPanelOps))
    for (WeightType t : {WeightType::q8_0, WeightType::q4_0}) {
      const auto& info = weight_type_info(t);
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
            blk[2 + i] = std::byte(t == WeightType::q4_0 ? q4 : q8);
          }
        }
      for (int pattern = 0; pattern < 3; ++pattern) {
        const int64_t T = 2;
        std::vector<float> xs(size_t(T * K));
        for (int64_t i = 0; i < T * K; ++i)
          xs[size_t(i)] = pattern == 0 ? 1.0f : pattern == 1 ? -1.0f : (i % 2 ? -1.0f : 1.0f) * (i / K ? -1.0f : 1.0f);
        const QuantRows x = quantise(t, T, K, xs);
        const kernels::Q8Rows rows{x.qs.data(), x.d.data(), x.corr.data()};
        AlignedFloats storage(K / 32 * kernels::q_panel_block_bytes(t) / 4);
        auto* panel = reinterpret_cast<std::byte*>(storage.data());
        weight_type_traits(t).rows_into_panel(kernels::kernel_table(GetParam()), bytes.data(), row_bytes, N, K, panel,
                                              0);
        std::vector<float> c(size_t(T * 64)), ref(size_t(T * 64));
        q_panel_gemm(t, T, K, rows, panel, c.data(), 64);
        kernels::q_panel_gemm_scalar(t, T, K, rows, panel, ref.data(), 64);
        for (int64_t i = 0; i < T * 64; ++i)
          ASSERT_EQ(c[size_t(i)], ref[size_t(i)]) << q_panel_gemm.name << " " << info.name << " pattern " << pattern
                                                  << " element " << i;
      }
    }
}

// The bound above is tight enough to see a wrong nibble order or a lost block scale.
TEST(TypedKernels, IntegerBoundCatchesNibbleOrderAndScale) {
  const int64_t T = 3, N = 5, K = 96;
  const StoredRows w = store(WeightType::q4_0, N, K, 1);
  const QuantRows x = quantise(WeightType::q4_0, T, K, test::random_vector(size_t(T * K), 2));
  AlignedFloats storage(K / 32 * kernels::q_panel_block_bytes(WeightType::q4_0) / 4);
  auto* panel = reinterpret_cast<std::byte*>(storage.data());
  weight_type_traits(WeightType::q4_0)
      .rows_into_panel(kernels::kernel_table(Isa::scalar), w.bytes.data(), w.row_bytes, N, K, panel, 0);
  std::vector<float> tile(static_cast<size_t>(T * 64)), c(static_cast<size_t>(T * N));
  kernels::q_panel_gemm_scalar(WeightType::q4_0, T, K, {x.qs.data(), x.d.data(), x.corr.data()}, panel, tile.data(),
                               64);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t n = 0; n < N; ++n) c[size_t(t * N + n)] = tile[size_t(t * 64 + n)];
  std::vector<float> swapped = w.values, rescaled = w.values;
  for (int64_t i = 0; i < N * K; i += 32)
    for (int64_t j = 0; j < 16; ++j) std::swap(swapped[size_t(i + j)], swapped[size_t(i + j + 16)]);
  for (int64_t i = 0; i < N * K; ++i) rescaled[size_t(i)] *= (i / 32) % 2 ? 1.25f : 1.0f;
  EXPECT_GT(worst_ratio(T, N, K, x.values, swapped, c, double(K / 32 + 8)), 100.0);
  EXPECT_GT(worst_ratio(T, N, K, x.values, rescaled, c, double(K / 32 + 8)), 100.0);
}

// rows_to_panel32 / rows_to_panel16 copy every value's bits to its place and touch nothing
// else: rows below, at and above the 8 × 8 block and up to a whole panel, at column offsets
// 0, 5 and 32; lengths below, at and above 8 and 64; rows starting off their values'
// alignment (bf16 rows of odd length for the 32-bit copy); NaN bit patterns among the values.
template <class Value, class RowsToPanel>
void expect_rows_to_panel_copies_bits(const kernels::Named<RowsToPanel>& rows_to_panel) {
  constexpr int64_t kW = kernels::kPanelWidth, kBytes = sizeof(Value);
  constexpr Value kUntouched = Value(0xDEADBEEF);
  for (int64_t rows : {1, 7, 8, 9, 17, 32, 64})
    for (int64_t j0 : {0, 5, 32}) {
      if (rows + j0 > kW) continue;
      for (int64_t n : {1, 7, 8, 9, 63, 64, 65, 130}) {
        const int64_t ld_bytes = kBytes * n + 6;  // rows off alignment in turn
        std::vector<std::byte> src(static_cast<size_t>(rows * ld_bytes + 8));
        for (size_t i = 0; i < src.size(); ++i) src[i] = std::byte((i * 131 + 7) % 256);
        const std::byte* first = src.data() + 1;
        std::vector<Value> panel(static_cast<size_t>(n * kW), kUntouched);
        rows_to_panel(rows, n, first, ld_bytes, panel.data(), j0);
        for (int64_t k = 0; k < n; ++k)
          for (int64_t j = 0; j < kW; ++j) {
            Value want = kUntouched;
            if (j >= j0 && j < j0 + rows) std::memcpy(&want, first + (j - j0) * ld_bytes + kBytes * k, kBytes);
            ASSERT_EQ(panel[static_cast<size_t>(k * kW + j)], want)
                << rows_to_panel.name << ": " << kBytes * 8 << "-bit rows=" << rows << " j0=" << j0 << " n=" << n
                << " k=" << k << " j=" << j;
          }
      }
    }
}

const test::CheckedOps kRowsToPanel32Ops = test::checks_ops({Op::rows_to_panel32});
const test::CheckedOps kRowsToPanel16Ops = test::checks_ops({Op::rows_to_panel16});

TEST_P(TypedKernels, RowsToPanelCopiesEveryBitToItsPlace) {
  for (const auto& k : test::registered_entries<kernels::RowsToPanel32>(GetParam(), kRowsToPanel32Ops))
    expect_rows_to_panel_copies_bits<uint32_t>(k);
  for (const auto& k : test::registered_entries<kernels::RowsToPanel16>(GetParam(), kRowsToPanel16Ops))
    expect_rows_to_panel_copies_bits<uint16_t>(k);
}

FFN_INSTANTIATE_FOR_EVERY_ISA(TypedKernels);

TEST(QuantizeQ8Rows, BlocksAreGgmlBytesAndSumsAreOffset) {
  const int64_t T = 2, K = 96;
  auto x = test::random_vector(size_t(T * K), 4);
  x[5] = 0.0f;
  for (WeightType t : {WeightType::q8_0, WeightType::q4_0}) {
    const QuantRows q = quantise(t, T, K, x);
    const int32_t offset = t == WeightType::q8_0 ? 128 : 8;
    for (int64_t r = 0; r < T; ++r) {
      std::vector<BlockQ8_0> ref(static_cast<size_t>(K / 32));
      quantize_row_q8_0(x.data() + r * K, ref.data(), K);
      for (int64_t b = 0; b < K / 32; ++b) {
        EXPECT_EQ(q.d[size_t(r * K / 32 + b)], f16_to_f32(ref[size_t(b)].d));
        EXPECT_EQ(0, std::memcmp(q.qs.data() + r * K + 32 * b, ref[size_t(b)].qs, 32));
      }
      for (int64_t g = 0; g < K / 4; ++g) {
        int32_t s = 0;
        for (int64_t j = 0; j < 4; ++j) s += q.qs[size_t(r * K + 4 * g + j)];
        EXPECT_EQ(q.corr[size_t(r * K / 4 + g)], -offset * s);
      }
    }
  }
}

}  // namespace
}  // namespace ffn
