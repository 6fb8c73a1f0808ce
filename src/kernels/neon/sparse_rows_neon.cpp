// Advanced SIMD loops of activation-sparse decode (sparse_rows.hpp): 4 lanes a vector.
// Compiled with the neon level's flags (ffn/isa_list.hpp); called only when the CPU has the level.
#include "kernels/neon/neon_kernels.hpp"
#include "kernels/neon/vec_neon.hpp"
#include "kernels/neon/widen16_neon.hpp"
#include "kernels/sparse_rows.hpp"

namespace ffn::kernels {
using SparseRowsNeon = sparse_rows::Entries<NeonStore, F16x4, Bf16x4>;
const RowsDot rows_dot_neon = SparseRowsNeon::dot;
const RowsAxpy rows_axpy_neon = SparseRowsNeon::axpy;
}  // namespace ffn::kernels
