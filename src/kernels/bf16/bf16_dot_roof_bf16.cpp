// The bf16 compute roof's loop (kernels.hpp, bf16_dot_roof): f32_fma_roof.hpp's 24 chains of
// 4 lanes (the neon level's f32_roof_chains, which this table inherits) with each step one
// BFDOT — two bf16 products per lane added to the chain, 4 FLOPs a lane.
// Compiled with the bf16 level's flags (ffn/isa_list.hpp); called only when the CPU has the level.
#include <arm_neon.h>

#include "kernels/bf16/bf16_kernels.hpp"
#include "kernels/f32_fma_roof.hpp"
#include "kernels/neon/vec_neon.hpp"

namespace ffn::kernels {
namespace {

// acc ← acc + a·b over one pair per lane; the tiny operands (the bf16 pair ≈ (1e-3, 1e-3),
// as the avx512_bf16 roof's) keep every chain finite, and their products normal (BFDOT
// flushes denormals), for any number of iterations the bench runs.
struct Bf16DotChains {
  using Vec = float32x4_t;
  static Vec broadcast(float v) { return vdupq_n_f32(v); }
  static Vec fmadd(Vec acc, Vec, Vec) {
    const bfloat16x8_t pair = vreinterpretq_bf16_u32(vdupq_n_u32(0x3A833A83u));
    return vbfdotq_f32(acc, pair, pair);
  }
  static float reduce(Vec v) { return Neon::reduce(v); }
};

}  // namespace

float bf16_dot_roof_bf16(int64_t iterations) { return f32_fma_roof<Bf16DotChains, 24>(iterations); }

}  // namespace ffn::kernels
