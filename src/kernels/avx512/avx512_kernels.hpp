// The avx512 level's kernels (contracts in kernels.hpp; 32 zmm registers): its own f32,
// 16-bit and activation kernels and roof loops. The integer kernels stay avx2's (AVX-512 ones
// need VNNI: avx512_vnni), and so do rows_to_panel32 / rows_to_panel16.
#pragma once

#include "kernels/kernels.hpp"

namespace ffn::kernels {

void f32_gemm_nt_avx512_4x4(int64_t T, int64_t N, int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb,
                            float* C, int64_t ldc);
void f32_gemm_nt_packed_avx512_6x64(int64_t T, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
                                    int64_t ldb, float* C, int64_t ldc);
void f32_panel_gemm_avx512_6x64_4x64(int64_t T, int64_t K, const float* A, int64_t lda, const float* P, float* C,
                                     int64_t ldc);
void f16_panel_gemm_avx512_6x64(int64_t T, int64_t K, const ActivationRows& A, const std::byte* P, float* C,
                                int64_t ldc);
void bf16_panel_gemm_avx512_6x64(int64_t T, int64_t K, const ActivationRows& A, const std::byte* P, float* C,
                                 int64_t ldc);
float f32_fma_roof_avx512(int64_t iterations);
float stream_read_avx512(const float* p, int64_t floats, int pattern);
void f32_gemm_nn_avx512_8x32(int64_t T, int64_t N, int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb,
                             float* C, int64_t ldc, bool accumulate);
void f32_gemm_tn_add_avx512_8x32(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
                                 int64_t ldb, float* C, int64_t ldc);
extern const F32ActivationRows f32_activation_rows_avx512;
extern const F32GatedActivationRows f32_gated_activation_rows_avx512;
extern const F32ActivationBackward f32_activation_backward_avx512;
extern const F32GatedActivationBackward f32_gated_activation_backward_avx512;
extern const F32Erfc f32_erfc_avx512;

extern const RowsDot rows_dot_avx512;
extern const RowsAxpy rows_axpy_avx512;

}  // namespace ffn::kernels
