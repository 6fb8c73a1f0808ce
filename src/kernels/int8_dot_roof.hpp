// The integer compute roof's loop (kernels.hpp, int8_dot_roof): Chains independent chains,
// each an int32 vector to which one step adds the exact dot products of 4 bytes a lane —
// the integer panel kernels' arithmetic, unsigned weight codes times signed q8 activations —
// so a step is 4 multiply-adds (8 operations) a 32-bit lane. Every byte is 1, so a lane adds
// 4 a step: chain c starts at c and ends at c + 4·iterations, which the tests check.
//   IntDot: the level's step, `static void step(Vec& acc)`, written as inline assembly so
//   that no step can be hoisted or merged (AVX2's byte products do not depend on the chain,
//   and the compiler would compute them once); Vec an integer vector; from_int(i) i in every
//   lane; reduce(v) the sum of its lanes.
//   Returns the sum of every lane of every chain.
#pragma once

#include <cstdint>

namespace ffn::kernels {

template <class IntDot, int Chains>
float int8_dot_roof(int64_t iterations) {
  typename IntDot::Vec acc[Chains];
#pragma GCC unroll 32
  for (int i = 0; i < Chains; ++i) acc[i] = IntDot::from_int(i);
  for (int64_t it = 0; it < iterations; ++it) {
#pragma GCC unroll 32
    for (int i = 0; i < Chains; ++i) IntDot::step(acc[i]);
  }
  int64_t sum = 0;
  // Unrolled too: rolled, this loop kept the array in memory through the steps, and the
  // roof measured their stores (1.9× the FMA roof instead of 4× on AVX-512 VNNI).
#pragma GCC unroll 32
  for (int i = 0; i < Chains; ++i) sum += IntDot::reduce(acc[i]);
  return float(sum);
}

}  // namespace ffn::kernels
