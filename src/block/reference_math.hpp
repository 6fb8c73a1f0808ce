// The double-precision arithmetic both oracles share (reference.cpp, reference_backward.cpp):
// the activations and their derivatives, and dot products with their Σ|terms|.
#pragma once

#include <cmath>
#include <cstdint>

#include "ffn/config.hpp"
#include "ffn/tensor.hpp"

namespace ffn::reference {

constexpr double kUnitRoundoff = 0x1p-24;  // u of f32
constexpr double kLipschitz = 1.13;        // ≥ max |act'| over every activation (GELU's is 1.129;
                                           // clamped_swish's 1.0998, as Swish's: min is 1-Lipschitz)
// gpt-oss's clamped_swish (config.hpp): its limit and α.
constexpr double kOaiLimit = 7.0, kOaiAlpha = 1.702;

inline double activation(Activation a, double v) {
  switch (a) {
    case Activation::relu: return v < 0.0 ? 0.0 : v;
    case Activation::gelu: return 0.5 * v * std::erfc(-v / std::sqrt(2.0));
    case Activation::gelu_tanh:
      return 0.5 * v * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v)));
    case Activation::swish: return v / (1.0 + std::exp(-v));
    case Activation::sigmoid: return 1.0 / (1.0 + std::exp(-v));
    case Activation::identity: return v;
    case Activation::clamped_swish: {
      const double m = v > kOaiLimit ? kOaiLimit : v;  // min keeping NaN, as torch's clamp
      return m / (1.0 + std::exp(-kOaiAlpha * m));
    }
  }
  return v;
}

inline double derivative(Activation a, double v) {
  switch (a) {
    case Activation::relu: return v > 0.0 ? 1.0 : 0.0;
    case Activation::gelu:
      return 0.5 * std::erfc(-v / std::sqrt(2.0)) + v * std::exp(-0.5 * v * v) / std::sqrt(2.0 * M_PI);
    case Activation::gelu_tanh: {
      const double c = std::sqrt(2.0 / M_PI), k = 0.044715;
      const double t = std::tanh(c * (v + k * v * v * v));
      return 0.5 * (1.0 + t) + 0.5 * v * (1.0 - t * t) * c * (1.0 + 3.0 * k * v * v);
    }
    case Activation::swish: {
      const double s = 1.0 / (1.0 + std::exp(-v));
      return s * (1.0 + v * (1.0 - s));
    }
    case Activation::sigmoid: {
      const double s = 1.0 / (1.0 + std::exp(-v));
      return s * (1.0 - s);
    }
    case Activation::identity: return 1.0;
    case Activation::clamped_swish: {  // 0 above the limit; the limit itself passes (autograd's clamp)
      if (!(v <= kOaiLimit)) return 0.0;
      const double z = kOaiAlpha * v, s = 1.0 / (1.0 + std::exp(-z));
      return s * (1.0 + z * (1.0 - s));
    }
  }
  return 1.0;
}

// The factor a gated block multiplies act(g) by, from the up pre-activation u: u itself,
// or clamped_swish's clamp(u, −7, 7) + 1; and its derivative (1, or [−7 ≤ u ≤ 7]).
inline double up_factor(Activation a, double u) {
  if (a != Activation::clamped_swish) return u;
  return (u > kOaiLimit ? kOaiLimit : u < -kOaiLimit ? -kOaiLimit : u) + 1.0;  // NaN kept
}
inline double up_factor_derivative(Activation a, double u) {
  return a != Activation::clamped_swish || std::fabs(u) <= kOaiLimit ? 1.0 : 0.0;
}
// Where the f32 value of a pre-activation within e of v may lie across a kink of the block's
// formula (clamped_swish's g = 7, u = ±7), the derivative's f32 value may jump.
inline bool near_gate_limit(Activation a, double g, double e) {
  return a == Activation::clamped_swish && std::fabs(g - kOaiLimit) <= e;
}
inline bool near_up_limit(Activation a, double u, double e) {
  return a == Activation::clamped_swish && std::fabs(std::fabs(u) - kOaiLimit) <= e;
}

// Σ_k W[k]·x[k] + bias, and the same with absolute values.
struct Dot {
  double value;
  double abs_sum;
};
inline Dot dot(const float* w, const float* x, int64_t n, const float* bias) {
  Dot d{0.0, 0.0};
  for (int64_t k = 0; k < n; ++k) {
    const double p = static_cast<double>(w[k]) * static_cast<double>(x[k]);
    d.value += p;
    d.abs_sum += std::fabs(p);
  }
  if (bias) {
    d.value += *bias;
    d.abs_sum += std::fabs(*bias);
  }
  return d;
}

inline const float* bias_at(const Matrix& b, int64_t i) { return b.empty() ? nullptr : b.data() + i; }

}  // namespace ffn::reference
