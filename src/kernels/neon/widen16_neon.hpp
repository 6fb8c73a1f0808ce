// Advanced SIMD loads of 4 16-bit weights widened exactly to one q register (an f16 by FCVTL;
// a bf16 is an f32's upper half, so shifted left 16 by USHLL), for the kernels that read f16
// or bf16 rows (panel_gemm_neon.cpp, sparse_rows_neon.cpp). Tails go through a zeroed copy:
// NEON has no masked loads, and the zero weights past a tail add exact zeros.
#pragma once

#include <arm_neon.h>

#include <cstdint>
#include <cstring>

namespace ffn::kernels {

inline uint16x4_t load4_tail(const uint16_t* p, int64_t count) {
  uint16_t tmp[4] = {};
  std::memcpy(tmp, p, static_cast<size_t>(count) * sizeof(uint16_t));
  return vld1_u16(tmp);
}

struct F16x4 {
  using Elem = uint16_t;
  static float32x4_t widen(uint16x4_t v) { return vcvt_f32_f16(vreinterpret_f16_u16(v)); }
  static float32x4_t load(const uint16_t* p) { return widen(vld1_u16(p)); }
  static float32x4_t load_tail(const uint16_t* p, int64_t count) { return widen(load4_tail(p, count)); }
};

struct Bf16x4 {
  using Elem = uint16_t;
  static float32x4_t widen(uint16x4_t v) { return vreinterpretq_f32_u32(vshll_n_u16(v, 16)); }
  static float32x4_t load(const uint16_t* p) { return widen(vld1_u16(p)); }
  static float32x4_t load_tail(const uint16_t* p, int64_t count) { return widen(load4_tail(p, count)); }
};

}  // namespace ffn::kernels
