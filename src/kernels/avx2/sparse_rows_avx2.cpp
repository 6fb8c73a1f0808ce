// AVX2 loops of activation-sparse decode (sparse_rows.hpp): 8 lanes a vector.
// Compiled with the avx2 level's flags (ffn/isa_list.hpp); called only when the CPU has the level.
#include "kernels/avx2/avx2_kernels.hpp"
#include "kernels/avx2/vec_avx2.hpp"
#include "kernels/avx2/widen16_avx2.hpp"
#include "kernels/sparse_rows.hpp"

namespace ffn::kernels {
using SparseRowsAvx2 = sparse_rows::Entries<Avx2Store, F16x8, Bf16x8>;
const RowsDot rows_dot_avx2 = SparseRowsAvx2::dot;
const RowsAxpy rows_axpy_avx2 = SparseRowsAvx2::axpy;
}  // namespace ffn::kernels
