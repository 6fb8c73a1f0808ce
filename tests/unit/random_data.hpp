// Reproducible random test data.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace ffn::test {

// n floats uniform in [-1, 1), the same for the same seed.
inline std::vector<float> random_vector(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

}  // namespace ffn::test
