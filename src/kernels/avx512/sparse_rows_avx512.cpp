// AVX-512F loops of activation-sparse decode (sparse_rows.hpp): 16 lanes a vector.
// Compiled with the avx512 level's flags (ffn/isa_list.hpp); called only when the CPU has the level.
#include "kernels/avx512/avx512_kernels.hpp"
#include "kernels/avx512/vec_avx512.hpp"
#include "kernels/avx512/widen16_avx512.hpp"
#include "kernels/sparse_rows.hpp"

namespace ffn::kernels {
using SparseRowsAvx512 = sparse_rows::Entries<Avx512Store, F16x16, Bf16x16>;
const RowsDot rows_dot_avx512 = SparseRowsAvx512::dot;
const RowsAxpy rows_axpy_avx512 = SparseRowsAvx512::axpy;
}  // namespace ffn::kernels
