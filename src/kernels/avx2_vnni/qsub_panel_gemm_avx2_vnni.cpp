// AVX-VNNI product with a qsub panel packed at load (layout, integers and arithmetic in
// qsub_panels.hpp), 1×64 tile: one token × 8 ymm of 8 rows, super-block after super-block —
// the AVX-512 VNNI kernel's arithmetic on 256-bit vectors, for the CPUs that have VEX-coded
// vpdpbusd without AVX-512 (Intel's client cores from Alder Lake on; Zen 5 beside its
// AVX-512). Each group of 4 values of 8 rows is one vector, dotted by one vpdpbusd with the
// token's 4 activation bytes broadcast into the sub-block's sum, which starts from
// −offset·B_u; the sum times the sub-block's 8 scales (vpmulld) goes into I. Against the
// AVX2 kernel's vpmaddubsw + vpmaddwd by the scales + add, that is one instruction a
// vector and one vpmulld a sub-block and row vector, and no int16 pair to bound.
// M = Σ_u m_u·B_u takes one vpmulld a sub-block and row vector.
// The codebook types (IQ4_NL, IQ4_XS, MXFP4): vpdpbusd wants the weights unsigned, so one
// vpshufb maps each nibble to its signed code plus 128 (the codebook with its sign bit
// flipped), and the sums start from −128·B_u, which takes the 128 back out exactly
// (vpdpbusd adds in int32). MXFP4's d is made from its e8m0 byte in integer registers.
// With the first token (prefetch) the panel kQPanelPrefetchBytes ahead is pulled into L2,
// a sub-block's share of its lines at a time, as the AVX2 kernel does — or, Shared, each
// token's tile its share of it (avx2_qsub::panel_in_k_blocks).
// Compiled with the avx2_vnni level's flags (ffn/isa_list.hpp); called only when the CPU has the level.
#include <immintrin.h>

#include <algorithm>

#include "kernels/avx2/qsub_tile_avx2.hpp"
#include "kernels/avx2_vnni/avx2_vnni_kernels.hpp"

namespace ffn::kernels {
namespace {

using namespace avx2_qsub;

// One token × the panel's 64 rows over super-blocks [b0, b1); chains start from C when resume.
template <WeightType W, bool Shared = false>
void tile(const Q8Rows& A, const std::byte* P, int64_t b0, int64_t b1, bool resume, bool prefetch, float* C,
          int part = 0, int parts = 1) {
  constexpr QFormat f = q_format(W);
  constexpr QSubLayout L = qsub_layout(f);
  constexpr int64_t ahead = (kQPanelPrefetchBytes + L.bytes - 1) / L.bytes * L.bytes;
  __m256 acc[8];
  for (int v = 0; v < 8; ++v) acc[v] = resume ? _mm256_loadu_ps(C + 8 * v) : _mm256_setzero_ps();
  const __m256i nibble = _mm256_set1_epi8(0x0F);
  __m256i biased_codebook = _mm256_setzero_si256();
  if constexpr (f.has_codebook())
    biased_codebook = _mm256_xor_si256(
        _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(f.codebook_values()))),
        _mm256_set1_epi8(char(0x80)));
  constexpr int bias = f.offset + (f.has_codebook() ? 128 : 0);  // subtracted from every q: B_u's factor
  for (int64_t b = b0; b < b1; ++b) {
    const auto* blk = reinterpret_cast<const uint8_t*>(P + b * L.bytes);
    const int8_t* x = A.codes + b * f.block;
    const int16_t* bs = A.sums + b * (f.block / 16);
    auto x_group = [&](int i) {  // activation bytes i … i+3 of the super-block
      int32_t bytes;
      __builtin_memcpy(&bytes, x + i, 4);
      return _mm256_set1_epi32(bytes);
    };
    __m256i I[8];
    for (int v = 0; v < 8; ++v) I[v] = _mm256_setzero_si256();
    for (int u = 0; u < f.subs(); ++u) {
      if constexpr (Shared)
        prefetch_share_to_l2(reinterpret_cast<const std::byte*>(blk) + ahead, L.bytes, part * f.subs() + u,
                             parts * f.subs());
      else if (prefetch)
        prefetch_share_to_l2(reinterpret_cast<const std::byte*>(blk) + ahead, L.bytes, u, f.subs());
      __m256i s[8];
      const __m256i init = _mm256_set1_epi32(-bias * qsub_sum(bs, f.sub, u));
      for (int v = 0; v < 8; ++v) s[v] = init;
      const uint8_t* q = blk + L.q_of(f, u);
      auto w_vec = [&](int g, int v) {
        return _mm256_load_si256(reinterpret_cast<const __m256i*>(q + 256 * g + 32 * v));
      };
      if constexpr (f.nibbles) {
        constexpr int pairs = f.sub / 8;
        // Group g's high bits of row vector v moved to bits 4 … of each byte.
        auto high_of = [&](int v, int g) {
          const __m256i h = _mm256_load_si256(reinterpret_cast<const __m256i*>(blk + L.h_of(u) + 32 * v));
          const int shift = 4 - f.high_bits * g;
          const __m256i moved = shift >= 0 ? _mm256_slli_epi16(h, shift) : _mm256_srli_epi16(h, -shift);
          return _mm256_and_si256(moved, _mm256_set1_epi8(char(((1 << f.high_bits) - 1) << 4)));
        };
        for (int g = 0; g < pairs; ++g) {
          const __m256i lo_x = x_group(u * f.sub + 4 * g), hi_x = x_group(u * f.sub + 4 * (g + pairs));
          for (int v = 0; v < 8; ++v) {
            const __m256i raw = w_vec(g, v);
            __m256i lo = _mm256_and_si256(raw, nibble);
            __m256i hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), nibble);
            if constexpr (f.high_bits != 0) {
              lo = _mm256_or_si256(lo, high_of(v, g));
              hi = _mm256_or_si256(hi, high_of(v, g + pairs));
            }
            if constexpr (f.has_codebook()) {
              lo = _mm256_shuffle_epi8(biased_codebook, lo);
              hi = _mm256_shuffle_epi8(biased_codebook, hi);
            }
            s[v] = _mm256_dpbusd_avx_epi32(s[v], lo, lo_x);
            s[v] = _mm256_dpbusd_avx_epi32(s[v], hi, hi_x);
          }
        }
      } else {
        for (int g = 0; g < f.sub / 4; ++g) {
          const __m256i xg = x_group(u * f.sub + 4 * g);
          for (int v = 0; v < 8; ++v) s[v] = _mm256_dpbusd_avx_epi32(s[v], w_vec(g, v), xg);
        }
      }
      // The 32-blocks' one scale is 1 (qsub_panels.hpp): no multiply.
      for (int v = 0; v < 8; ++v)
        I[v] =
            f.subs() == 1 ? s[v] : _mm256_add_epi32(I[v], _mm256_mullo_epi32(s[v], i8x8(blk + L.sc + u * 64 + 8 * v)));
    }
    accumulate_block<W>(I, blk, bs, A.scales[b], acc);
  }
  for (int v = 0; v < 8; ++v) _mm256_storeu_ps(C + 8 * v, acc[v]);
}

template <WeightType W>
void panel(int64_t T, int64_t K, const ActivationRows& A, const std::byte* P, float* C, int64_t ldc) {
  // One token × the panel's 64 rows at a time.
  avx2_qsub::panel_in_k_blocks<W>(T, K, A, C, ldc, [&](const auto& rows, int64_t b0, int64_t b1, bool shared) {
    for (int64_t t = 0; t < T; ++t)
      if (shared)
        tile<W, true>(rows(t), P, b0, b1, true, true, C + t * ldc, int(t), int(T));
      else
        tile<W>(rows(t), P, b0, b1, b0 > 0, t == 0, C + t * ldc);
  });
}

}  // namespace

FFN_PANEL_KERNEL_SET(qsub, panel_gemm_avx2_vnni_1x64, panel);

}  // namespace ffn::kernels
