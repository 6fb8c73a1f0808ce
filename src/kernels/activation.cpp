// Activations in f32, scalar, through the C library's erfcf / tanhf / expf. Their cost is
// O(H) per token against O(D·H) for the products, so they are not vectorised yet.
#include <cmath>

#include "kernels/kernels.hpp"

namespace ffn::kernels {
namespace {

constexpr float kSqrtHalf = 0.70710678118654752f;     // 1/√2
constexpr float kSqrt2OverPi = 0.79788456080286536f;  // √(2/π)

// relu keeps NaN (a comparison with NaN is false, so v is returned).
inline float relu(float v) { return v < 0.0f ? 0.0f : v; }
// x·Φ(x) = 0.5·x·erfc(−x/√2): erfc keeps full relative accuracy for negative x, where
// 1 + erf(x/√2) would cancel.
inline float gelu(float v) { return 0.5f * v * std::erfc(-v * kSqrtHalf); }
inline float gelu_tanh(float v) {
  return 0.5f * v * (1.0f + std::tanh(kSqrt2OverPi * (v + 0.044715f * v * v * v)));
}
inline float sigmoid(float v) { return 1.0f / (1.0f + std::exp(-v)); }
inline float swish(float v) { return v * sigmoid(v); }

template <class F>
void map_inplace(float* v, int64_t n, F f) {
  for (int64_t i = 0; i < n; ++i) v[i] = f(v[i]);
}
template <class F>
void gated(const float* g, float* u, int64_t n, F f) {
  for (int64_t i = 0; i < n; ++i) u[i] = f(g[i]) * u[i];
}

}  // namespace

void f32_activation(Activation a, float* v, int64_t n) {
  switch (a) {
    case Activation::relu: return map_inplace(v, n, relu);
    case Activation::gelu: return map_inplace(v, n, gelu);
    case Activation::gelu_tanh: return map_inplace(v, n, gelu_tanh);
    case Activation::swish: return map_inplace(v, n, swish);
    case Activation::sigmoid: return map_inplace(v, n, sigmoid);
    case Activation::identity: return;
  }
}

void f32_gated_activation(Activation a, const float* g, float* u, int64_t n) {
  switch (a) {
    case Activation::relu: return gated(g, u, n, relu);
    case Activation::gelu: return gated(g, u, n, gelu);
    case Activation::gelu_tanh: return gated(g, u, n, gelu_tanh);
    case Activation::swish: return gated(g, u, n, swish);
    case Activation::sigmoid: return gated(g, u, n, sigmoid);
    case Activation::identity: return gated(g, u, n, [](float v) { return v; });
  }
}

}  // namespace ffn::kernels
