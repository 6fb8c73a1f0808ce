// The reference of the activations' quantisation (contract in kernels.hpp, f32_to_q8_rows):
// ggml's quantize_row_q8_0 / quantize_row_q8_K (core), a block at a time, with the sums of 16.
#include <cmath>
#include <cstring>

#include "core/ggml_blocks.hpp"
#include "core/ggml_blocks_shared.hpp"
#include "core/quant.hpp"
#include "kernels/q8_rows_by_blocks.hpp"
#include "kernels/scalar/scalar_kernels.hpp"

namespace ffn::kernels {
namespace {

bool all_finite(const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    if (!std::isfinite(x[i])) return false;
  return true;
}

bool q8_0_block(const float* x, int8_t* codes, float* scale, int16_t* sums) {
  if (!all_finite(x, 32)) return false;
  // The scale is Inf in binary16: quantize_row_q8_0 would throw.
  if ((f32_to_f16(ggml_detail::largest_abs(x, 32) / 127.0f) & 0x7C00u) == 0x7C00u) return false;
  BlockQ8_0 b;
  quantize_row_q8_0(x, &b, 32);
  *scale = f16_to_f32(b.d);
  std::memcpy(codes, b.qs, sizeof b.qs);
  for (int i = 0; i < 2; ++i) {
    int s = 0;
    for (int l = 0; l < 16; ++l) s += codes[16 * i + l];
    sums[i] = static_cast<int16_t>(s);
  }
  return true;
}

bool q8_K_block(const float* x, int8_t* codes, float* scale, int16_t* sums) {
  if (!all_finite(x, 256)) return false;
  BlockQ8_K b;
  quantize_row_q8_K(x, &b, 256);
  *scale = b.d;
  std::memcpy(codes, b.qs, sizeof b.qs);
  std::memcpy(sums, b.bsums, sizeof b.bsums);
  return true;
}

}  // namespace

const F32ToQ8Rows f32_to_q8_rows_scalar = q8_rows_by_blocks<q8_0_block, q8_K_block>;

}  // namespace ffn::kernels
