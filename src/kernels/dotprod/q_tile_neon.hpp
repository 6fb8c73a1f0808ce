// What the Arm integer panel kernels share (dotprod/qblock_tile_neon.hpp, qsub_tile_neon.hpp;
// the dotprod and i8mm levels' kernel files): the dot instruction as a policy, an unrolled
// loop over compile-time group indices (the lane of a by-lane dot product is an immediate),
// and the widening of a panel's per-row scales to f32 or int32 lanes.
//
// The panels (qblock_panels.hpp, qsub_panels.hpp) hold groups of 4 consecutive values of 64
// rows, byte 4r + l, so one q register of a group is 4 rows × 4 values: the operand of one
// SDOT (or USDOT) against 4 activation bytes taken by lane from a q register holding 16
// consecutive activations — vdotq_laneq_s32(s, w, x, lane) adds to lane i of s (row 4v + i)
// Σ_l w[4i + l]·x[4·lane + l], exactly. A row vector v (rows 4v … 4v + 3) of group g is the
// 16 bytes at 256g + 16v of the group's section.
// Included by the dotprod and i8mm levels' files, and by the neon level's with WideningDot
// (the instructions of a policy are instantiated only where a file uses it).
#pragma once

#include <arm_neon.h>

#include <cstdint>
#include <type_traits>
#include <utility>

#include "kernels/kernels.hpp"

// Forces a lambda of the unrolled loops inline, so that the arrays of vectors it indexes by
// constants stay in registers.
#define FFN_INLINE __attribute__((always_inline))

namespace ffn::kernels::neon_q {

inline constexpr int kRowVectors = 16;  // q registers of 4 rows in a panel's 64 rows

// f(std::integral_constant<int, i>{}) for i = 0 … N − 1, unrolled: the group index reaches
// the instructions' lane immediates as a constant.
template <int N, class F>
inline FFN_INLINE void static_for(F&& f) {
  [&]<int... I>(std::integer_sequence<int, I...>) { (f(std::integral_constant<int, I>{}), ...); }
  (std::make_integer_sequence<int, N>{});
}

// SDOT (Armv8.2 dotprod): signed weights × signed activations. Every nibble code (≤ 63) and
// codebook value (int8) is a signed byte as it is; q8_0's unsigned codes are not, so
// kUnsignedBytes false asks the caller to flip them back to the signed weight (EOR 0x80) and
// drop the −offset·Σx term, which leaves the same exact integer.
struct Sdot {
  static constexpr bool kUnsignedBytes = false;
  template <int lane>
  static inline FFN_INLINE int32x4_t dot(int32x4_t s, uint8x16_t w, int8x16_t x) {
    return vdotq_laneq_s32(s, vreinterpretq_s8_u8(w), x, lane);
  }
};

// SDOT's arithmetic in Armv8.0 Advanced SIMD, for the neon level (CPUs without dotprod:
// Cortex-A72, A53): the 4 activation bytes of `lane` broadcast, 16 byte products widened to
// int16 by SMULL/SMULL2, adjacent pairs added by ADDP and added pairwise into the int32 lanes
// by SADALP — the same exact sums (|w| ≤ 128, |x| ≤ 127: a pair of products stays within int16),
// 5 instructions for SDOT's one. The weights are signed bytes, as for SDOT.
struct WideningDot {
  static constexpr bool kUnsignedBytes = false;
  template <int lane>
  static inline FFN_INLINE int32x4_t dot(int32x4_t s, uint8x16_t w, int8x16_t x) {
    const int8x16_t xs = vreinterpretq_s8_s32(vdupq_laneq_s32(vreinterpretq_s32_s8(x), lane));
    const int8x16_t ws = vreinterpretq_s8_u8(w);
    const int16x8_t rows01 = vmull_s8(vget_low_s8(ws), vget_low_s8(xs));  // rows 0, 1: 4 products each
    const int16x8_t rows23 = vmull_high_s8(ws, xs);                        // rows 2, 3
    return vpadalq_s16(s, vpaddq_s16(rows01, rows23));
  }
};

// 4 binary16 values at p (the d or dmin of 4 rows) widened exactly to f32.
inline float32x4_t f16x4(const uint8_t* p) {
  return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(reinterpret_cast<const uint16_t*>(p))));
}

// MXFP4's e8m0 bytes e of 4 rows at p as 2^(e − 128) (codebooks.hpp, e8m0_half_to_f32): the
// bits (e − 1) << 23 for e ≥ 2, the subnormals 0x00200000 << e below.
inline float32x4_t e8m0x4(const uint8_t* p) {
  uint32_t bytes;
  __builtin_memcpy(&bytes, p, 4);
  const uint32x4_t e = vmovl_u16(vget_low_u16(vmovl_u8(vreinterpret_u8_u32(vdup_n_u32(bytes)))));
  const uint32x4_t normal = vshlq_n_u32(vsubq_u32(e, vdupq_n_u32(1)), 23);
  const uint32x4_t tiny = vshlq_u32(vdupq_n_u32(0x00200000u), vreinterpretq_s32_u32(e));
  return vreinterpretq_f32_u32(vbslq_u32(vcgtq_u32(e, vdupq_n_u32(1)), normal, tiny));
}

// 8 int8 (signed) or uint8 (unsigned) values of rows 4v … 4v + 7 at p as two int32x4.
inline void i8x8_to_i32(const uint8_t* p, int32x4_t out[2]) {
  const int16x8_t w = vmovl_s8(vld1_s8(reinterpret_cast<const int8_t*>(p)));
  out[0] = vmovl_s16(vget_low_s16(w));
  out[1] = vmovl_high_s16(w);
}
inline void u8x8_to_i32(const uint8_t* p, int32x4_t out[2]) {
  const uint16x8_t w = vmovl_u8(vld1_u8(p));
  out[0] = vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(w)));
  out[1] = vreinterpretq_s32_u32(vmovl_high_u16(w));
}
// 4 values of rows 4v … 4v + 3 at p as one int32x4.
inline int32x4_t i8x4_to_i32(const uint8_t* p) {
  uint32_t bytes;
  __builtin_memcpy(&bytes, p, 4);
  return vmovl_s16(vget_low_s16(vmovl_s8(vreinterpret_s8_u32(vdup_n_u32(bytes)))));
}
inline int32x4_t u8x4_to_i32(const uint8_t* p) {
  uint32_t bytes;
  __builtin_memcpy(&bytes, p, 4);
  return vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(vmovl_u8(vreinterpret_u8_u32(vdup_n_u32(bytes))))));
}
// CV row vectors' int8 (or uint8) values at p (4 a vector) as int32x4: 8 bytes a load.
template <int CV, bool is_signed>
inline FFN_INLINE void widen(const uint8_t* p, int32x4_t out[CV]) {
  if constexpr (CV % 2 == 0) {
    for (int k = 0; k < CV / 2; ++k) is_signed ? i8x8_to_i32(p + 8 * k, out + 2 * k) : u8x8_to_i32(p + 8 * k, out + 2 * k);
  } else {
    for (int v = 0; v < CV; ++v) out[v] = is_signed ? i8x4_to_i32(p + 4 * v) : u8x4_to_i32(p + 4 * v);
  }
}

// Lane t of v in every lane, and d times lane t of dx (FMUL by element: d·dx[t], the one
// rounding of the scalar product); t a constant once the token loops are unrolled.
inline FFN_INLINE int32x4_t lane_s32(int32x4_t v, int t) {
  switch (t) {
    case 0: return vdupq_laneq_s32(v, 0);
    case 1: return vdupq_laneq_s32(v, 1);
    case 2: return vdupq_laneq_s32(v, 2);
    default: return vdupq_laneq_s32(v, 3);
  }
}
inline FFN_INLINE float32x4_t mul_lane(float32x4_t d, float32x4_t dx, int t) {
  switch (t) {
    case 0: return vmulq_laneq_f32(d, dx, 0);
    case 1: return vmulq_laneq_f32(d, dx, 1);
    case 2: return vmulq_laneq_f32(d, dx, 2);
    default: return vmulq_laneq_f32(d, dx, 3);
  }
}

// Of tokens 0 … MT − 1 (MT ≤ 4) of A, block b of 32 values: the activations' Σx (the block's
// two sums of 16, added by one pairwise ADDL) and the block scales d_x, a lane a token.
template <int MT>
inline int32x4_t q8_block_sums(const ActivationRows& A, int64_t b) {
  static_assert(MT <= 4);
  int32x4_t pairs = vdupq_n_s32(0);
  for (int t = 0; t < MT; ++t) {
    int32_t two;
    __builtin_memcpy(&two, A.sums + t * A.sum_stride + 2 * b, 4);
    pairs = vsetq_lane_s32(two, pairs, t);
  }
  return vpaddlq_s16(vreinterpretq_s16_s32(pairs));
}
template <int MT>
inline float32x4_t q8_block_scales(const ActivationRows& A, int64_t b) {
  static_assert(MT <= 4);
  float32x4_t dx = vdupq_n_f32(0.0f);
  for (int t = 0; t < MT; ++t) dx = vsetq_lane_f32(A.scales[t * A.scale_stride + b], dx, t);
  return dx;
}

}  // namespace ffn::kernels::neon_q
