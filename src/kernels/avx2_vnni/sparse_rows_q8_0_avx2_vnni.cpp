// Activation-sparse decode's q8_0 up products (sparse_rows_q8_0.hpp) with AVX-VNNI (VEX-coded vpdpbusd):
// one instruction a block's 32 products where AVX2 takes two, the same bits.
// Compiled with the avx2_vnni level's flags (ffn/isa_list.hpp); called only when the CPU has the level.
#include "kernels/avx2/sparse_rows_q8_0_avx2.hpp"
#include "kernels/avx2_vnni/avx2_vnni_kernels.hpp"
#include "kernels/sparse_rows_q8_0.hpp"

namespace ffn::kernels {
namespace {
struct DpbusdDot {
  static __m256i dot(__m256i u, __m256i s) { return _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), u, s); }
};
}  // namespace

const RowsDotQ8_0 rows_dot_q8_0_avx2_vnni = sparse_rows::rows_dot_q8_0<I8x32<DpbusdDot>>;

}  // namespace ffn::kernels
