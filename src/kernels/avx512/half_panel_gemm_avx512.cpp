// AVX-512F panel kernel for 16-bit weights (C = A·widen(P)), the 6×64 tile of
// f32_panel_gemm_avx512 with loads that widen 16 weights to one zmm: bf16 pairs by masking
// or shifting left 16 (exact: bf16 is an f32's upper half), f16 by vcvtph2ps (exact).
// Compiled with the avx512 level's flags (ffn/isa_list.hpp); called only when the CPU has the level.
#include <cstring>

#include "kernels/avx512/vec_avx512.hpp"
#include "kernels/f32_panel_tiles.hpp"
#include "kernels/avx512/avx512_kernels.hpp"

namespace ffn::kernels {
namespace {

__m256i load16(const uint16_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }

// The K tail (1 … 15 weights) through a zeroed copy: byte-masked loads need AVX-512BW,
// which this ISA level does not assume; zero weights add exact zeros to masked-off lanes.
__m256i load16_tail(const uint16_t* p, int64_t count) {
  alignas(32) uint16_t tmp[16] = {};
  std::memcpy(tmp, p, static_cast<size_t>(count) * sizeof(uint16_t));
  return _mm256_load_si256(reinterpret_cast<const __m256i*>(tmp));
}

struct LoadF16 {
  using Elem = uint16_t;
  static __m512 load(const uint16_t* p) { return _mm512_cvtph_ps(load16(p)); }
  static __m512 load_tail(const uint16_t* p, int64_t count) { return _mm512_cvtph_ps(load16_tail(p, count)); }
};

// A bf16 panel's row k (pair layout, kernels.hpp), columns c … c + 15: one load holds
// rows k and k ^ 1 of those columns, row k's values in the low halves when k is even.
struct PairedBf16Panel {
  using Elem = uint16_t;
  static __m512 at(const uint16_t* P, int64_t k, int64_t c) {
    const __m512i pairs = _mm512_loadu_si512(P + bf16_panel_index(k & ~int64_t(1), c));
    return _mm512_castsi512_ps((k & 1) ? _mm512_and_si512(pairs, _mm512_set1_epi32(int32_t(0xFFFF0000u)))
                                       : _mm512_slli_epi32(pairs, 16));
  }
};

// One strip streams a block (the default StreamedTokens), prefetching 16 KiB ahead.
constexpr StreamAhead kAhead{16384};

}  // namespace

// The panel kernel (f32_panel_tiles.hpp) with widening loads: 16-bit panels laid out at
// load (InferenceBlock).
void f16_panel_gemm_avx512_6x64(int64_t T, int64_t K, const ActivationRows& A, const std::byte* panel, float* C,
                                int64_t ldc) {
  const auto* P = reinterpret_cast<const uint16_t*>(panel);
  f32_panel_gemm_tiled<Avx512Store, 6, 4, RowPanel<LoadF16>, 6, kAhead>(T, K, A.f32(), A.f32_stride(), P, C, ldc);
}

void bf16_panel_gemm_avx512_6x64(int64_t T, int64_t K, const ActivationRows& A, const std::byte* panel, float* C,
                                 int64_t ldc) {
  const auto* P = reinterpret_cast<const uint16_t*>(panel);
  f32_panel_gemm_tiled<Avx512Store, 6, 4, PairedBf16Panel, 6, kAhead>(T, K, A.f32(), A.f32_stride(), P, C, ldc);
}

}  // namespace ffn::kernels
