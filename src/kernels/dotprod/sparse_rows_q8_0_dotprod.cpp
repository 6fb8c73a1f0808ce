// Activation-sparse decode's q8_0 up products (sparse_rows_q8_0.hpp) with SDOT: one
// instruction a 16 products where Advanced SIMD alone takes two and a pairwise add, the
// same bits. Compiled with the dotprod level's flags (ffn/isa_list.hpp); called only when the
// CPU has the level.
#include "kernels/dotprod/dotprod_kernels.hpp"
#include "kernels/neon/sparse_rows_q8_0_neon.hpp"
#include "kernels/sparse_rows_q8_0.hpp"

namespace ffn::kernels {
namespace {
struct SdotDot {
  static int32x4_t dot(int32x4_t acc, int8x16_t w, int8x16_t x) { return vdotq_s32(acc, w, x); }
};
}  // namespace

const RowsDotQ8_0 rows_dot_q8_0_dotprod = sparse_rows::rows_dot_q8_0<I8x16x2<SdotDot>>;

}  // namespace ffn::kernels
