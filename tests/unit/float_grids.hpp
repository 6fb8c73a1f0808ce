// Input grids shared by the tests of element-wise functions (activations, erfc).
#pragma once

#include <cmath>
#include <vector>

namespace ffn::test {

// Appends 1001 magnitudes spaced evenly in log10 from 1e−45 (a subnormal, rounded to
// FLT_TRUE_MIN) to 1e5, each with both signs.
inline void append_signed_magnitudes(std::vector<float>& v) {
  for (int i = 0; i <= 1000; ++i) {
    const float m = static_cast<float>(std::pow(10.0, -45.0 + 50.0 * i / 1000.0));
    v.push_back(m);
    v.push_back(-m);
  }
}

}  // namespace ffn::test
