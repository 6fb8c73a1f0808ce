// AVX512_BF16 kernels (contracts in kernels.hpp): the bf16 panel product with bf16
// activations by vdpbf16ps, the rounding of f32 activations to bf16 (vcvtneps2bf16), and
// the bf16 compute roof's loop.
// Compiled with the avx512_bf16 level's flags (ffn/isa_list.hpp); called only when the CPU has the level.
//
// The tile is f32_panel_tiles.hpp's 6 tokens × 64 columns, stepping over pairs of k: the
// panel's pair row (64 rows × weights k, k + 1) is four zmm loads, each token's pair of
// activations one 32-bit broadcast, and each of the 24 vdpbf16ps adds two products per
// lane — twice an f32 FMA's work for the same issue slot.
#include <immintrin.h>

#include <cstring>

#include "kernels/avx512/vec_avx512.hpp"
#include "kernels/avx512_bf16/avx512_bf16_kernels.hpp"
#include "kernels/f32_fma_roof.hpp"
#include "kernels/f32_panel_tiles.hpp"

namespace ffn::kernels {
namespace {

constexpr int kTileTokens = 6;
constexpr int kTileVectors = 4;                         // 64 columns of 16 lanes
constexpr int64_t kPairRowBytes = 2 * kPanelWidth * 2;  // weights k, k + 1 of 64 rows

__m512 dot_pairs(__m512 acc, __m512i a, __m512i b) {
  return _mm512_dpbf16_ps(acc, reinterpret_cast<__m512bh&>(a), reinterpret_cast<__m512bh&>(b));
}

int32_t load_pair(const uint16_t* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// MR tokens × 64 columns over kc rows (kc / 2 pairs, rounded up) of a bf16 panel block.
template <int MR, bool Resume>
void dot_tile(int64_t kc, const uint16_t* A, int64_t lda, const uint16_t* P, float* C, int64_t ldc, PrefetchShare pf) {
  __m512 acc[MR][kTileVectors];
  for (int i = 0; i < MR; ++i)
    for (int v = 0; v < kTileVectors; ++v)
      acc[i][v] = Resume ? _mm512_loadu_ps(C + i * ldc + v * 16) : _mm512_setzero_ps();
  const int64_t pairs = (kc + 1) / 2;
  int64_t issued = 0;
  for (int64_t q = 0; q < pairs; ++q) {
    // The prefetch share of f32_panel_tiles.hpp, counted per row of k (two per pair).
    for (int64_t n = 0; n < 2 * pf.per_k && issued < pf.lines; ++n, ++issued)
      __builtin_prefetch(pf.first + 64 * issued, 0, 2);
    const uint16_t* p = P + bf16_panel_index(2 * q, 0);
    if (pf.ahead_bytes > 0) pf.row_ahead(P, q, kPairRowBytes);
    __m512i b[kTileVectors];
    for (int v = 0; v < kTileVectors; ++v) b[v] = _mm512_loadu_si512(p + 32 * v);
    for (int i = 0; i < MR; ++i) {
      const __m512i a = _mm512_set1_epi32(load_pair(A + i * lda + 2 * q));
      for (int v = 0; v < kTileVectors; ++v) acc[i][v] = dot_pairs(acc[i][v], a, b[v]);
    }
  }
  for (int i = 0; i < MR; ++i)
    for (int v = 0; v < kTileVectors; ++v) _mm512_storeu_ps(C + i * ldc + v * 16, acc[i][v]);
}

// The roof's chains: acc ← acc + a·b over one pair per lane (4 FLOPs a lane); the tiny
// operands keep every chain finite for any number of iterations the bench runs.
struct Bf16DotChains {
  using Vec = __m512;
  static Vec broadcast(float v) { return _mm512_set1_ps(v); }
  static Vec fmadd(Vec acc, Vec, Vec) {
    const __m512i pair = _mm512_set1_epi32(0x3A833A83);  // bf16 pair (≈ 1e-3, ≈ 1e-3)
    return dot_pairs(acc, pair, pair);
  }
  static float reduce(Vec v) { return Avx512::reduce(v); }
};

}  // namespace

void bf16_panel_gemm_avx512_bf16_6x64(int64_t T, int64_t K, const ActivationRows& A, const std::byte* panel, float* C,
                                      int64_t ldc) {
  const auto* P = reinterpret_cast<const uint16_t*>(panel);
  const int64_t lda = A.bf16_stride();
  // Streamed blocks of two strips prefetch 8 KiB ahead (f32_panel_tiles.hpp, StreamAhead).
  constexpr StreamAhead kAhead{8192, kTileTokens + 1};
  panel_gemm_blocked<kTileTokens, kStreamedTokensPerLineOp, kAhead>(
      T, K, A.bf16(), lda, P, C, ldc,
      [&]<int R, bool Resume>(int64_t kc, const uint16_t* a, const uint16_t* block, float* c, PrefetchShare pf) {
        dot_tile<R, Resume>(kc, a, lda, block, c, ldc, pf);
      });
}

void f32_to_bf16_rows_avx512_bf16(int64_t T, int64_t K, const float* x, int64_t ldx, uint16_t* out, int64_t ldo) {
  for (int64_t t = 0; t < T; ++t) {
    const float* s = x + t * ldx;
    uint16_t* d = out + t * ldo;
    int64_t k = 0;
    for (; k + 16 <= K; k += 16) {
      const __m256bh h = _mm512_cvtneps_pbh(_mm512_loadu_ps(s + k));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + k), reinterpret_cast<const __m256i&>(h));
    }
    if (k < K) {
      const auto mask = static_cast<__mmask16>((1u << (K - k)) - 1u);
      const __m256bh h = _mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(mask, s + k));
      _mm256_mask_storeu_epi16(d + k, mask, reinterpret_cast<const __m256i&>(h));
    }
    if (K % 2) d[K] = 0;
  }
}

float bf16_dot_roof_avx512_bf16(int64_t iterations) { return f32_fma_roof<Bf16DotChains, 24>(iterations); }

}  // namespace ffn::kernels
