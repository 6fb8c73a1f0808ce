// AVX-512F loops of activation-sparse decode (sparse_rows.hpp): 16 lanes a vector.
// Compiled with the avx512 level's flags (ffn/isa_list.hpp); called only when the CPU has the level.
#include <cstring>

#include "kernels/avx512/avx512_kernels.hpp"
#include "kernels/avx512/vec_avx512.hpp"
#include "kernels/avx512/widen16_avx512.hpp"
#include "kernels/sparse_rows.hpp"

namespace ffn::kernels {
namespace {
// q8_0 rows (rows_axpy): d broadcast from its binary16 (F16C); 16 int8 codes sign-extended, converted.
struct Q8x16 {
  static __m512 scale(const std::byte* block) {
    uint16_t d;
    std::memcpy(&d, block, sizeof d);
    return _mm512_set1_ps(_cvtsh_ss(d));
  }
  static __m512 load(const int8_t* q) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(bytes));
  }
};
}  // namespace

using SparseRowsAvx512 = sparse_rows::Entries<Avx512Store, F16x16, Bf16x16, Q8x16>;
const RowsDot rows_dot_avx512 = SparseRowsAvx512::dot;
const RowsAxpy rows_axpy_avx512 = SparseRowsAvx512::axpy;
}  // namespace ffn::kernels
