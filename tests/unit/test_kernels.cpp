// Every forward GEMM kernel registered on every ISA against a double-precision reference,
// at sizes below, equal to, above and multiples of its register tile (4×4 AVX-512, 3×3
// AVX2) and of its vector width (K of 16 and 8 lanes), plus a check that splitting rows or
// columns never changes a bit; and the memory roof's loop.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

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

FFN_INSTANTIATE_FOR_EVERY_ISA(RoofLoop);

TEST(Isa, DispatchAndNames) {
  EXPECT_TRUE(isa_supported(Isa::scalar));
  EXPECT_EQ(supported_isas().front(), Isa::scalar);
  EXPECT_EQ(parse_isa("avx2"), Isa::avx2);
  EXPECT_EQ(parse_isa("avx512_vnni"), Isa::avx512_vnni);
  EXPECT_THROW(parse_isa("sse9"), Error);
  for (Isa isa : supported_isas()) {
    test::ScopedIsa scoped(isa);
    EXPECT_EQ(active_isa(), isa);
    EXPECT_EQ(kernels::active_kernels().isa, isa);
    EXPECT_EQ(parse_isa(isa_name(isa)), isa);
  }
}

}  // namespace
}  // namespace ffn
