// The panel kernels of the element types (f32, f16, bf16; kernels.hpp), every one registered
// on every ISA this CPU supports, against a double-precision sum within K·u·Σ|a·p| (the bound
// of any f32 summation order; a lost k, a wrong column or a skipped K block misses it), at
// token counts below, at and above the tiles and the 256-token block, and K below, at and
// above the 512-row block; the bf16 dot product on its rounded operands, and the rounding;
// and rows_to_panel32 / 16, which lay the element types' rows into panels.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string_view>
#include <vector>

#include "core/activation_formats.hpp"
#include "core/quant.hpp"
#include "ffn/tensor.hpp"
#include "isa_param.hpp"
#include "kernels/kernels.hpp"
#include "random_data.hpp"

namespace ffn {
namespace {

using test::random_matrix;
constexpr int64_t kW = kernels::kPanelWidth;

using kernels::Op;

using kernels::PanelFamily;

class FloatPanelKernels : public testing::TestWithParam<Isa> {};

const test::CheckedOps kF32PanelOps = test::checks_ops({Op::f32_panel_gemm});

TEST_P(FloatPanelKernels, F32MatchesDoubleSumWithinBound) {
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

// Determinism: each token of a batch gets the bits it gets alone, whichever tile, strips
// and K blocks its batch takes (one strip, a few strips in short K blocks, balanced blocks,
// prefetch shares).
TEST_P(FloatPanelKernels, F32TokensGetTheSameBitsAloneAsInAnyBatch) {
  for (const auto& f32_panel_gemm : test::registered_entries<kernels::F32PanelGemm>(GetParam(), kF32PanelOps))
    for (int64_t K : {100, 1100})
      for (int64_t T : {2, 3, 4, 5, 6, 7, 8, 9, 10, 13, 18}) {
        const Matrix A = random_matrix(T, K, uint32_t(T * 7 + K));
        const Matrix P = random_matrix(K, kW, uint32_t(K + 9));
        Matrix C(T, kW), alone(1, kW);
        f32_panel_gemm(T, K, A.data(), K, P.data(), C.data(), kW);
        for (int64_t t = 0; t < T; ++t) {
          f32_panel_gemm(1, K, A.row(t), K, P.data(), alone.data(), kW);
          ASSERT_EQ(0, std::memcmp(C.row(t), alone.data(), size_t(kW) * 4)) << "K=" << K << " T=" << T << " t=" << t;
        }
      }
}

// The f32 weight type's panel kernel (the f32 kernel above behind the panel kernels'
// signature) on rows of any stride: the same bits as f32_panel_gemm.
const std::vector<PanelFamily> kF32Panels = test::checks_panels({PanelFamily::f32});

TEST_P(FloatPanelKernels, F32PanelKernelIsTheF32Kernel) {
  for (const test::RegisteredPanel& p : test::registered_panels(GetParam(), kF32Panels))
    for (int64_t T : {1, 7, 257}) {
      const int64_t K = 300;
      const Matrix A = random_matrix(T, K + 3, uint32_t(T));
      const Matrix P = random_matrix(K, kW, 5);
      Matrix C(T, kW), ref(T, kW);
      p.kernel->fn(T, K, activation_rows(WeightType::f32, nullptr, T, K, A.data(), K + 3),
                   reinterpret_cast<const std::byte*>(P.data()), C.data(), kW);
      kernels::kernel_table(GetParam()).f32_panel_gemm(T, K, A.data(), K + 3, P.data(), ref.data(), kW);
      ASSERT_EQ(0, std::memcmp(C.data(), ref.data(), size_t(C.size()) * 4)) << p.kernel->name << " T=" << T;
    }
}

// The 16-bit panels widened to f32: the same bound on the widened (exact) weights; a
// widening that read the wrong half, or f16 as bf16, misses it by far.
const std::vector<PanelFamily> kHalfPanels = test::checks_panels({PanelFamily::f16, PanelFamily::bf16});

TEST_P(FloatPanelKernels, HalfPanelsMatchDoubleSumWithinBound) {
  for (const test::RegisteredPanel& p : test::registered_panels(GetParam(), kHalfPanels)) {
    if (p.kernel->activations != WeightType::f32) continue;  // the bf16 dot product: below
    const bool bf16 = p.type == WeightType::bf16;
    for (int64_t K : {0, 5, 512, 700})
      // T: each tile and its edges (on Intel's cores pieces widened once: AVX2 from 5 to 64
      // tokens, AVX-512 from 16 to 64)
      for (int64_t T : {1, 2, 3, 4, 5, 6, 7, 8, 13, 16, 18, 64, 65, 257}) {
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
        p.kernel->fn(T, K, activation_rows(WeightType::f32, nullptr, T, K, A.data(), K),
                     reinterpret_cast<const std::byte*>(P.data()), C.data(), kW);
        for (int64_t t = 0; t < T; ++t)
          for (int64_t j = 0; j < kW; ++j) {
            double exact = 0, magnitude = 0;
            for (int64_t kk = 0; kk < K; ++kk) {
              const double term = double(A.row(t)[kk]) * widened[size_t(kk * kW + j)];
              exact += term;
              magnitude += std::fabs(term);
            }
            ASSERT_LE(std::fabs(C.row(t)[j] - exact), double(K) * 0x1p-24 * magnitude)
                << p.kernel->name << " T=" << T << " K=" << K;
          }
      }
  }
}

// Determinism of the widened 16-bit panels (f32 activations): each token of a batch gets the
// bits it gets alone, whichever tile and strips its batch takes (AVX-512's f16 takes 4×64
// strips at 7 and 8 tokens, 6×64 otherwise; on Intel's cores pieces widened once, AVX2 from
// 5 to 64 tokens, AVX-512 from 16 to 64).
TEST_P(FloatPanelKernels, HalfTokensGetTheSameBitsAloneAsInAnyBatch) {
  for (const test::RegisteredPanel& p : test::registered_panels(GetParam(), kHalfPanels)) {
    if (p.kernel->activations != WeightType::f32) continue;  // the bf16 dot product: its own tests
    const bool bf16 = p.type == WeightType::bf16;
    for (int64_t K : {100, 1100})
      for (int64_t T : {2, 4, 5, 6, 7, 8, 9, 13, 16, 64, 65}) {
        const Matrix A = random_matrix(T, K, uint32_t(T * 5 + K));
        const Matrix W = random_matrix(K, kW, uint32_t(K + 3));
        std::vector<uint16_t> P(size_t((bf16 ? kernels::bf16_panel_rows(K) : K) * kW));
        for (int64_t kk = 0; kk < K; ++kk)
          for (int64_t j = 0; j < kW; ++j)
            P[size_t(bf16 ? kernels::bf16_panel_index(kk, j) : kk * kW + j)] =
                bf16 ? f32_to_bf16(W.row(kk)[j]) : f32_to_f16(W.row(kk)[j]);
        const auto* panel = reinterpret_cast<const std::byte*>(P.data());
        Matrix C(T, kW), alone(1, kW);
        p.kernel->fn(T, K, activation_rows(WeightType::f32, nullptr, T, K, A.data(), K), panel, C.data(), kW);
        for (int64_t t = 0; t < T; ++t) {
          p.kernel->fn(1, K, activation_rows(WeightType::f32, nullptr, 1, K, A.row(t), K), panel, alone.data(), kW);
          ASSERT_EQ(0, std::memcmp(C.row(t), alone.data(), size_t(kW) * 4))
              << p.kernel->name << " K=" << K << " T=" << T << " t=" << t;
        }
      }
  }
}

// The bf16 dot products' panel kernels: against the double-precision sum of the rounded
// operands (activations rounded to bf16 by f32_to_bf16_rows, weights as stored; products of
// bf16 are exact in f32), each within the bound of its own instruction's contract
// (kernels.hpp, "bf16 dotted"), u = 2⁻²⁴:
//   vdpbf16ps (AVX512_BF16): K·u·Σ|Ã·P| — one rounding to nearest (≤ u) per product added;
//   BFDOT (FEAT_BF16): bf16_panel_rows(K)·u·Σ|Ã·P| — one rounding to odd (< 2u) per pair
//     summed and per pair added, ⌈K/2⌉ reaching any product.
// The data (uniform in ±1) has no denormals and no product or sum near 2⁻¹²⁶, so neither
// instruction's flushes enter. Both bounds are ≈ 6·10⁻⁸·K of Σ|Ã·P|, while one product is
// on average Σ|Ã·P| / K: at K = 1100 a lost pair, a pair read from the wrong half or from a
// neighbouring column, or an odd K's padding read as anything but zero misses the bound by
// ten times and more in most of the 64 columns. Every such kernel registered on every ISA of
// this CPU (the activations rounded by its own table's f32_to_bf16_rows); skipped where none
// is (a CPU without AVX512_BF16 or FEAT_BF16).
const test::CheckedOps kToBf16Ops = test::checks_ops({Op::f32_to_bf16_rows});

// The bound's multiple of u·Σ|Ã·P| that a bf16 dot kernel's contract gives, by the
// instruction it names (PanelKernel::arithmetic); 0 for an instruction without a contract here.
double bf16_dot_roundings(std::string_view arithmetic, int64_t K) {
  if (arithmetic == "vdpbf16ps") return double(K);
  if (arithmetic == "BFDOT") return double(kernels::bf16_panel_rows(K));
  return 0;
}

TEST(Bf16DotPanel, MatchesDoubleSumOfRoundedOperands) {
  bool any = false;
  for (Isa isa : supported_isas())
    for (const test::RegisteredPanel& p : test::registered_panels(isa, kHalfPanels)) {
      if (p.kernel->activations != WeightType::bf16) continue;
      any = true;
      const auto& k = kernels::kernel_table(isa);
      ASSERT_NE(k.f32_to_bf16_rows, nullptr)
          << isa_name(isa) << " has " << p.kernel->name << " but no f32_to_bf16_rows";
      ASSERT_GT(bf16_dot_roundings(p.kernel->arithmetic, 2), 0)
          << p.kernel->name << " dots by " << p.kernel->arithmetic << ", which has no accuracy contract here";
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
          kernels::ActivationRows rows;
          rows.format = WeightType::bf16;
          rows.values = reinterpret_cast<const std::byte*>(Ab.data());
          rows.row_bytes = lda * 2;
          p.kernel->fn(T, K, rows, reinterpret_cast<const std::byte*>(P.data()), C.data(), kW);
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
              ASSERT_LE(std::fabs(C.row(t)[j] - exact),
                        bf16_dot_roundings(p.kernel->arithmetic, K) * 0x1p-24 * magnitude)
                  << p.kernel->name << " T=" << T << " K=" << K << " t=" << t << " j=" << j;
            }
          }
        }
    }
  if (!any) GTEST_SKIP() << "no ISA of this CPU has a bf16 dot product kernel (AVX512_BF16, FEAT_BF16)";
}

// What this CPU's bf16 rounding does with an f32 denormal (kernels.hpp, f32_to_bf16_rows):
// vcvtneps2bf16 makes it zero; BFCVTN rounds it as any other value unless FPCR flushes
// (FZ, bit 24, or FEAT_AFP's AH, bit 1, which a CPU without FEAT_AFP reads as 0).
bool bf16_rounding_flushes_denormals() {
#if defined(__aarch64__)
  uint64_t fpcr;
  asm volatile("mrs %0, fpcr" : "=r"(fpcr));
  return (fpcr >> 24 & 1) != 0 || (fpcr >> 1 & 1) != 0;
#else
  return true;
#endif
}

// The rounding of activations to bf16: nearest, ties to even (ffn::f32_to_bf16), NaN stays
// NaN; denormals as the ISA's contract says: zero, or (BFCVTN without FPCR's flush) rounded
// like the rest — the largest one up to the least normal bf16.
TEST(Bf16DotPanel, RoundsActivationsToNearestEven) {
  const bool flushes = bf16_rounding_flushes_denormals();
  const float kLargestDenormal = std::nextafter(std::numeric_limits<float>::min(), 0.0f);
  const float kLeastDenormal = std::numeric_limits<float>::denorm_min();
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
                                    -kLargestDenormal /* to −2⁻¹²⁶ */,
                                    kLeastDenormal /* to 0 */,
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
        } else if (std::fpclassify(x[size_t(i)]) == FP_SUBNORMAL && flushes) {
          EXPECT_EQ(bf16_to_f32(out[size_t(i)]), 0.0f) << f32_to_bf16_rows.name << ": x = " << x[size_t(i)];
        } else {
          EXPECT_EQ(out[size_t(i)], f32_to_bf16(x[size_t(i)])) << f32_to_bf16_rows.name << ": x = " << x[size_t(i)];
        }
      }
      EXPECT_EQ(out[size_t(K)], 0) << f32_to_bf16_rows.name << ": the padding of an odd K";
    }
  if (!any) GTEST_SKIP() << "no ISA of this CPU has a bf16 rounding kernel (AVX512_BF16, FEAT_BF16)";
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

TEST_P(FloatPanelKernels, RowsToPanelCopiesEveryBitToItsPlace) {
  for (const auto& k : test::registered_entries<kernels::RowsToPanel32>(GetParam(), kRowsToPanel32Ops))
    expect_rows_to_panel_copies_bits<uint32_t>(k);
  for (const auto& k : test::registered_entries<kernels::RowsToPanel16>(GetParam(), kRowsToPanel16Ops))
    expect_rows_to_panel_copies_bits<uint16_t>(k);
}

FFN_INSTANTIATE_FOR_EVERY_ISA(FloatPanelKernels);

}  // namespace
}  // namespace ffn
