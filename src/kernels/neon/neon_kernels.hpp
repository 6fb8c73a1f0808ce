// The neon level's kernels (contracts in kernels.hpp; Advanced SIMD, 32 q registers of 4
// floats, hence tile shapes of its own): the f32, 16-bit, activation and roof kernels, and the
// integer panel kernels with SDOT's arithmetic in Armv8.0 instructions (the dotprod level
// replaces them with SDOT's); rows_to_panel32/16 stay the scalar table's.
#pragma once

#include "kernels/kernels.hpp"
#include "kernels/panel_kernels.hpp"

namespace ffn::kernels {

void f32_gemm_nt_neon_4x4(int64_t T, int64_t N, int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb,
                          float* C, int64_t ldc);
void f32_gemm_nt_packed_neon_6x16(int64_t T, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
                                  int64_t ldb, float* C, int64_t ldc);
void f32_panel_gemm_neon_1x64_6x16(int64_t T, int64_t K, const float* A, int64_t lda, const float* P, float* C,
                                   int64_t ldc);
void f16_panel_gemm_neon_1x64_6x16(int64_t T, int64_t K, const ActivationRows& A, const std::byte* P, float* C,
                                   int64_t ldc);
void bf16_panel_gemm_neon_1x64_6x16(int64_t T, int64_t K, const ActivationRows& A, const std::byte* P, float* C,
                                    int64_t ldc);
float f32_fma_roof_neon(int64_t iterations);
float stream_read_neon(const float* p, int64_t floats, int pattern);
void f32_gemm_nn_neon_6x16(int64_t T, int64_t N, int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb,
                           float* C, int64_t ldc, bool accumulate);
void f32_gemm_tn_add_neon_6x16(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
                               int64_t ldb, float* C, int64_t ldc);
extern const PanelGemmSet qblock_panel_gemm_neon_1x64_4x8;
extern const PanelGemmSet qsub_panel_gemm_neon_1x64_4x64;
extern const F32ActivationRows f32_activation_rows_neon;
extern const F32GatedActivationRows f32_gated_activation_rows_neon;
extern const F32ActivationBackward f32_activation_backward_neon;
extern const F32GatedActivationBackward f32_gated_activation_backward_neon;
extern const F32Erfc f32_erfc_neon;

extern const RowsDot rows_dot_neon;
extern const RowsAxpy rows_axpy_neon;
extern const RowsDotQ8_0 rows_dot_q8_0_neon;
extern const F32ToQ8Rows f32_to_q8_rows_neon;

}  // namespace ffn::kernels
