// Adding a bias to every row of a tile, as the forwards and the backward do after a
// product (internal).
#pragma once

#include <cstdint>

namespace ffn {

// c[t][i] += bias[i] for t < T, i < n; c's rows are ldc floats apart.
inline void add_bias_rows(float* c, int64_t ldc, int64_t T, const float* bias, int64_t n) {
  for (int64_t t = 0; t < T; ++t)
    for (int64_t i = 0; i < n; ++i) c[t * ldc + i] += bias[i];
}

}  // namespace ffn
