// Advanced SIMD element-wise operations for the activation loops (activation_tiles.hpp): the
// arithmetic, tails through a zeroed copy, SLEEF's advsimd exp and tanh (1.0 ulp) and
// erfc_f32 (≤ 6 ulp). Each select keeps NaN and −0 as AVX's blends and the scalar reference do.
#pragma once

#include <arm_neon.h>
#include <sleef.h>

#include <cstdint>

#include "kernels/erfc_f32.hpp"
#include "kernels/neon/vec_neon.hpp"

namespace ffn::kernels {

struct NeonMath {
  using Vec = float32x4_t;
  static constexpr int64_t lanes = 4;
  static Vec set1(float v) { return vdupq_n_f32(v); }
  static Vec load(const float* p) { return vld1q_f32(p); }
  static Vec load_tail(const float* p, int64_t count) { return Neon::load_tail(p, count); }
  static void store(float* p, Vec v) { vst1q_f32(p, v); }
  static void store_tail(float* p, Vec v, int64_t count) { NeonStore::store_tail(p, v, count); }
  static Vec add(Vec a, Vec b) { return vaddq_f32(a, b); }
  static Vec sub(Vec a, Vec b) { return vsubq_f32(a, b); }
  static Vec mul(Vec a, Vec b) { return vmulq_f32(a, b); }
  static Vec div(Vec a, Vec b) { return vdivq_f32(a, b); }
  static Vec fma(Vec a, Vec b, Vec c) { return vfmaq_f32(c, a, b); }  // a·b + c, rounded once
  static Vec abs(Vec v) { return vabsq_f32(v); }
  // min(v, hi) with NaN kept: FMIN returns NaN when either operand is.
  static Vec min_keep_nan(Vec v, float hi) { return vminq_f32(v, set1(hi)); }
  // z < 0 ? if_negative : otherwise, lane by lane (NaN and −0 take otherwise).
  static Vec negative_select(Vec z, Vec if_negative, Vec otherwise) {
    return vbslq_f32(vcltq_f32(z, vdupq_n_f32(0.0f)), if_negative, otherwise);
  }
  // clamp(v, lo, hi); a NaN v gives lo, as the scalar reference (FMAXNM returns the number).
  static Vec clamp(Vec v, float lo, float hi) { return vminnmq_f32(vmaxnmq_f32(v, set1(lo)), set1(hi)); }
  // NaN kept (FMAX and FMIN propagate it).
  static Vec clamp_keep_nan(Vec v, float lo, float hi) { return vminq_f32(vmaxq_f32(v, set1(lo)), set1(hi)); }
  // v < 0 ? 0 : v, lane by lane: NaN and −0 are kept (the comparison is false for them).
  static Vec relu(Vec v) { return vbslq_f32(vcltq_f32(v, vdupq_n_f32(0.0f)), vdupq_n_f32(0.0f), v); }
  // z > 0 ? 1 : 0 (NaN gives 0).
  static Vec step(Vec z) {
    return vreinterpretq_f32_u32(vandq_u32(vcgtq_f32(z, vdupq_n_f32(0.0f)), vreinterpretq_u32_f32(set1(1.0f))));
  }
  static Vec exp(Vec v) { return Sleef_expf4_u10advsimd(v); }
  static Vec erfc(Vec v) { return erfc_f32<NeonMath>(v); }
  static Vec tanh(Vec v) { return Sleef_tanhf4_u10advsimd(v); }
};

}  // namespace ffn::kernels
