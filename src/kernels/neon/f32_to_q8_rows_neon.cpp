// The activations' quantisation in Advanced SIMD (contract in kernels.hpp, f32_to_q8_rows):
// the same arithmetic as the scalar reference a block at a time, so the same bits — q8_0's
// codes by FCVTAS (to nearest, halves away from zero: std::round), q8_K's by ggml's
// 1.5·2²³ trick, both narrowed to bytes by XTN, which keeps the low byte as the reference's
// cast to int8 does; q8_0's binary16 scale by core's portable conversion, which no FPCR
// setting changes. Four lanes a step, where the scalar loop called roundf a value.
// Compiled with the neon level's flags (ffn/isa_list.hpp); called only when the CPU has the level.
#include <arm_neon.h>

#include <cfloat>
#include <cmath>

#include "core/quant.hpp"
#include "core/quant_checks.hpp"
#include "kernels/neon/neon_kernels.hpp"
#include "kernels/q8_rows_by_blocks.hpp"

namespace ffn::kernels {
namespace {

// 16 codes q[0 … 3] (int32) stored as their low bytes in order; returns their sum.
int32_t store_codes(const int32x4_t q[4], int8_t* codes) {
  const int16x8_t lo = vcombine_s16(vmovn_s32(q[0]), vmovn_s32(q[1]));
  const int16x8_t hi = vcombine_s16(vmovn_s32(q[2]), vmovn_s32(q[3]));
  vst1q_s8(codes, vcombine_s8(vmovn_s16(lo), vmovn_s16(hi)));
  return vaddvq_s32(vaddq_s32(vaddq_s32(q[0], q[1]), vaddq_s32(q[2], q[3])));
}

// The largest |x| of n values (a multiple of 4); false where one is not finite.
bool largest_abs(const float* x, int n, float* largest) {
  float32x4_t amax = vdupq_n_f32(0.0f);
  uint32x4_t finite = vdupq_n_u32(~0u);
  for (int i = 0; i < n; i += 4) {
    const float32x4_t a = vabsq_f32(vld1q_f32(x + i));
    finite = vandq_u32(finite, vcleq_f32(a, vdupq_n_f32(FLT_MAX)));  // false for Inf and NaN
    amax = vmaxq_f32(amax, a);
  }
  *largest = vmaxvq_f32(amax);
  return vminvq_u32(finite) != 0;
}

// One q8_0 block of 32 values; false where one is not finite or the scale overflows binary16.
bool q8_0_block(const float* x, int8_t* codes, float* scale, int16_t* sums) {
  float amax;
  if (!largest_abs(x, 32, &amax)) return false;
  const float d = amax / 127.0f;
  const uint16_t h = f32_to_f16(d);
  if ((h & 0x7C00u) == 0x7C00u) return false;
  *scale = f16_to_f32(h);
  const float id = ffn::detail::reciprocal_scale(d);
  const float32x4_t idv = vdupq_n_f32(id);
  for (int half = 0; half < 2; ++half) {
    int32x4_t q[4];
    for (int i = 0; i < 4; ++i) q[i] = vcvtaq_s32_f32(vmulq_f32(vld1q_f32(x + 16 * half + 4 * i), idv));
    sums[half] = static_cast<int16_t>(store_codes(q, codes + 16 * half));
  }
  return true;
}

// One q8_K block of 256 values; false where one is not finite.
bool q8_K_block(const float* x, int8_t* codes, float* scale, int16_t* sums) {
  float largest;
  if (!largest_abs(x, 256, &largest)) return false;
  if (largest == 0.0f) {
    *scale = 0.0f;
    for (int i = 0; i < 16; ++i) vst1q_s8(codes + 16 * i, vdupq_n_s8(0));
    for (int i = 0; i < 16; ++i) sums[i] = 0;
    return true;
  }
  float max = 0.0f;  // the first value whose |x| is the largest, with its sign (signed_absmax)
  for (int j = 0; j < 256; ++j)
    if (std::fabs(x[j]) == largest) {
      max = x[j];
      break;
    }
  const float iscale = -127.0f / max;
  const float32x4_t is = vdupq_n_f32(iscale), magic = vdupq_n_f32(12582912.0f);
  for (int g = 0; g < 16; ++g) {
    int32x4_t q[4];
    for (int i = 0; i < 4; ++i) {
      // ggml's nearest_int: t + 1.5·2²³ holds t rounded (ties to even) in its low 22 bits.
      const int32x4_t bits = vreinterpretq_s32_f32(vaddq_f32(vmulq_f32(is, vld1q_f32(x + 16 * g + 4 * i)), magic));
      const int32x4_t r = vsubq_s32(vandq_s32(bits, vdupq_n_s32(0x007FFFFF)), vdupq_n_s32(0x00400000));
      q[i] = vminq_s32(r, vdupq_n_s32(127));
    }
    sums[g] = static_cast<int16_t>(store_codes(q, codes + 16 * g));
  }
  *scale = 1 / iscale;
  return true;
}

}  // namespace

const F32ToQ8Rows f32_to_q8_rows_neon = q8_rows_by_blocks<q8_0_block, q8_K_block>;

}  // namespace ffn::kernels
