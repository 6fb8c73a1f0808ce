// AVX2 panel kernel for 16-bit weights (C = A·widen(P)), the tiles of f32_panel_gemm_avx2
// with loads that widen 8 weights to one ymm: bf16 pairs by masking or shifting left 16
// (exact), f16 by F16C's vcvtph2ps (exact).
// Compiled with -mavx2 -mfma -mf16c (this file only); called only when the CPU has them.
#include <cstring>

#include "kernels/avx2/vec_avx2.hpp"
#include "kernels/f32_panel_tiles.hpp"
#include "kernels/kernels.hpp"

namespace ffn::kernels {
namespace {

__m128i load8(const uint16_t* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); }

// The K tail (1 … 7 weights) through a zeroed copy; zero weights add exact zeros.
__m128i load8_tail(const uint16_t* p, int64_t count) {
  alignas(16) uint16_t tmp[8] = {};
  std::memcpy(tmp, p, static_cast<size_t>(count) * sizeof(uint16_t));
  return _mm_load_si128(reinterpret_cast<const __m128i*>(tmp));
}

struct LoadF16 {
  using Elem = uint16_t;
  static __m256 load(const uint16_t* p) { return _mm256_cvtph_ps(load8(p)); }
  static __m256 load_tail(const uint16_t* p, int64_t count) { return _mm256_cvtph_ps(load8_tail(p, count)); }
};

// A bf16 panel's row k (pair layout, kernels.hpp), columns c … c + 7: one load holds rows
// k and k ^ 1 of those columns, row k's values in the low halves when k is even.
struct PairedBf16Panel {
  using Elem = uint16_t;
  static __m256 at(const uint16_t* P, int64_t k, int64_t c) {
    const __m256i pairs =
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(P + bf16_panel_index(k & ~int64_t(1), c)));
    return _mm256_castsi256_ps((k & 1) ? _mm256_and_si256(pairs, _mm256_set1_epi32(int32_t(0xFFFF0000u)))
                                       : _mm256_slli_epi32(pairs, 16));
  }
};

}  // namespace

// The panel kernel (f32_panel_tiles.hpp) with the same widening loads: 16-bit panels laid
// out at load (InferenceBlock). Few tokens take the one-pass 2×64 tile (two tokens × 8 ymm,
// each row of the panel read once, see f32_panel_gemm_avx2_2x64_3x32_6x16) — f16 up to 4
// tokens, bf16 (whose pair layout the tile reads at k and again at k + 1) up to 2 — and
// the rest the four-pass 6×16 tile. Measured on the 7B shape, alternating in one process:
// one token × 64 columns against 6×16 at T = 1, f16 1.81×, bf16 1.78×; 2×64 against the
// tiles before it, f16 1.35× at T = 2, 1.06× at 3, 1.04× at 4, 0.91× at 5; bf16 1.53× at
// T = 2, 0.90–0.95× at 3 and 4. Either tile gives every element the same bits.
void half_panel_gemm_avx2_2x64_6x16(bool bf16, int64_t T, int64_t K, const float* A, int64_t lda, const uint16_t* P,
                                    float* C, int64_t ldc) {
  if (bf16) {
    if (T <= 2)
      f32_panel_gemm_tiled<Avx2Store, 2, 8, PairedBf16Panel>(T, K, A, lda, P, C, ldc);
    else
      f32_panel_gemm_tiled<Avx2Store, 6, 2, PairedBf16Panel>(T, K, A, lda, P, C, ldc);
  } else {
    if (T <= 4)
      f32_panel_gemm_tiled<Avx2Store, 2, 8, RowPanel<LoadF16>>(T, K, A, lda, P, C, ldc);
    else
      f32_panel_gemm_tiled<Avx2Store, 6, 2, RowPanel<LoadF16>>(T, K, A, lda, P, C, ldc);
  }
}

}  // namespace ffn::kernels
