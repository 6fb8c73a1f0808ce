// The plain C++ panel kernels for 16-bit weights (C = A·widen(P)), the scalar reference: each
// weight widened exactly (core/quant.hpp), one accumulator, k in order, as
// f32_panel_gemm_scalar. Compiled with FMA contraction off.
#include "core/quant.hpp"
#include "kernels/scalar/scalar_kernels.hpp"

namespace ffn::kernels {
namespace {

template <bool Bf16>
void panel(int64_t T, int64_t K, const ActivationRows& A, const std::byte* panel_bytes, float* C, int64_t ldc) {
  const auto* P = reinterpret_cast<const uint16_t*>(panel_bytes);
  const float* a_rows = A.f32();
  const int64_t lda = A.f32_stride();
  for (int64_t t = 0; t < T; ++t) {
    float* c = C + t * ldc;
    for (int64_t j = 0; j < kPanelWidth; ++j) c[j] = 0.0f;
    for (int64_t k = 0; k < K; ++k) {
      const float a = a_rows[t * lda + k];
      for (int64_t j = 0; j < kPanelWidth; ++j)
        c[j] += a * (Bf16 ? bf16_to_f32(P[bf16_panel_index(k, j)]) : f16_to_f32(P[k * kPanelWidth + j]));
    }
  }
}

}  // namespace

void f16_panel_gemm_scalar(int64_t T, int64_t K, const ActivationRows& A, const std::byte* P, float* C, int64_t ldc) {
  panel<false>(T, K, A, P, C, ldc);
}
void bf16_panel_gemm_scalar(int64_t T, int64_t K, const ActivationRows& A, const std::byte* P, float* C, int64_t ldc) {
  panel<true>(T, K, A, P, C, ldc);
}

}  // namespace ffn::kernels
