// The compute roof's inner loop: Chains independent multiply-add chains on full vectors,
// enough to keep every FMA unit busy (an FMA has a latency of about 4 cycles and a core
// issues up to 2 per cycle, so at least 8 chains are needed; fewer read low), and few
// enough to stay in registers (24 of AVX-512's 32; 12 of AVX2's 16 — more would spill).
//   Returns a value depending on every chain, so the loop cannot be optimised away.
//   FLOPs executed: iterations · Chains · lanes · 2.
#pragma once

#include <cstdint>

namespace ffn::kernels {

template <class V, int Chains>
float f32_fma_roof(int64_t iterations) {
  typename V::Vec acc[Chains];
  // Every loop over the chains is unrolled so that the accumulators live in registers (a
  // rolled loop keeps them in memory and measures store-to-load latency instead).
#pragma GCC unroll 32
  for (int i = 0; i < Chains; ++i) acc[i] = V::broadcast(1e-3f * float(i));
  // x ← x·m + a stays finite and normal for any number of iterations (fixed point a/(1−m)).
  const auto m = V::broadcast(0.999f), a = V::broadcast(1e-3f);
  for (int64_t it = 0; it < iterations; ++it) {
#pragma GCC unroll 32
    for (int i = 0; i < Chains; ++i) acc[i] = V::fmadd(acc[i], m, a);
  }
  float sum = 0.0f;
  for (int i = 0; i < Chains; ++i) sum += V::reduce(acc[i]);
  return sum;
}

}  // namespace ffn::kernels
