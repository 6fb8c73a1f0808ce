// The reference of the activations' quantisation (contract in kernels.hpp, f32_to_q8_rows):
// ggml's quantize_row_q8_0 / quantize_row_q8_K (core), a block at a time, with the sums of 16.
#include <cmath>
#include <cstring>

#include "core/ggml_blocks.hpp"
#include "core/quant.hpp"
#include "kernels/scalar/scalar_kernels.hpp"

namespace ffn::kernels {
namespace {

// Σ codes[16i … 16i + 15] for i < groups.
void sums_of_16(const int8_t* codes, int64_t groups, int16_t* sums) {
  for (int64_t i = 0; i < groups; ++i) {
    int s = 0;
    for (int l = 0; l < 16; ++l) s += codes[16 * i + l];
    sums[i] = static_cast<int16_t>(s);
  }
}

bool all_finite(const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    if (!std::isfinite(x[i])) return false;
  return true;
}

bool quantize(WeightType format, int64_t n, const float* x, int8_t* codes, float* scales, int16_t* sums) {
  if (!all_finite(x, n)) return false;
  if (format == WeightType::q8_K) {
    for (int64_t c = 0; c < n; c += 256) {
      BlockQ8_K b;
      quantize_row_q8_K(x + c, &b, 256);
      scales[c / 256] = b.d;
      std::memcpy(codes + c, b.qs, sizeof b.qs);
      std::memcpy(sums + c / 16, b.bsums, sizeof b.bsums);
    }
    return true;
  }
  for (int64_t c = 0; c < n; c += 32) {
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) amax = std::fmax(amax, std::fabs(x[c + j]));
    if ((f32_to_f16(amax / 127.0f) & 0x7C00u) == 0x7C00u) return false;  // the scale is Inf in binary16
    BlockQ8_0 b;
    quantize_row_q8_0(x + c, &b, 32);
    scales[c / 32] = f16_to_f32(b.d);
    std::memcpy(codes + c, b.qs, sizeof b.qs);
    sums_of_16(codes + c, 2, sums + c / 16);
  }
  return true;
}

}  // namespace

const F32ToQ8Rows f32_to_q8_rows_scalar = quantize;

}  // namespace ffn::kernels
