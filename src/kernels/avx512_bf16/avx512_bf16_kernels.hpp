// The avx512_bf16 level's kernels (contracts in kernels.hpp): bf16 weights dotted with
// activations rounded to bf16 by vdpbf16ps, the rounding itself, and the bf16 compute roof.
#pragma once

#include "kernels/kernels.hpp"

namespace ffn::kernels {

void bf16_panel_gemm_avx512_bf16_6x64(int64_t T, int64_t K, const ActivationRows& A, const std::byte* P, float* C,
                                      int64_t ldc);
void f32_to_bf16_rows_avx512_bf16(int64_t T, int64_t K, const float* x, int64_t ldx, uint16_t* out, int64_t ldo);
float bf16_dot_roof_avx512_bf16(int64_t iterations);

}  // namespace ffn::kernels
