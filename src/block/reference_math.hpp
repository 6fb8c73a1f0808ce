// The double-precision arithmetic both oracles share (reference.cpp, reference_backward.cpp):
// the activations and their derivatives, and dot products with their Σ|terms|.
#pragma once

#include <cmath>
#include <cstdint>

#include "ffn/config.hpp"
#include "ffn/tensor.hpp"

namespace ffn::reference {

constexpr double kUnitRoundoff = 0x1p-24;  // u of f32
constexpr double kLipschitz = 1.13;        // ≥ max |act'| over every activation but relu2 (GELU's is
                                           // 1.129; quick_gelu's and clamped_swish's 1.0998, as
                                           // Swish's: min is 1-Lipschitz; relu6's 1)
// gpt-oss's clamped_swish (config.hpp): its limit and α (quick_gelu's α too); relu6's limit.
constexpr double kOaiLimit = 7.0, kOaiAlpha = 1.702, kRelu6Limit = 6.0;

// max |act'| over [g − e, g + e]: kLipschitz, but for relu2, whose slope 2·relu(z) grows
// without bound: 2·(|g| + e) there (≥ 2·relu(z) on the interval).
inline double lipschitz(Activation a, double g, double e) {
  return a == Activation::relu2 ? 2.0 * (std::fabs(g) + e) : kLipschitz;
}
// ≥ max |act''| where act' is differentiable: 1 (GELU and its tanh form 0.798, quick_gelu
// 1.702·0.5, Swish 0.5, σ 0.096, ReLU, relu6 and identity 0), relu2's 2.
inline double curvature(Activation a) { return a == Activation::relu2 ? 2.0 : 1.0; }
// A bound on |act(z)| for z near g, as the quantisation terms use it: max(|g|, 1) (every
// activation here is at most |z| in magnitude, or 1 for σ), g² for relu2.
inline double magnitude(Activation a, double g) {
  return a == Activation::relu2 ? g * g : std::fabs(g) > 1.0 ? std::fabs(g) : 1.0;
}

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
    case Activation::quick_gelu: return v / (1.0 + std::exp(-kOaiAlpha * v));
    case Activation::relu2: {
      const double r = v < 0.0 ? 0.0 : v;  // NaN and −0 kept, then squared
      return r * r;
    }
    case Activation::relu6: return v < 0.0 ? 0.0 : v > kRelu6Limit ? kRelu6Limit : v;  // NaN and −0 kept
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
    case Activation::quick_gelu: {
      const double z = kOaiAlpha * v, s = 1.0 / (1.0 + std::exp(-z));
      return s * (1.0 + z * (1.0 - s));
    }
    case Activation::relu2: return v > 0.0 ? 2.0 * v : 0.0;
    case Activation::relu6: return v > 0.0 && v < kRelu6Limit ? 1.0 : 0.0;  // 0 at both ends (hardtanh_backward)
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
// formula, the derivative's f32 value may jump. The largest jump of act' within e of g: 1
// at ReLU's 0 and relu6's 0 and 6, ≤ kLipschitz at clamped_swish's g = 7; else 0 (relu2's
// slope is continuous at 0).
inline double derivative_jump_near(Activation a, double g, double e) {
  switch (a) {
    case Activation::relu: return std::fabs(g) <= e ? 1.0 : 0.0;
    case Activation::relu6: return std::fabs(g) <= e || std::fabs(g - kRelu6Limit) <= e ? 1.0 : 0.0;
    case Activation::clamped_swish: return std::fabs(g - kOaiLimit) <= e ? kLipschitz : 0.0;
    default: return 0.0;
  }
}
// Whether the f32 up value within e of u may lie across clamped_swish's up limits ±7, where
// the up factor's derivative jumps from 1 to 0.
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
