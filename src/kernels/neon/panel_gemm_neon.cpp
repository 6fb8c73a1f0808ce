// Advanced SIMD panel kernels for f32, f16 and bf16 weights (C = A·widen(P)). One token takes
// a one-pass tile, 1 token × the panel's 64 columns (16 accumulators), so that the panel
// streams as one linear array (decode); more tokens the four-pass 6×16 tile (6 tokens × 4
// vectors = 24 accumulators + 4 panel vectors + 1 broadcast of the 32 registers). 16-bit
// weights are widened exactly in registers: f16 by FCVTL (Armv8.0), bf16 pairs (the pair
// layout of kernels.hpp) by a shift or a mask. Every element is the same chain
// acc ← fma(A[t][k], P[k][j], acc) over k in order whichever tile runs it
// (f32_panel_tiles.hpp), so a token's result is the same alone or in any batch.
// Compiled with the neon level's flags (ffn/isa_list.hpp); called only when the CPU has the level.
#include <cstring>

#include "kernels/f32_panel_tiles.hpp"
#include "kernels/neon/neon_kernels.hpp"
#include "kernels/neon/vec_neon.hpp"
#include "kernels/neon/widen16_neon.hpp"

namespace ffn::kernels {
namespace {

// The one-pass tile streams the panel's rows; the few FMAs per row leave nothing for a
// software prefetch to hide behind, as on the x86 levels.
constexpr int kOneTokenTile = 1;

// A bf16 panel's row k (pair layout, kernels.hpp), columns c … c + 3: one load holds rows k
// and k ^ 1 of those columns, row k's values in the low halves when k is even.
struct PairedBf16Panel {
  using Elem = uint16_t;
  static float32x4_t at(const uint16_t* P, int64_t k, int64_t c) {
    const uint32x4_t pairs = vld1q_u32(reinterpret_cast<const uint32_t*>(P + bf16_panel_index(k & ~int64_t(1), c)));
    return vreinterpretq_f32_u32((k & 1) ? vandq_u32(pairs, vdupq_n_u32(0xFFFF0000u)) : vshlq_n_u32(pairs, 16));
  }
};

template <class PanelLoad>
void panel_gemm(int64_t T, int64_t K, const float* A, int64_t lda, const typename PanelLoad::Elem* P, float* C,
                int64_t ldc) {
  if (T <= kOneTokenTile)
    f32_panel_gemm_tiled<NeonStore, 1, 16, PanelLoad>(T, K, A, lda, P, C, ldc);
  else
    f32_panel_gemm_tiled<NeonStore, 6, 4, PanelLoad>(T, K, A, lda, P, C, ldc);
}

}  // namespace

void f32_panel_gemm_neon_1x64_6x16(int64_t T, int64_t K, const float* A, int64_t lda, const float* P, float* C,
                                   int64_t ldc) {
  panel_gemm<RowPanel<LoadF32<Neon>>>(T, K, A, lda, P, C, ldc);
}

void f16_panel_gemm_neon_1x64_6x16(int64_t T, int64_t K, const ActivationRows& A, const std::byte* P, float* C,
                                   int64_t ldc) {
  panel_gemm<RowPanel<F16x4>>(T, K, A.f32(), A.f32_stride(), reinterpret_cast<const uint16_t*>(P), C, ldc);
}

void bf16_panel_gemm_neon_1x64_6x16(int64_t T, int64_t K, const ActivationRows& A, const std::byte* P, float* C,
                                    int64_t ldc) {
  panel_gemm<PairedBf16Panel>(T, K, A.f32(), A.f32_stride(), reinterpret_cast<const uint16_t*>(P), C, ldc);
}

}  // namespace ffn::kernels
