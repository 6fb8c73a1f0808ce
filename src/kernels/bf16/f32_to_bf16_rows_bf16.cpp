// The rounding of f32 activations to bf16 by BFCVTN (FEAT_BF16; contract in kernels.hpp,
// f32_to_bf16_rows): 8 values a step, vcvtq_low_bf16_f32 / vcvtq_high_bf16_f32 filling the
// two halves of one q register; a row's last 1 … 7 values through a zeroed copy on the stack.
// BFCVT rounds as FPCR says — the round-to-nearest-even and no flush (FPCR.FZ = 0) that
// Linux starts every process with, so denormals round like any other value (unlike
// vcvtneps2bf16, which flushes them); kernels.hpp states both.
// Compiled with the bf16 level's flags (ffn/isa_list.hpp); called only when the CPU has the level.
#include <arm_neon.h>

#include <cstring>

#include "kernels/bf16/bf16_kernels.hpp"

namespace ffn::kernels {
namespace {

// Values s[0 … 7] rounded to bf16.
uint16x8_t round8(const float* s) {
  const bfloat16x8_t low = vcvtq_low_bf16_f32(vld1q_f32(s));
  return vreinterpretq_u16_bf16(vcvtq_high_bf16_f32(low, vld1q_f32(s + 4)));
}

}  // namespace

void f32_to_bf16_rows_bf16(int64_t T, int64_t K, const float* x, int64_t ldx, uint16_t* out, int64_t ldo) {
  for (int64_t t = 0; t < T; ++t) {
    const float* s = x + t * ldx;
    uint16_t* d = out + t * ldo;
    int64_t k = 0;
    for (; k + 8 <= K; k += 8) vst1q_u16(d + k, round8(s + k));
    if (k < K) {
      const auto rest = static_cast<size_t>(K - k);
      float in[8] = {};
      uint16_t h[8];
      std::memcpy(in, s + k, rest * sizeof(float));
      vst1q_u16(h, round8(in));
      std::memcpy(d + k, h, rest * sizeof(uint16_t));
    }
    if (K % 2) d[K] = 0;
  }
}

}  // namespace ffn::kernels
