// Backward of the activations in f32, scalar, through the C library's erfcf / expf / tanhf.
// The derivatives follow PyTorch's autograd formulas (aten's GeluBackward, silu_backward,
// sigmoid_backward, threshold_backward); the activation values themselves come from
// f32_activation, so the h of backward is bit for bit the h of forward. O(H) per token
// against O(D·H) for the products, so not vectorised yet.
#include <algorithm>
#include <cmath>

#include "kernels/kernels.hpp"

namespace ffn::kernels {
namespace {

constexpr float kSqrtHalf = 0.70710678118654752f;     // 1/√2
constexpr float kInvSqrt2Pi = 0.39894228040143268f;   // 1/√(2π)
constexpr float kSqrt2OverPi = 0.79788456080286536f;  // √(2/π)
constexpr float kCubic = 0.044715f;

// 0 at z = 0, as PyTorch's (relu(z) > 0 decides); NaN gives 0.
inline float relu_grad(float z) { return z > 0.0f ? 1.0f : 0.0f; }
// d/dz z·Φ(z) = Φ(z) + z·φ(z); Φ through erfc, as in the forward, keeps full relative
// accuracy for z < 0.
inline float gelu_grad(float z) {
  return 0.5f * std::erfc(-z * kSqrtHalf) + z * kInvSqrt2Pi * std::exp(-0.5f * z * z);
}
// With t = tanh(c·(z + k·z³)):  0.5·(1 + t) + 0.5·z·(1 − t²)·c·(1 + 3k·z²), PyTorch's
// arrangement of d/dz 0.5·z·(1 + t).
inline float gelu_tanh_grad(float z) {
  const float t = std::tanh(kSqrt2OverPi * (z + kCubic * z * z * z));
  return 0.5f * (1.0f + t) + 0.5f * z * (1.0f - t * t) * kSqrt2OverPi * (1.0f + 3.0f * kCubic * z * z);
}
inline float sigmoid(float z) { return 1.0f / (1.0f + std::exp(-z)); }
inline float sigmoid_grad(float z) {
  const float s = sigmoid(z);
  return (1.0f - s) * s;
}
// d/dz z·σ(z) = σ(z)·(1 + z·(1 − σ(z))).
inline float swish_grad(float z) {
  const float s = sigmoid(z);
  return s * (1.0f + z * (1.0f - s));
}

template <class F>
void scale_by_derivative(const float* z, const float* scale, float* out, int64_t n, F grad) {
  for (int64_t i = 0; i < n; ++i) out[i] = scale[i] * grad(z[i]);
}

// out[i] = scale[i] · act'(z[i]).
void times_derivative(Activation a, const float* z, const float* scale, float* out, int64_t n) {
  switch (a) {
    case Activation::relu: return scale_by_derivative(z, scale, out, n, relu_grad);
    case Activation::gelu: return scale_by_derivative(z, scale, out, n, gelu_grad);
    case Activation::gelu_tanh: return scale_by_derivative(z, scale, out, n, gelu_tanh_grad);
    case Activation::swish: return scale_by_derivative(z, scale, out, n, swish_grad);
    case Activation::sigmoid: return scale_by_derivative(z, scale, out, n, sigmoid_grad);
    case Activation::identity: std::copy(scale, scale + n, out); return;
  }
}

}  // namespace

void f32_activation_backward(Activation a, const float* z, const float* dh, float* h, float* dz, int64_t n) {
  std::copy(z, z + n, h);
  f32_activation(a, h, n);
  times_derivative(a, z, dh, dz, n);
}

void f32_gated_activation_backward(Activation a, const float* g, const float* u, const float* dh, float* h,
                                   float* du, float* dg, int64_t n) {
  // du holds act(g) first: h = act(g)·u is then the forward's product of the same floats.
  std::copy(g, g + n, du);
  f32_activation(a, du, n);
  for (int64_t i = 0; i < n; ++i) {
    h[i] = du[i] * u[i];
    dg[i] = dh[i] * u[i];  // scaled by act'(g) below, in the order autograd multiplies
    du[i] = dh[i] * du[i];
  }
  times_derivative(a, g, dg, dg, n);
}

}  // namespace ffn::kernels
