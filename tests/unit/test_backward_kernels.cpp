// The GEMM kernels of backward (f32_gemm_nn, f32_gemm_tn_add), every one registered on
// every ISA, against a
// double-precision reference, at sizes below, equal to, above and multiples of their
// register tiles (8×32 AVX-512, 6×16 AVX2) and of the NN kernel's K block (256), with
// padded strides; and their determinism contracts: splitting rows, columns or (NN) K
// changes no bit, and TN's "add a sum formed from 0" doubles exactly when repeated.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "isa_param.hpp"
#include "kernels/kernels.hpp"
#include "random_data.hpp"

namespace ffn {
namespace {

using kernels::kernel_table;
using kernels::Op;

using test::random_vector;

const int64_t kRows[] = {1, 2, 5, 6, 7, 8, 9, 13, 17};
const int64_t kCols[] = {1, 5, 8, 15, 16, 17, 31, 32, 33, 47, 64, 65, 100};
const int64_t kDepths[] = {0, 1, 7, 16, 17, 100, 255, 256, 257, 600};

class BackwardGemmKernel : public testing::TestWithParam<Isa> {};

const test::CheckedOps kNnOps = test::checks_ops({Op::f32_gemm_nn});
const test::CheckedOps kTnAddOps = test::checks_ops({Op::f32_gemm_tn_add});

// Any order of summing K products in f32 errs by at most K·u·Σ|products| (u = 2⁻²⁴); a
// wrong index or a lost tail element errs by a whole product.
TEST_P(BackwardGemmKernel, NnMatchesDoubleReferenceWithinSummationBound) {
  for (const auto& f32_gemm_nn : test::registered_entries<kernels::F32GemmNn>(GetParam(), kNnOps))
    for (int64_t T : kRows)
      for (int64_t N : kCols)
        for (int64_t K : kDepths) {
          const int64_t lda = K + 3, ldb = N + 5, ldc = N + 2;
          const auto A = random_vector(size_t(T * lda), 1);
          const auto B = random_vector(size_t(std::max<int64_t>(K, 1) * ldb), 2);
          std::vector<float> C(size_t(T * ldc), NAN);  // write mode must not read C
          f32_gemm_nn(T, N, K, A.data(), lda, B.data(), ldb, C.data(), ldc, false);
          for (int64_t t = 0; t < T; ++t) {
            for (int64_t n = 0; n < N; ++n) {
              double exact = 0, abs_sum = 0;
              for (int64_t i = 0; i < K; ++i) {
                const double p = double(A[size_t(t * lda + i)]) * double(B[size_t(i * ldb + n)]);
                exact += p;
                abs_sum += std::fabs(p);
              }
              ASSERT_LE(std::fabs(C[size_t(t * ldc + n)] - exact), double(K) * 0x1p-24 * abs_sum)
                  << f32_gemm_nn.name << " T=" << T << " N=" << N << " K=" << K << " at (" << t << "," << n << ")";
            }
            for (int64_t n = N; n < ldc; ++n) ASSERT_TRUE(std::isnan(C[size_t(t * ldc + n)])) << "padding written";
          }
        }
}

TEST_P(BackwardGemmKernel, TnAddMatchesDoubleReferenceWithinSummationBound) {
  for (const auto& f32_gemm_tn_add : test::registered_entries<kernels::F32GemmTnAdd>(GetParam(), kTnAddOps))
    for (int64_t M : kRows)
      for (int64_t N : kCols)
        for (int64_t K : kDepths) {
          const int64_t lda = M + 3, ldb = N + 5, ldc = N + 2;
          const auto A = random_vector(size_t(std::max<int64_t>(K, 1) * lda), 3);
          const auto B = random_vector(size_t(std::max<int64_t>(K, 1) * ldb), 4);
          std::vector<float> C = random_vector(size_t(M * ldc), 5);
          for (int64_t m = 0; m < M; ++m)
            for (int64_t n = N; n < ldc; ++n) C[size_t(m * ldc + n)] = NAN;
          const std::vector<float> C0 = C;
          f32_gemm_tn_add(M, N, K, A.data(), lda, B.data(), ldb, C.data(), ldc);
          for (int64_t m = 0; m < M; ++m) {
            for (int64_t n = 0; n < N; ++n) {
              double exact = 0, abs_sum = 0;
              for (int64_t i = 0; i < K; ++i) {
                const double p = double(A[size_t(i * lda + m)]) * double(B[size_t(i * ldb + n)]);
                exact += p;
                abs_sum += std::fabs(p);
              }
              const double c0 = C0[size_t(m * ldc + n)];
              // The sum's error, then one rounding of C₀ + S.
              const double bound = double(K) * 0x1p-24 * abs_sum + 0x1p-24 * std::fabs(c0 + exact);
              ASSERT_LE(std::fabs(C[size_t(m * ldc + n)] - (c0 + exact)), bound)
                  << f32_gemm_tn_add.name << " M=" << M << " N=" << N << " K=" << K << " at (" << m << "," << n << ")";
            }
            for (int64_t n = N; n < ldc; ++n) ASSERT_TRUE(std::isnan(C[size_t(m * ldc + n)])) << "padding written";
          }
        }
}

TEST_P(BackwardGemmKernel, NnSplittingRowsColumnsOrDepthChangesNoBit) {
  for (const auto& f32_gemm_nn : test::registered_entries<kernels::F32GemmNn>(GetParam(), kNnOps)) {
    const int64_t T = 11, N = 70, K = 700;
    const auto A = random_vector(size_t(T * K), 6);
    const auto B = random_vector(size_t(K * N), 7);
    std::vector<float> whole(size_t(T * N)), pieces(size_t(T * N));
    f32_gemm_nn(T, N, K, A.data(), K, B.data(), N, whole.data(), N, false);
    // Uneven pieces of rows and columns, as a thread split could produce; K in consecutive
    // calls that resume the chain, at cuts that are not multiples of the kernel's K block.
    const int64_t t_cuts[] = {0, 1, 6, 11}, n_cuts[] = {0, 5, 16, 17, 70}, k_cuts[] = {0, 3, 300, 513, 700};
    for (int ti = 0; ti < 3; ++ti)
      for (int ni = 0; ni < 4; ++ni)
        for (int ki = 0; ki < 4; ++ki) {
          const int64_t t0 = t_cuts[ti], n0 = n_cuts[ni], k0 = k_cuts[ki];
          f32_gemm_nn(t_cuts[ti + 1] - t0, n_cuts[ni + 1] - n0, k_cuts[ki + 1] - k0, A.data() + t0 * K + k0, K,
                      B.data() + k0 * N + n0, N, pieces.data() + t0 * N + n0, N, ki > 0);
        }
    for (size_t i = 0; i < whole.size(); ++i) ASSERT_EQ(whole[i], pieces[i]) << f32_gemm_nn.name << " element " << i;
  }
}

TEST_P(BackwardGemmKernel, TnSplittingRowsOrColumnsChangesNoBitAndRepeatingDoubles) {
  for (const auto& f32_gemm_tn_add : test::registered_entries<kernels::F32GemmTnAdd>(GetParam(), kTnAddOps)) {
    const int64_t M = 37, N = 70, K = 203;
    const auto A = random_vector(size_t(K * M), 8);
    const auto B = random_vector(size_t(K * N), 9);
    std::vector<float> whole(size_t(M * N), 0.0f), pieces(size_t(M * N), 0.0f);
    f32_gemm_tn_add(M, N, K, A.data(), M, B.data(), N, whole.data(), N);
    const int64_t m_cuts[] = {0, 1, 16, 37}, n_cuts[] = {0, 5, 16, 17, 70};
    for (int mi = 0; mi < 3; ++mi)
      for (int ni = 0; ni < 4; ++ni) {
        const int64_t m0 = m_cuts[mi], n0 = n_cuts[ni];
        f32_gemm_tn_add(m_cuts[mi + 1] - m0, n_cuts[ni + 1] - n0, K, A.data() + m0, M, B.data() + n0, N,
                        pieces.data() + m0 * N + n0, N);
      }
    for (size_t i = 0; i < whole.size(); ++i)
      ASSERT_EQ(whole[i], pieces[i]) << f32_gemm_tn_add.name << " element " << i;
    std::vector<float> twice = whole;
    f32_gemm_tn_add(M, N, K, A.data(), M, B.data(), N, twice.data(), N);
    for (size_t i = 0; i < whole.size(); ++i)
      ASSERT_EQ(2.0f * whole[i], twice[i]) << f32_gemm_tn_add.name << " element " << i;
  }
}

// Prefixed "Backward" (not the macro's "Isa") so that --gtest_filter='Backward*' runs them.
INSTANTIATE_TEST_SUITE_P(Backward, BackwardGemmKernel, testing::ValuesIn(supported_isas()), test::isa_param_name);

TEST(BackwardGemmKernel, NamesCarryTheTile) {
  for (Isa isa : supported_isas()) {
    const auto& k = kernel_table(isa);
    const std::string nn = k.f32_gemm_nn.name, tn = k.f32_gemm_tn_add.name;
    // A level that adds only integer or bf16 dot products (avx512_vnni, dotprod, …) keeps
    // the f32 kernels of a level it extends: each name carries the level it was written for,
    // the table's own or one below it, and both products come from the same level.
    std::string family;
    for (Isa level = isa;; level = isa_extends(level)) {
      if (nn.rfind("f32_gemm_nn_" + std::string(isa_name(level)), 0) == 0) family = isa_name(level);
      if (!family.empty() || level == Isa::scalar) break;
    }
    EXPECT_FALSE(family.empty()) << nn << " names no level of " << isa_name(isa) << "'s";
    EXPECT_EQ(tn.rfind("f32_gemm_tn_add_" + family, 0), 0u) << tn;
  }
}

}  // namespace
}  // namespace ffn
