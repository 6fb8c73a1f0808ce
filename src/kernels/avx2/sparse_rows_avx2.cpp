// AVX2 loops of activation-sparse decode (sparse_rows.hpp): 8 lanes a vector.
// Compiled with the avx2 level's flags (ffn/isa_list.hpp); called only when the CPU has the level.
#include <cstring>

#include "kernels/avx2/avx2_kernels.hpp"
#include "kernels/avx2/sparse_rows_q8_0_avx2.hpp"
#include "kernels/avx2/vec_avx2.hpp"
#include "kernels/avx2/widen16_avx2.hpp"
#include "kernels/sparse_rows.hpp"
#include "kernels/sparse_rows_q8_0.hpp"

namespace ffn::kernels {
namespace {
// q8_0 rows (rows_axpy): d broadcast from its binary16 (F16C); 8 int8 codes sign-extended, converted.
struct Q8x8 {
  static __m256 scale(const std::byte* block) {
    uint16_t d;
    std::memcpy(&d, block, sizeof d);
    return _mm256_set1_ps(_cvtsh_ss(d));
  }
  static __m256 load(const int8_t* q) {
    const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(q));
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(bytes));
  }
};

// Unsigned × signed bytes by vpmaddubsw (pairs into int16: at most 2·128·127, no saturation)
// and vpmaddwd against ones (pairs into int32).
struct MaddubsDot {
  static __m256i dot(__m256i u, __m256i s) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
  }
};
}  // namespace

using SparseRowsAvx2 = sparse_rows::Entries<Avx2Store, F16x8, Bf16x8, Q8x8>;
const RowsDot rows_dot_avx2 = SparseRowsAvx2::dot;
const RowsAxpy rows_axpy_avx2 = SparseRowsAvx2::axpy;
const RowsDotQ8_0 rows_dot_q8_0_avx2 = sparse_rows::rows_dot_q8_0<I8x32<MaddubsDot>>;
}  // namespace ffn::kernels
