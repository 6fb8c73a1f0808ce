// Advanced SIMD loops of activation-sparse decode (sparse_rows.hpp): 4 lanes a vector.
// Compiled with the neon level's flags (ffn/isa_list.hpp); called only when the CPU has the level.
#include <cstring>

#include "kernels/neon/neon_kernels.hpp"
#include "kernels/neon/vec_neon.hpp"
#include "kernels/neon/widen16_neon.hpp"
#include "kernels/sparse_rows.hpp"

namespace ffn::kernels {
namespace {
// q8_0's values: d widened from its binary16, 4 int8 widened twice, converted, times d.
struct Q8x4 {
  static float32x4_t scale(const std::byte* block) {
    uint16_t d;
    std::memcpy(&d, block, sizeof d);
    return vdupq_n_f32(vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(d))), 0));
  }
  static float32x4_t load(const int8_t* q, float32x4_t d) {
    int32_t four;
    std::memcpy(&four, q, sizeof four);
    const int16x8_t wide = vmovl_s8(vreinterpret_s8_s32(vdup_n_s32(four)));
    return vmulq_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(wide))), d);
  }
};
}  // namespace

using SparseRowsNeon = sparse_rows::Entries<NeonStore, F16x4, Bf16x4, Q8x4>;
const RowsDot rows_dot_neon = SparseRowsNeon::dot;
const RowsAxpy rows_axpy_neon = SparseRowsNeon::axpy;
}  // namespace ffn::kernels
