// The scalar level's kernels (contracts in kernels.hpp): the plain-C++ reference of every op
// but the AVX512_BF16 ones, which FFN_ISA=scalar runs and every wider table starts from.
#pragma once

#include "kernels/kernels.hpp"
#include "kernels/panel_kernels.hpp"

namespace ffn::kernels {

void f32_gemm_nt_scalar(int64_t T, int64_t N, int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb,
                        float* C, int64_t ldc);
void f32_panel_gemm_scalar(int64_t T, int64_t K, const float* A, int64_t lda, const float* P, float* C, int64_t ldc);
void f16_panel_gemm_scalar(int64_t T, int64_t K, const ActivationRows& A, const std::byte* P, float* C, int64_t ldc);
void bf16_panel_gemm_scalar(int64_t T, int64_t K, const ActivationRows& A, const std::byte* P, float* C, int64_t ldc);
extern const PanelGemmSet qblock_panel_gemm_scalar;
extern const PanelGemmSet qsub_panel_gemm_scalar;
float f32_fma_roof_scalar(int64_t iterations);
float stream_read_scalar(const float* p, int64_t floats, int pattern);
void f32_gemm_nn_scalar(int64_t T, int64_t N, int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb,
                        float* C, int64_t ldc, bool accumulate);
void f32_gemm_tn_add_scalar(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb,
                            float* C, int64_t ldc);
void rows_to_panel32_scalar(int64_t rows, int64_t n, const std::byte* src, int64_t ld_bytes, uint32_t* panel,
                            int64_t j0);
void rows_to_panel16_scalar(int64_t rows, int64_t n, const std::byte* src, int64_t ld_bytes, uint16_t* panel,
                            int64_t j0);
extern const F32ActivationRows f32_activation_rows_scalar;
extern const F32GatedActivationRows f32_gated_activation_rows_scalar;
extern const F32ActivationBackward f32_activation_backward_scalar;
extern const F32GatedActivationBackward f32_gated_activation_backward_scalar;
extern const F32Erfc f32_erfc_scalar;

extern const RowsDot rows_dot_scalar;
extern const RowsAxpy rows_axpy_scalar;
extern const RowsDotQ8_0 rows_dot_q8_0_scalar;
extern const F32ToQ8Rows f32_to_q8_rows_scalar;

}  // namespace ffn::kernels
