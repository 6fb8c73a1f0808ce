// The compute-roof loop in plain C++: one lane, a separate multiply and add (baseline
// x86-64 has no FMA; contraction is off).
#include "kernels/f32_fma_roof.hpp"
#include "kernels/kernels.hpp"

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

}  // namespace ffn::kernels
