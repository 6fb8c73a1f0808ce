// AVX2 loops of activation-sparse decode (sparse_rows.hpp): 8 lanes a vector.
// Compiled with the avx2 level's flags (ffn/isa_list.hpp); called only when the CPU has the level.
#include <cstring>

#include "kernels/avx2/avx2_kernels.hpp"
#include "kernels/avx2/vec_avx2.hpp"
#include "kernels/avx2/widen16_avx2.hpp"
#include "kernels/sparse_rows.hpp"

namespace ffn::kernels {
namespace {
// q8_0's values: d broadcast from its binary16 (F16C), 8 int8 sign-extended, converted, times d.
struct Q8x8 {
  static __m256 scale(const std::byte* block) {
    uint16_t d;
    std::memcpy(&d, block, sizeof d);
    return _mm256_set1_ps(_cvtsh_ss(d));
  }
  static __m256 load(const int8_t* q, __m256 d) {
    const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(q));
    return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(bytes)), d);
  }
};
}  // namespace

using SparseRowsAvx2 = sparse_rows::Entries<Avx2Store, F16x8, Bf16x8, Q8x8>;
const RowsDot rows_dot_avx2 = SparseRowsAvx2::dot;
const RowsAxpy rows_axpy_avx2 = SparseRowsAvx2::axpy;
}  // namespace ffn::kernels
