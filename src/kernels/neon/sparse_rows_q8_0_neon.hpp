// The integer block dot of sparse_rows_q8_0.hpp on Advanced SIMD registers, for the neon and
// dotprod levels, which differ only in the step Dot::dot(acc, w, x): acc's 4 int32 lanes
// plus the exact products of 16 signed weight and activation bytes (each lane's share of
// them its own; any share gives the same block sum).
// Included only by files compiled for AArch64.
#pragma once

#include <arm_neon.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace ffn::kernels {

template <class Dot>
struct I8x16x2 {
  using Weights = int8x16x2_t;
  using Codes = int8x16x2_t;
  using Sums = int32x4_t;
  struct Acc {
    float32x4_t lo, hi;
  };
  static Weights weights(const int8_t* q) { return {vld1q_s8(q), vld1q_s8(q + 16)}; }
  static Codes codes(const int8_t* q) { return {vld1q_s8(q), vld1q_s8(q + 16)}; }
  static Sums zero() { return vdupq_n_s32(0); }
  static Sums dot(const Weights& w, const Codes& x) {
    return Dot::dot(Dot::dot(vdupq_n_s32(0), w.val[0], x.val[0]), w.val[1], x.val[1]);
  }
  static Acc acc_zero() { return {vdupq_n_f32(0.0f), vdupq_n_f32(0.0f)}; }
  // Lane l of the 8 vectors' sums by pairwise adds, sums 0–3 in one vector, 4–7 in the other.
  static void accumulate(const int32x4_t (&s)[8], const float* scale, Acc& acc) {
    const int32x4_t s0123 = vpaddq_s32(vpaddq_s32(s[0], s[1]), vpaddq_s32(s[2], s[3]));
    const int32x4_t s4567 = vpaddq_s32(vpaddq_s32(s[4], s[5]), vpaddq_s32(s[6], s[7]));
    acc.lo = vfmaq_f32(acc.lo, vcvtq_f32_s32(s0123), vld1q_f32(scale));
    acc.hi = vfmaq_f32(acc.hi, vcvtq_f32_s32(s4567), vld1q_f32(scale + 4));
  }
  static void store(const Acc& acc, float* out) {
    vst1q_f32(out, acc.lo);
    vst1q_f32(out + 4, acc.hi);
  }
  static float half(const std::byte* p) {
    uint16_t d;
    std::memcpy(&d, p, sizeof d);
    return vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(d))), 0);
  }
};

}  // namespace ffn::kernels
