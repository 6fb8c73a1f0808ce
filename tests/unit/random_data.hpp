// Reproducible random test data.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "ffn/tensor.hpp"

namespace ffn::test {

// n floats uniform in [-1, 1), the same for the same seed.
inline std::vector<float> random_vector(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// rows × cols floats uniform in [-scale, scale), the same for the same seed.
inline Matrix random_matrix(int64_t rows, int64_t cols, uint32_t seed, float scale = 1.0f) {
  Matrix m(rows, cols);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  for (int64_t i = 0; i < m.size(); ++i) m.data()[i] = dist(rng);
  return m;
}

}  // namespace ffn::test
