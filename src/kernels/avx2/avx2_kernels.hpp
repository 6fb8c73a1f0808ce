// The avx2 level's kernels (contracts in kernels.hpp; 16 ymm registers, hence tile shapes of
// its own): an AVX2 kernel for every op of the scalar table.
#pragma once

#include "kernels/kernels.hpp"
#include "kernels/panel_kernels.hpp"

namespace ffn::kernels {

void f32_gemm_nt_avx2_3x3(int64_t T, int64_t N, int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb,
                          float* C, int64_t ldc);
void f32_gemm_nt_packed_avx2_6x16(int64_t T, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
                                  int64_t ldb, float* C, int64_t ldc);
void f32_panel_gemm_avx2_2x64_1x64_3x32_6x16(int64_t T, int64_t K, const float* A, int64_t lda, const float* P,
                                             float* C, int64_t ldc);
void f16_panel_gemm_avx2_2x64_1x64_6x16(int64_t T, int64_t K, const ActivationRows& A, const std::byte* P, float* C,
                                        int64_t ldc);
void bf16_panel_gemm_avx2_2x64_6x16(int64_t T, int64_t K, const ActivationRows& A, const std::byte* P, float* C,
                                    int64_t ldc);
extern const PanelGemmSet qblock_panel_gemm_avx2_1x64;
extern const PanelGemmSet qsub_panel_gemm_avx2_1x64_2x32;
float f32_fma_roof_avx2(int64_t iterations);
float int8_dot_roof_avx2(int64_t iterations);
float stream_read_avx2(const float* p, int64_t floats, int pattern);
void f32_gemm_nn_avx2_6x16(int64_t T, int64_t N, int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb,
                           float* C, int64_t ldc, bool accumulate);
void f32_gemm_tn_add_avx2_6x16(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
                               int64_t ldb, float* C, int64_t ldc);
void rows_to_panel32_avx2(int64_t rows, int64_t n, const std::byte* src, int64_t ld_bytes, uint32_t* panel, int64_t j0);
void rows_to_panel16_avx2(int64_t rows, int64_t n, const std::byte* src, int64_t ld_bytes, uint16_t* panel, int64_t j0);
extern const F32ActivationRows f32_activation_rows_avx2;
extern const F32GatedActivationRows f32_gated_activation_rows_avx2;
extern const F32ActivationBackward f32_activation_backward_avx2;
extern const F32GatedActivationBackward f32_gated_activation_backward_avx2;
extern const F32Erfc f32_erfc_avx2;

extern const RowsDot rows_dot_avx2;
extern const RowsAxpy rows_axpy_avx2;
extern const RowsDotQ8_0 rows_dot_q8_0_avx2;
extern const F32ToQ8Rows f32_to_q8_rows_avx2;

}  // namespace ffn::kernels
