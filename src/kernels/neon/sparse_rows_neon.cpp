// Advanced SIMD loops of activation-sparse decode (sparse_rows.hpp): 4 lanes a vector.
// Compiled with the neon level's flags (ffn/isa_list.hpp); called only when the CPU has the level.
#include <cstring>

#include "kernels/neon/neon_kernels.hpp"
#include "kernels/neon/sparse_rows_q8_0_neon.hpp"
#include "kernels/neon/vec_neon.hpp"
#include "kernels/neon/widen16_neon.hpp"
#include "kernels/sparse_rows.hpp"
#include "kernels/sparse_rows_q8_0.hpp"

namespace ffn::kernels {
namespace {
// q8_0 rows (rows_axpy): d widened from its binary16; 4 int8 codes widened twice, converted.
struct Q8x4 {
  static float32x4_t scale(const std::byte* block) {
    uint16_t d;
    std::memcpy(&d, block, sizeof d);
    return vdupq_n_f32(vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(d))), 0));
  }
  static float32x4_t load(const int8_t* q) {
    int32_t four;
    std::memcpy(&four, q, sizeof four);
    const int16x8_t wide = vmovl_s8(vreinterpret_s8_s32(vdup_n_s32(four)));
    return vcvtq_f32_s32(vmovl_s16(vget_low_s16(wide)));
  }
};

// 16 products by vmull_s8 and vmlal_high_s8 (two a lane of int16: at most 2·128·127, the
// activations' codes being at least −127), added pairwise into the int32 lanes.
struct WideningDot {
  static int32x4_t dot(int32x4_t acc, int8x16_t w, int8x16_t x) {
    return vpadalq_s16(acc, vmlal_high_s8(vmull_s8(vget_low_s8(w), vget_low_s8(x)), w, x));
  }
};
}  // namespace

using SparseRowsNeon = sparse_rows::Entries<NeonStore, F16x4, Bf16x4, Q8x4>;
const RowsDot rows_dot_neon = SparseRowsNeon::dot;
const RowsAxpy rows_axpy_neon = SparseRowsNeon::axpy;
const RowsDotQ8_0 rows_dot_q8_0_neon = sparse_rows::rows_dot_q8_0<I8x16x2<WideningDot>>;
}  // namespace ffn::kernels
