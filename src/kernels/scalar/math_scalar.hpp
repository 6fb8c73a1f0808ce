// Scalar element-wise operations for the activation loops (activation_tiles.hpp): one lane,
// the C library's expf / erfcf / tanhf. The plain-C++ reference for the vector versions.
#pragma once

#include <cmath>
#include <cstdint>

namespace ffn::kernels {

struct ScalarMath {
  using Vec = float;
  static constexpr int64_t lanes = 1;
  static Vec set1(float v) { return v; }
  static Vec load(const float* p) { return *p; }
  static Vec load_tail(const float* p, int64_t) { return *p; }  // never called: lanes = 1
  static void store(float* p, Vec v) { *p = v; }
  static void store_tail(float* p, Vec v, int64_t) { *p = v; }
  static Vec add(Vec a, Vec b) { return a + b; }
  static Vec sub(Vec a, Vec b) { return a - b; }
  static Vec mul(Vec a, Vec b) { return a * b; }
  static Vec div(Vec a, Vec b) { return a / b; }
  // clamp(v, lo, hi); a NaN v gives lo or hi (callers keep NaN through another term).
  static Vec clamp(Vec v, float lo, float hi) { return v < lo ? lo : (v > hi ? hi : (v == v ? v : lo)); }
  // min(v, hi) and clamp(v, lo, hi) with NaN kept, as AVX's vminps/vmaxps with v second.
  static Vec min_keep_nan(Vec v, float hi) { return hi < v ? hi : v; }
  static Vec clamp_keep_nan(Vec v, float lo, float hi) { return min_keep_nan(lo > v ? lo : v, hi); }
  static Vec relu(Vec v) { return v < 0.0f ? 0.0f : v; }  // keeps NaN and −0
  static Vec step(Vec z) { return z > 0.0f ? 1.0f : 0.0f; }
  static Vec exp(Vec v) { return std::exp(v); }
  static Vec erfc(Vec v) { return std::erfc(v); }
  static Vec tanh(Vec v) { return std::tanh(v); }
};

}  // namespace ffn::kernels
