// Counter-based random numbers for deterministic initialisation and sampling: hashing
// (key + index) with splitmix64 gives every element its own draw, so any range of a tensor
// can be filled by any thread, in any order, with the same values.
#pragma once

#include <cstdint>

#include "ffn/tensor.hpp"
#include "ffn/thread_pool.hpp"

namespace ffn {

// splitmix64 (Steele, Lea and Flood's finaliser): a fast, well-mixed 64-bit hash.
inline uint64_t splitmix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Fills m with uniform values in [−bound, bound), 24 random bits per value, keyed by
// (seed, tensor_id, index): the same values with or without a pool, for any thread count.
inline void fill_uniform(Matrix& m, uint64_t seed, uint64_t tensor_id, double bound, ThreadPool* pool = nullptr) {
  if (m.empty()) return;
  const uint64_t key = splitmix64(seed ^ splitmix64(tensor_id));
  float* data = m.data();
  auto fill = [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const double u01 = static_cast<double>(splitmix64(key + static_cast<uint64_t>(i)) >> 40) * 0x1p-24;
      data[i] = static_cast<float>(bound * (2.0 * u01 - 1.0));
    }
  };
  if (!pool) return fill(0, m.size());
  pool->run([&](int ith, int nth) {
    auto [i0, i1] = split_range(m.size(), ith, nth, 4096);
    fill(i0, i1);
  });
}

}  // namespace ffn
