// What ggml's 32-value blocks (ggml_blocks_32.cpp) and its K-quant super-blocks
// (ggml_blocks_k.cpp) share: ggml's rounding, the input checks, and IQ4's codebook search
// (IQ4_NL's blocks and IQ4_XS's sub-blocks). Evaluated exactly as ggml-quants.c writes them
// (see ggml_blocks_32.cpp's opening comment).
#pragma once

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#include "core/ggml_blocks.hpp"
#include "core/quant_checks.hpp"
#include "ffn/error.hpp"

namespace ffn::ggml_detail {

using detail::block_count;
using detail::require_finite;
using detail::scale_f16;

// ggml's GROUP_MAX_EPS: a (sub-)block whose largest |x| is below it is treated as all zero.
constexpr float kGroupMaxEps = 1e-15f;

// Above this |x| the least-squares searches of the K-quants and IQ4 types would sum squares
// and cubes beyond f32's range (and turn their scales into NaN, which ggml then stores or,
// worse, reads as "all zero"). Every such type's binary16 scale overflows far earlier (Q6_K's,
// the widest, from |x| ≈ 2.7e8), so the inputs this rejects are ones scale_f16 rejects anyway.
constexpr float kMaxAbs = 1e10f;

// ggml's nearest_int: adding 1.5·2²³ leaves x rounded to an integer (ties to even, the FPU's
// rounding) in the low 22 mantissa bits, for |x| < 2²². Outside that range the result is
// whatever those bits hold — ggml asserts, we reproduce the bits (our callers stay inside).
inline int nearest_int(float x) {
  const float shifted = x + 12582912.0f;
  uint32_t bits;
  std::memcpy(&bits, &shifted, sizeof bits);
  return static_cast<int>(bits & 0x007FFFFFu) - 0x00400000;
}

inline int clamp_int(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }

inline float largest_abs(const float* v, int64_t len) {
  float amax = 0.0f;
  for (int64_t j = 0; j < len; ++j) amax = std::fmax(amax, std::fabs(v[j]));
  return amax;
}

// The checks every K-quant / IQ4 block passes before its searches run: finite, |x| ≤ kMaxAbs.
inline void require_quantisable(const float* v, int64_t len, int64_t b, const char* fn) {
  require_finite(v, len, b * len, fn);
  const float amax = largest_abs(v, len);
  if (amax > kMaxAbs)
    throw Error(std::string(fn) + ": block " + std::to_string(b) + " (largest |x| " + std::to_string(amax) +
                ") needs a scale beyond binary16's 65504");
}

// The value of largest magnitude, sign kept; the first on a tie (ggml's strict >).
inline float signed_absmax(const float* v, int n, float* amax_out = nullptr) {
  float amax = 0.0f, max = 0.0f;
  for (int i = 0; i < n; ++i) {
    const float a = std::fabs(v[i]);
    if (a > amax) {
      amax = a;
      max = v[i];
    }
  }
  if (amax_out) *amax_out = amax;
  return max;
}

// ---- IQ4's codebook search ----

// The index of the codebook entry nearest to x (values sorted ascending, n of them): ggml's
// best_index_int8, a bisection ending in a comparison that sends an exact midpoint up.
inline int nearest_codebook_index(int n, const int8_t* values, float x) {
  if (x <= values[0]) return 0;
  if (x >= values[n - 1]) return n - 1;
  int lo = 0, hi = n - 1;
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (x < values[mid])
      hi = mid;
    else
      lo = mid;
  }
  return x - values[hi - 1] < values[hi] - x ? hi - 1 : hi;
}

// One 32-value sub-block of IQ4_NL / IQ4_XS without importance weights (weights x²): ggml's
// quantize_row_iq4_nl_impl per sub-block. Writes the codes to L (unless the sub-block is
// ~zero, when L is left as it was) and returns the least-squares scale; with ntry > 0 it also
// tries the 2·ntry+1 grid scales (itry − 127)/max and keeps the best.
inline float iq4_sub_block_scale(const float* xb, uint8_t* L, int ntry) {
  float weight[32];
  for (int j = 0; j < 32; ++j) weight[j] = xb[j] * xb[j];
  float amax;
  const float max = signed_absmax(xb, 32, &amax);
  if (amax < kGroupMaxEps) return 0.0f;
  const float v0 = kIq4Values[0];
  float d = ntry > 0 ? -max / v0 : max / v0;
  float id = 1 / d;
  float sumqx = 0, sumq2 = 0;
  for (int j = 0; j < 32; ++j) {
    const int l = nearest_codebook_index(16, kIq4Values, id * xb[j]);
    L[j] = static_cast<uint8_t>(l);
    const float q = kIq4Values[l];
    const float w = weight[j];
    sumqx += w * q * xb[j];
    sumq2 += w * q * q;
  }
  d = sumq2 > 0 ? sumqx / sumq2 : 0.0f;
  float best = d * sumqx;
  for (int itry = -ntry; itry <= ntry; ++itry) {
    id = static_cast<float>(itry + kIq4Values[0]) / max;
    sumqx = sumq2 = 0;
    for (int j = 0; j < 32; ++j) {
      const float q = kIq4Values[nearest_codebook_index(16, kIq4Values, id * xb[j])];
      const float w = weight[j];
      sumqx += w * q * xb[j];
      sumq2 += w * q * q;
    }
    if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
      d = sumqx / sumq2;
      best = d * sumqx;
    }
  }
  return d;
}

// 32 codes (one sub-block) into 16 bytes: code j in the low nibble of byte j, code j + 16 in
// its high nibble.
inline void pack_nibbles_32(const uint8_t* L, uint8_t* q4) {
  for (int j = 0; j < 16; ++j) q4[j] = static_cast<uint8_t>(L[j] | (L[16 + j] << 4));
}

}  // namespace ffn::ggml_detail
