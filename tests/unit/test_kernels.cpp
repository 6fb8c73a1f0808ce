// Every forward GEMM kernel registered on every ISA against a double-precision reference,
// at sizes below, equal to, above and multiples of its register tile (4×4 AVX-512, 3×3
// AVX2) and of its vector width (K of 16 and 8 lanes), plus a check that splitting rows or
// columns never changes a bit; the roofs' loops; and the registry itself: every op that
// some table registers has a checker here or in another kernel test.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/quant.hpp"
#include "ffn/error.hpp"
#include "isa_param.hpp"
#include "kernels/kernels.hpp"
#include "random_data.hpp"

namespace ffn {
namespace {

using kernels::kernel_table;
using kernels::Op;

class GemmKernel : public testing::TestWithParam<Isa> {};

using test::random_vector;

// Both kernels of the forward's product C = A·Bᵀ: lane-parallel dot products, and the
// packed outer-product form (K blocks of 256, so K runs past two block edges).
const test::CheckedOps kNtOps = test::checks_ops({Op::f32_gemm_nt, Op::f32_gemm_nt_packed});

TEST_P(GemmKernel, MatchesDoubleReferenceWithinSummationBound) {
  for (const auto& gemm : test::registered_entries<kernels::F32GemmNt>(GetParam(), kNtOps))
    for (int64_t T : {1, 2, 3, 4, 5, 7, 8, 9, 13, 17}) {
      for (int64_t N : {1, 2, 3, 4, 5, 6, 7, 8, 9, 17, 33, 64, 65, 130}) {
        for (int64_t K : {0, 1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 100, 255, 256, 257, 600}) {
          // Padded strides catch kernels that assume stride == K.
          const int64_t lda = K + 3, ldb = K + 5, ldc = N + 2;
          const auto A = random_vector(static_cast<size_t>(T * lda), 1);
          const auto B = random_vector(static_cast<size_t>(N * ldb), 2);
          std::vector<float> C(static_cast<size_t>(T * ldc), NAN);
          gemm(T, N, K, A.data(), lda, B.data(), ldb, C.data(), ldc);
          for (int64_t t = 0; t < T; ++t)
            for (int64_t n = 0; n < N; ++n) {
              double exact = 0, abs_sum = 0;
              for (int64_t i = 0; i < K; ++i) {
                const double p = double(A[size_t(t * lda + i)]) * double(B[size_t(n * ldb + i)]);
                exact += p;
                abs_sum += std::fabs(p);
              }
              // Any order of summing K products in f32 errs by at most K·u·Σ|products|
              // (u = 2⁻²⁴); a wrong index or a lost tail element errs by a whole product.
              const double bound = static_cast<double>(K) * 0x1p-24 * abs_sum;
              ASSERT_LE(std::fabs(C[size_t(t * ldc + n)] - exact), bound)
                  << gemm.name << " T=" << T << " N=" << N << " K=" << K << " at (" << t << "," << n << ")";
            }
          // Columns of the padding must be untouched.
          for (int64_t t = 0; t < T; ++t)
            for (int64_t n = N; n < ldc; ++n) ASSERT_TRUE(std::isnan(C[size_t(t * ldc + n)]));
        }
      }
    }
}

TEST_P(GemmKernel, SplittingRowsOrColumnsChangesNoBit) {
  for (const auto& gemm : test::registered_entries<kernels::F32GemmNt>(GetParam(), kNtOps)) {
    const int64_t T = 11, N = 37, K = 603;
    const auto A = random_vector(size_t(T * K), 3);
    const auto B = random_vector(size_t(N * K), 4);
    std::vector<float> whole(size_t(T * N)), pieces(size_t(T * N));
    gemm(T, N, K, A.data(), K, B.data(), K, whole.data(), N);
    // Uneven pieces of rows and columns, as a thread split could produce.
    const int64_t t_cuts[] = {0, 1, 6, 11}, n_cuts[] = {0, 5, 16, 17, 37};
    for (int ti = 0; ti < 3; ++ti)
      for (int ni = 0; ni < 4; ++ni) {
        const int64_t t0 = t_cuts[ti], t1 = t_cuts[ti + 1], n0 = n_cuts[ni], n1 = n_cuts[ni + 1];
        gemm(t1 - t0, n1 - n0, K, A.data() + t0 * K, K, B.data() + n0 * K, K, pieces.data() + t0 * N + n0, N);
      }
    for (size_t i = 0; i < whole.size(); ++i) ASSERT_EQ(whole[i], pieces[i]) << gemm.name << " element " << i;
  }
}

FFN_INSTANTIATE_FOR_EVERY_ISA(GemmKernel);

// The memory roof's read loop reads every float it is given and nothing beyond: a change to
// any one (the first, the last, each stream's part, the tail no full round covers) changes
// its result, in every read pattern, at sizes around their rounds (4 streams × 64 floats,
// 2 × 16, 1 × 16) and from unaligned
// starts; the buffer ends where the range does (ASan runs this too). Sums of ones are exact.
class RoofLoop : public testing::TestWithParam<Isa> {};

const test::CheckedOps kStreamReadOps = test::checks_ops({Op::stream_read});

TEST_P(RoofLoop, StreamReadReadsEveryFloat) {
  for (const auto& stream_read : test::registered_entries<kernels::StreamRead>(GetParam(), kStreamReadOps))
    for (int pattern = 0; pattern < kernels::kReadPatterns; ++pattern)
      for (int64_t n : {1, 7, 15, 16, 17, 31, 33, 63, 255, 256, 257, 1023, 1024, 1031, 5000})
        for (int64_t offset : {0, 1, 3}) {
          std::vector<float> buf(size_t(offset + n), 1.0f);
          const float* p = buf.data() + offset;
          const float base = stream_read(p, n, pattern);
          for (int64_t i : {int64_t(0), n / 4, n / 2, 3 * n / 4, n - 2, n - 1}) {
            if (i < 0) continue;
            buf[size_t(offset + i)] = 2.0f;
            EXPECT_NE(stream_read(p, n, pattern), base)
                << stream_read.name << " pattern " << pattern << " n=" << n << " offset=" << offset << " float " << i;
            buf[size_t(offset + i)] = 1.0f;
          }
        }
}

// The compute roofs count iterations · f32_roof_chains · f32_lanes · FLOPs per lane (2 for
// an FMA, 4 for a vdpbf16ps pair): so each loop must run exactly that many chains of that
// many lanes. Its result, the sum of every lane of every chain, shows it: chain c starts at
// 10⁻³·c (f32_fma_roof.hpp) and steps x ← 0.999·x + 10⁻³ (f32), or x ← x + 2b² with b the
// bf16 0x3A83 (avx512_bf16/bf16_panel_gemm_avx512_bf16.cpp). The model runs in double; f32's roundings stay
// within 10⁻³ relative for the f32 chains (contracting: ≤ 2u/(1 − 0.999) each) and 10⁻²
// for the bf16 ones (≤ 1 ulp of x a step), while a chain or a lane too many or too few, or
// one product a step instead of two, moves the sum by 4% or more.
const test::CheckedOps kF32RoofOps = test::checks_ops({Op::f32_fma_roof});
const test::CheckedOps kBf16RoofOps = test::checks_ops({Op::bf16_dot_roof});
const test::CheckedOps kInt8RoofOps = test::checks_ops({Op::int8_dot_roof});

TEST_P(RoofLoop, ComputeRoofRunsItsChainsOfLanes) {
  const auto& k = kernel_table(GetParam());
  const double m = 0.999f, a = 1e-3f, b = bf16_to_f32(0x3A83);
  auto check = [&](const kernels::Named<kernels::F32FmaRoof>& roof, bool bf16) {
    for (int64_t iterations : {0, 1, 10, 1000, 10000}) {
      double expected = 0;
      for (int64_t c = 0; c < k.f32_roof_chains; ++c) {
        double x = double(1e-3f * float(c));
        for (int64_t i = 0; i < iterations; ++i) x = bf16 ? x + 2 * b * b : x * m + a;
        expected += double(k.f32_lanes) * x;
      }
      EXPECT_NEAR(roof(iterations), expected, (bf16 ? 1e-2 : 1e-3) * expected)
          << roof.name << " iterations=" << iterations << ", " << k.f32_roof_chains << " chains of " << k.f32_lanes
          << " lanes";
    }
  };
  for (const auto& roof : test::registered_entries<kernels::F32FmaRoof>(GetParam(), kF32RoofOps)) check(roof, false);
  for (const auto& roof : test::registered_entries<kernels::F32FmaRoof>(GetParam(), kBf16RoofOps)) check(roof, true);
}

// The integer roof (int8_dot_roof.hpp) counts iterations · int8_roof_chains · int8_roof_lanes
// · 8 operations: each of its int8_roof_chains int32 vectors of int8_roof_lanes lanes starts at its
// index c and a step adds 4 to every lane (4 byte products 1·1), so the sum of every lane of
// every chain is lanes · Σ_c (c + 4·iterations) exactly (a float, exact below 2²⁴: these
// iteration counts stay under it). A chain or a lane too many or too few, or a step that
// adds 2 products instead of 4 (one vpmaddubsw pair without its vpmaddwd), changes it.
TEST_P(RoofLoop, IntegerRoofRunsItsChainsOfByteDots) {
  const auto& k = kernel_table(GetParam());
  for (const auto& roof : test::registered_entries<kernels::F32FmaRoof>(GetParam(), kInt8RoofOps))
    for (int64_t iterations : {0, 1, 10, 1000, 10000}) {
      double expected = 0;
      for (int64_t c = 0; c < k.int8_roof_chains; ++c)
        expected += double(k.int8_roof_lanes) * double(c + 4 * iterations);
      ASSERT_GT(expected, 0.0);
      ASSERT_LT(expected, double(1 << 24));
      EXPECT_EQ(double(roof(iterations)), expected)
          << roof.name << " iterations=" << iterations << ", " << k.int8_roof_chains << " chains of "
          << k.int8_roof_lanes << " lanes";
    }
}

FFN_INSTANTIATE_FOR_EVERY_ISA(RoofLoop);

// Every level of this build's list (ffn/isa_list.hpp), whether this CPU has it or not.
const std::vector<Isa>& kEveryIsa = all_isas();

TEST(Isa, DispatchAndNames) {
  EXPECT_TRUE(isa_supported(Isa::scalar));
  EXPECT_EQ(supported_isas().front(), Isa::scalar);
#if defined(__x86_64__)
  EXPECT_EQ(parse_isa("avx2"), Isa::avx2);
  EXPECT_EQ(parse_isa("avx2_vnni"), Isa::avx2_vnni);
  EXPECT_EQ(parse_isa("avx512_vnni"), Isa::avx512_vnni);
#endif
  EXPECT_THROW(parse_isa("sse9"), Error);
  // The message names every level of the list.
  try {
    parse_isa("sse9");
  } catch (const Error& e) {
    for (Isa isa : all_isas()) EXPECT_NE(std::string(e.what()).find(isa_name(isa)), std::string::npos) << e.what();
  }
  EXPECT_EQ(isa_names(), [] {
    std::string names;
    for (Isa isa : all_isas()) names += (names.empty() ? "" : ", ") + std::string(isa_name(isa));
    return names;
  }());
  for (Isa isa : supported_isas()) {
    test::ScopedIsa scoped(isa);
    EXPECT_EQ(active_isa(), isa);
    EXPECT_EQ(kernels::active_kernels().isa, isa);
    EXPECT_EQ(parse_isa(isa_name(isa)), isa);
  }
}

// Each level needs the one it builds on (AVX512_BF16 implies VNNI on every CPU; avx2_vnni and
// avx512 both build on avx2, avx512_bf16 and amx_int8 on avx512_vnni), and supported_isas()
// lists them narrowest first.
TEST(Isa, LevelsAreNested) {
  const std::vector<Isa> supported = supported_isas();
  for (size_t i = 1; i < supported.size(); ++i) EXPECT_LT(supported[i - 1], supported[i]);
#if defined(__x86_64__)
  const std::pair<Isa, Isa> builds_on[] = {
      {Isa::avx2, Isa::scalar},        {Isa::avx2_vnni, Isa::avx2},          {Isa::avx512, Isa::avx2},
      {Isa::avx512_vnni, Isa::avx512}, {Isa::avx512_bf16, Isa::avx512_vnni}, {Isa::amx_int8, Isa::avx512_vnni}};
  for (const auto& [level, base] : builds_on) EXPECT_EQ(isa_extends(level), base) << isa_name(level);
#endif
  for (Isa level : kEveryIsa) {
    const Isa base = isa_extends(level);
    EXPECT_TRUE(!isa_supported(level) || isa_supported(base)) << isa_name(level) << " without " << isa_name(base);
    EXPECT_TRUE(level == Isa::scalar ? base == level : base < level) << isa_name(level) << " extends a wider level";
  }
  for (Isa isa : kEveryIsa) EXPECT_EQ(std::count(supported.begin(), supported.end(), isa), isa_supported(isa) ? 1 : 0);
}

// Every op registered on any ISA — the CPU's or not: listing runs no kernel — is checked
// by some kernel test (test::checks_ops), so a new kernel cannot go untested.
TEST(KernelRegistry, EveryRegisteredOpHasAChecker) {
  for (Isa isa : kEveryIsa)
    for (const kernels::RegisteredKernel& r : kernels::registered_kernels(isa)) {
      EXPECT_EQ(r.isa, isa);
      if (r.op == Op::panel_gemm)
        EXPECT_TRUE(test::panel_families_with_checkers().count(kernels::panel_family(r.type)))
            << r.name << " (the panel kernel of " << weight_type_name(r.type) << ", table " << isa_name(isa)
            << ") has no checker";
      else
        EXPECT_TRUE(test::ops_with_checkers().count(r.op))
            << r.name << " (op " << kernels::op_name(r.op) << ", table " << isa_name(isa) << ") has no checker";
    }
}

// Every table has a kernel for every op but the bf16 dot product's helpers, which only the
// level with a bf16 dot product has, and the integer roof loop, which the levels without
// integer dot instructions (scalar, neon) lack, and a panel kernel for every weight type (none for the
// activation-only formats); each is named for its op — a panel kernel for its type and op,
// <type>_panel_gemm_ — (the scalar reference's one f32_gemm_nt serving as the packed form
// too), and names the ISA it was written for.
TEST(KernelRegistry, EveryTableHasEveryOpNamedForIt) {
  const std::set<Op> bf16_only = {Op::f32_to_bf16_rows, Op::bf16_dot_roof};
  for (Isa isa : kEveryIsa) {
    const std::vector<kernels::RegisteredKernel> registered = kernels::registered_kernels(isa);
    const bool has_bf16_dot = std::any_of(registered.begin(), registered.end(),
                                          [](const kernels::RegisteredKernel& r) { return r.op == Op::bf16_dot_roof; });
    std::set<Op> present;
    std::set<WeightType> panels;
    for (const kernels::RegisteredKernel& r : registered) {
      present.insert(r.op);
      const std::string name(r.name), op(kernels::op_name(r.op));
      if (r.op == Op::panel_gemm) {
        panels.insert(r.type);
        EXPECT_EQ(name.rfind(std::string(weight_type_name(r.type)) + "_panel_gemm_", 0), 0u) << name;
        continue;
      }
      const bool scalar_packed = r.op == Op::f32_gemm_nt_packed && name == "f32_gemm_nt_scalar";
      EXPECT_TRUE(name.rfind(op + "_", 0) == 0 || scalar_packed) << name << " registered as " << op;
      EXPECT_TRUE(bf16_only.count(r.op) == 0 || has_bf16_dot) << name << " in " << isa_name(isa);
    }
    // The integer roof loop: every level with integer dot instructions (x86 from avx2, Arm
    // from dotprod), not scalar or plain NEON.
    const bool has_int8_roof = present.count(Op::int8_dot_roof) > 0;
    EXPECT_EQ(has_int8_roof, isa != Isa::scalar && isa_name(isa) != "neon") << isa_name(isa);
    const size_t all = std::size(kernels::kAllOps);
    EXPECT_EQ(present.size(), (has_bf16_dot ? all : all - bf16_only.size()) - (has_int8_roof ? 0 : 1)) << isa_name(isa);
    EXPECT_EQ(panels.size(), weight_types().size()) << isa_name(isa);
    for (const WeightTypeInfo& t : weight_types()) EXPECT_TRUE(panels.count(t.type)) << t.name << " in " << isa_name(isa);
  }
}

#if defined(__x86_64__)
// What each level of AVX-512 takes over or adds, in names: VNNI replaces AVX2's integer
// kernels, which plain AVX-512 keeps (inherited); BF16 adds its two helpers and replaces the
// bf16 panel kernel, and changes nothing else.
TEST(KernelRegistry, AvxLevelsInheritWhatTheyDoNotReplace) {
  auto name_of = [](Isa isa, Op op, WeightType t = WeightType::f32) {
    for (const kernels::RegisteredKernel& r : kernels::registered_kernels(isa))
      if (r.op == op && (op != Op::panel_gemm || r.type == t)) return std::string(r.name);
    return std::string();
  };
  EXPECT_EQ(name_of(Isa::avx512, Op::panel_gemm, WeightType::q8_0), "q8_0_panel_gemm_avx2_1x64");
  EXPECT_EQ(name_of(Isa::avx512_vnni, Op::panel_gemm, WeightType::q8_0), "q8_0_panel_gemm_avx512_vnni_2x64");
  EXPECT_EQ(name_of(Isa::avx512_vnni, Op::panel_gemm, WeightType::q4_K), "q4_K_panel_gemm_avx512_vnni_2x64");
  EXPECT_EQ(name_of(Isa::avx512_vnni, Op::f32_panel_gemm), name_of(Isa::avx512, Op::f32_panel_gemm));
  // The integer roof follows the integer kernels, with its chains' shape (the table itself,
  // kernel_table, is handed out only on a CPU that runs the level; the names are read on any).
  EXPECT_EQ(name_of(Isa::avx512, Op::int8_dot_roof), "int8_dot_roof_avx2");
  if (isa_supported(Isa::avx512)) {
    EXPECT_EQ(kernel_table(Isa::avx512).int8_roof_lanes, 8);
  }
  EXPECT_EQ(name_of(Isa::avx512_vnni, Op::int8_dot_roof), "int8_dot_roof_avx512_vnni");
  if (isa_supported(Isa::avx512_vnni)) {
    EXPECT_EQ(kernel_table(Isa::avx512_vnni).int8_roof_lanes, 16);
  }
  EXPECT_EQ(name_of(Isa::avx512_bf16, Op::panel_gemm, WeightType::bf16), "bf16_panel_gemm_avx512_bf16_6x64");
  for (const kernels::RegisteredKernel& r : kernels::registered_kernels(Isa::avx512_vnni))
    if (r.op != Op::panel_gemm || r.type != WeightType::bf16) {
      EXPECT_EQ(name_of(Isa::avx512_bf16, r.op, r.type), std::string(r.name));
    }
}
#endif

}  // namespace
}  // namespace ffn
