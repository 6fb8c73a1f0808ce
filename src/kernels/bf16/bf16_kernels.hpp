// The bf16 level's kernels (FEAT_BF16; contracts in kernels.hpp): bf16 weights dotted with
// activations rounded to bf16 by BFDOT, the rounding itself (BFCVTN), and the bf16 compute
// roof. As the avx512_bf16 level's, with Advanced SIMD's 32 q registers of 4 lanes.
#pragma once

#include "kernels/kernels.hpp"

namespace ffn::kernels {

void bf16_panel_gemm_bf16_1x64_8x8(int64_t T, int64_t K, const ActivationRows& A, const std::byte* P, float* C,
                                   int64_t ldc);
void f32_to_bf16_rows_bf16(int64_t T, int64_t K, const float* x, int64_t ldx, uint16_t* out, int64_t ldo);
float bf16_dot_roof_bf16(int64_t iterations);

}  // namespace ffn::kernels
