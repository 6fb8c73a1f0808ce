// The roofs' loops in plain C++: compute, one lane, a separate multiply and add (baseline
// x86-64 has no FMA; contraction is off); memory, one stream of 64-bit integer sums, which
// the compiler vectorises with SSE2 (float sums it may not reorder, and 4 streams of them
// add far slower than memory reads).
#include <cstring>

#include "kernels/f32_fma_roof.hpp"
#include "kernels/scalar/scalar_kernels.hpp"

namespace ffn::kernels {
namespace {

struct Scalar {
  using Vec = float;
  static constexpr int64_t lanes = 1;
  static Vec broadcast(float v) { return v; }
  static Vec fmadd(Vec a, Vec b, Vec acc) { return a * b + acc; }
  static float reduce(Vec v) { return v; }
};

}  // namespace

float f32_fma_roof_scalar(int64_t iterations) { return f32_fma_roof<Scalar, 12>(iterations); }

float stream_read_scalar(const float* p, int64_t floats, int /*pattern*/) {
  uint64_t s[4] = {};
  int64_t i = 0;
  for (; i + 8 <= floats; i += 8)  // 4 independent chains of two floats' bits each
    for (int c = 0; c < 4; ++c) {
      uint64_t w;
      std::memcpy(&w, p + i + 2 * c, sizeof w);
      s[c] += w;
    }
  uint64_t sum = s[0] + s[1] + s[2] + s[3];
  for (; i < floats; ++i) {
    uint32_t w;
    std::memcpy(&w, p + i, sizeof w);
    sum += w;
  }
  // Modulo a prime below 2^24: exact as a float, and changed by any change of one float's
  // bits that is not a multiple of that prime.
  return float(sum % 16777213u);
}

}  // namespace ffn::kernels
