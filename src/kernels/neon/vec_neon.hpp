// Advanced SIMD vector traits for the portable kernel loops (f32_gemm_nt_tiles.hpp,
// f32_panel_tiles.hpp, f32_gemm_nn_tn_tiles.hpp, the roofs): the only place the NEON
// intrinsics of the f32 kernels live. 4 lanes a q register, 32 registers. NEON has no masked
// loads or stores: the K tails go through a zeroed copy on the stack, which reads and writes
// exactly the lanes asked for.
#pragma once

#include <arm_neon.h>

#include <cstdint>
#include <cstring>

namespace ffn::kernels {

struct Neon {
  using Vec = float32x4_t;
  static constexpr int64_t lanes = 4;
  static Vec broadcast(float v) { return vdupq_n_f32(v); }
  static Vec zero() { return vdupq_n_f32(0.0f); }
  static Vec load(const float* p) { return vld1q_f32(p); }
  static Vec load_tail(const float* p, int64_t count) {
    float tmp[4] = {};
    std::memcpy(tmp, p, static_cast<size_t>(count) * sizeof(float));
    return vld1q_f32(tmp);
  }
  static Vec fmadd(Vec a, Vec b, Vec acc) { return vfmaq_f32(acc, a, b); }  // acc + a·b, rounded once
  // Fixed order: lanes (0 + 2) and (1 + 3), then those two.
  static float reduce(Vec v) {
    const float32x2_t half = vadd_f32(vget_low_f32(v), vget_high_f32(v));
    return vget_lane_f32(half, 0) + vget_lane_f32(half, 1);
  }
};

// The stores and the add of the outer-product kernels, which write C a vector at a time.
struct NeonStore : Neon {
  static Vec add(Vec a, Vec b) { return vaddq_f32(a, b); }
  static void store(float* p, Vec v) { vst1q_f32(p, v); }
  static void store_tail(float* p, Vec v, int64_t count) {
    float tmp[4];
    vst1q_f32(tmp, v);
    std::memcpy(p, tmp, static_cast<size_t>(count) * sizeof(float));
  }
};

}  // namespace ffn::kernels
