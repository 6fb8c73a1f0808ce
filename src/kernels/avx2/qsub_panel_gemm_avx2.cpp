// AVX2 product with a qsub panel packed at load (layout, integers and arithmetic in
// qsub_panels.hpp), super-block after super-block, in tiles of 1×64 (one token × 8 ymm of 8
// rows) and 2×32 (two tokens × 4 ymm: each vector of weights unpacked once for both, which
// at 2–8 tokens is most of the work: the nibbles, high bits and codebook lookups below).
// A group's 4 values of 8 rows are one vector: vpmaddubsw multiplies the unsigned values by
// the signed activation bytes into pairs of int16 (at most 2·63·127 < 2¹⁵: no saturation
// for any K-quant), and vpmaddwd against the sub-block's scales (each row's scale in both
// halves of its lane) adds the pairs into int32 lanes already scaled — so I accumulates
// sc_u·Σ q·x without a multiply of its own. The offset term −offset·Σ_u sc_u·B_u and the
// mins Σ_u m_u·B_u take one vpmulld a sub-block and row vector.
// The codebook types (IQ4_NL, IQ4_XS, MXFP4) map each nibble to its code with one vpshufb
// against the 16-byte codebook. A codebook small enough (MXFP4: |q| ≤ 12) is looked up
// biased, q + max|q| unsigned, and its bias joins the offset term (pairs at most
// 2·24·127 < 2¹⁵). IQ4's codes (−127 … 113) are multiplied as ggml does: vpmaddubsw of |q|
// (unsigned) by sign(q)·x (vpsignb; signed), exactly q·x a product, pairs at most
// 2·127·127 = 32258 < 2¹⁵ (x ≥ −127: q8's codes never hold −128); their two halves' pairs
// are not added in int16, since 4·127·127 passes 2¹⁵: each goes through vpmaddwd on its
// own. MXFP4's d is made from its e8m0 byte in integer registers. The 32-blocks (one
// sub-block a block, whose scale the panel stores as 1) skip the scales: vpmaddwd by ones.
// Compiled with the avx2 level's flags (ffn/isa_list.hpp); called only when the CPU has the level.
#include <immintrin.h>

#include <algorithm>

#include "kernels/avx2/avx2_kernels.hpp"
#include "kernels/avx2/qsub_tile_avx2.hpp"

namespace ffn::kernels {
namespace {

using namespace avx2_qsub;

// 8 rows' int8 values at p, each as an int16 in both halves of its 32-bit lane.
inline __m256i scales_in_pairs(const uint8_t* p) {
  const __m256i s = _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
  return _mm256_or_si256(_mm256_and_si256(s, _mm256_set1_epi32(0xFFFF)), _mm256_slli_epi32(s, 16));
}

// TT tokens × V row vectors from v0 (rows 8·v0 … 8·(v0 + V) − 1) over super-blocks [b0, b1):
// each vector of weights unpacked once for the TT tokens. Chains start from C when resume;
// with prefetch (a pass's first tile) the panel kQPanelPrefetchBytes ahead is pulled into L2,
// a sub-block's share of its lines at a time — or, Shared, only share `part` of `parts` of
// it (the tiles of a super-block dividing it among them: avx2_qsub::panel_in_k_blocks).
template <WeightType W, int TT, int V, bool Shared = false>
void tile(const Q8Rows* A, const std::byte* P, int v0, int64_t b0, int64_t b1, bool resume, bool prefetch, float* C,
          int64_t ldc, int part = 0, int parts = 1) {
  constexpr QFormat f = q_format(W);
  constexpr QSubLayout L = qsub_layout(f);
  constexpr int64_t ahead = (kQPanelPrefetchBytes + L.bytes - 1) / L.bytes * L.bytes;
  __m256 acc[TT][V];
  for (int t = 0; t < TT; ++t)
    for (int v = 0; v < V; ++v) acc[t][v] = resume ? _mm256_loadu_ps(C + t * ldc + 8 * (v0 + v)) : _mm256_setzero_ps();
  const __m256i nibble = _mm256_set1_epi8(0x0F);
  // Codebooks whose biased codes q + max|q| keep vpmaddubsw's pairs below 2¹⁵ are looked up
  // biased (no vpsignb), the bias subtracted with the offset.
  constexpr bool biased = f.has_codebook() && 2 * (2 * f.max_abs_q()) * 127 < 32768;
  constexpr int bias = biased ? f.max_abs_q() : 0, offset = f.offset + bias;
  constexpr bool unit_scale = f.subs() == 1;  // the panel's sc is 1 (qsub_panels.hpp)
  __m256i codebook = _mm256_setzero_si256();
  if constexpr (f.has_codebook())
    codebook = _mm256_add_epi8(
        _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(f.codebook_values()))),
        _mm256_set1_epi8(char(bias)));
  // The two halves' int16 pairs may be added before vpmaddwd (at most 4·(max|q| + bias)·127
  // each).
  constexpr bool add_halves = 4 * (f.max_abs_q() + bias) * 127 < 32768;
  for (int64_t b = b0; b < b1; ++b) {
    const auto* blk = reinterpret_cast<const uint8_t*>(P + b * L.bytes);
    const int8_t* x[TT];
    const int16_t* bs[TT];
    for (int t = 0; t < TT; ++t) {
      x[t] = A[t].codes + b * f.block;
      bs[t] = A[t].sums + b * (f.block / 16);
    }
    auto x_group = [&](int t, int i) {
      int32_t bytes;
      __builtin_memcpy(&bytes, x[t] + i, 4);
      return _mm256_set1_epi32(bytes);
    };
    __m256i I[TT][V];
    for (int t = 0; t < TT; ++t)
      for (int v = 0; v < V; ++v) I[t][v] = _mm256_setzero_si256();
    for (int u = 0; u < f.subs(); ++u) {
      // The super-block `ahead` bytes on, a sub-block's share of its lines at a time.
      if constexpr (Shared)
        prefetch_share_to_l2(reinterpret_cast<const std::byte*>(blk) + ahead, L.bytes, part * f.subs() + u,
                             parts * f.subs());
      else if (prefetch)
        prefetch_share_to_l2(reinterpret_cast<const std::byte*>(blk) + ahead, L.bytes, u, f.subs());
      const uint8_t* q = blk + L.q_of(f, u);
      auto w_vec = [&](int g, int v) {
        return _mm256_load_si256(reinterpret_cast<const __m256i*>(q + 256 * g + 32 * (v0 + v)));
      };
      __m256i scale[V];
      for (int v = 0; v < V; ++v)
        scale[v] = unit_scale ? _mm256_set1_epi16(1) : scales_in_pairs(blk + L.sc + u * 64 + 8 * (v0 + v));
      // I[t][v] += the pairs of lo and hi (int16, each a pair of products) by the scales.
      auto add_pairs = [&](int t, int v, __m256i lo, __m256i hi) {
        if constexpr (add_halves)
          I[t][v] = _mm256_add_epi32(I[t][v], _mm256_madd_epi16(_mm256_add_epi16(lo, hi), scale[v]));
        else
          I[t][v] = _mm256_add_epi32(
              I[t][v], _mm256_add_epi32(_mm256_madd_epi16(lo, scale[v]), _mm256_madd_epi16(hi, scale[v])));
      };
      if constexpr (f.nibbles) {
        constexpr int pairs = f.sub / 8;
        auto high_vec = [&](int v) {
          return _mm256_load_si256(reinterpret_cast<const __m256i*>(blk + L.h_of(u) + 32 * (v0 + v)));
        };
        // Group g's high bits moved to bits 4 … of each byte.
        auto high_of = [&](__m256i h, int g) {
          const int shift = 4 - f.high_bits * g;
          const __m256i moved = shift >= 0 ? _mm256_slli_epi16(h, shift) : _mm256_srli_epi16(h, -shift);
          return _mm256_and_si256(moved, _mm256_set1_epi8(char(((1 << f.high_bits) - 1) << 4)));
        };
        for (int g = 0; g < pairs; ++g) {
          __m256i x_lo[TT], x_hi[TT];
          for (int t = 0; t < TT; ++t) {
            x_lo[t] = x_group(t, u * f.sub + 4 * g);
            x_hi[t] = x_group(t, u * f.sub + 4 * (g + pairs));
          }
          for (int v = 0; v < V; ++v) {
            const __m256i raw = w_vec(g, v);
            __m256i lo_w = _mm256_and_si256(raw, nibble), hi_w = _mm256_and_si256(_mm256_srli_epi16(raw, 4), nibble);
            if constexpr (f.high_bits != 0) {
              const __m256i h = high_vec(v);
              lo_w = _mm256_or_si256(lo_w, high_of(h, g));
              hi_w = _mm256_or_si256(hi_w, high_of(h, g + pairs));
            }
            if constexpr (biased) {
              const __m256i lo_q = _mm256_shuffle_epi8(codebook, lo_w), hi_q = _mm256_shuffle_epi8(codebook, hi_w);
              for (int t = 0; t < TT; ++t)
                add_pairs(t, v, _mm256_maddubs_epi16(lo_q, x_lo[t]), _mm256_maddubs_epi16(hi_q, x_hi[t]));
            } else if constexpr (f.has_codebook()) {
              const __m256i lo_q = _mm256_shuffle_epi8(codebook, lo_w), hi_q = _mm256_shuffle_epi8(codebook, hi_w);
              const __m256i lo_abs = _mm256_abs_epi8(lo_q), hi_abs = _mm256_abs_epi8(hi_q);
              for (int t = 0; t < TT; ++t)
                add_pairs(t, v, _mm256_maddubs_epi16(lo_abs, _mm256_sign_epi8(x_lo[t], lo_q)),
                          _mm256_maddubs_epi16(hi_abs, _mm256_sign_epi8(x_hi[t], hi_q)));
            } else {
              for (int t = 0; t < TT; ++t)
                add_pairs(t, v, _mm256_maddubs_epi16(lo_w, x_lo[t]), _mm256_maddubs_epi16(hi_w, x_hi[t]));
            }
          }
        }
      } else {
        for (int g = 0; g < f.sub / 4; ++g) {
          __m256i xg[TT];
          for (int t = 0; t < TT; ++t) xg[t] = x_group(t, u * f.sub + 4 * g);
          for (int v = 0; v < V; ++v) {
            const __m256i w = w_vec(g, v);
            for (int t = 0; t < TT; ++t)
              I[t][v] = _mm256_add_epi32(I[t][v], _mm256_madd_epi16(_mm256_maddubs_epi16(w, xg[t]), scale[v]));
          }
        }
      }
    }
    for (int t = 0; t < TT; ++t) {
      if constexpr (offset != 0 && unit_scale) {
        const __m256i Z = _mm256_set1_epi32(offset * qsub_sum(bs[t], f.sub, 0));  // I −= offset·B_0
        for (int v = 0; v < V; ++v) I[t][v] = _mm256_sub_epi32(I[t][v], Z);
      } else if constexpr (offset != 0) {
        // I −= offset·Σ_u sc_u·B_u.
        __m256i Z[V];
        for (int v = 0; v < V; ++v) Z[v] = _mm256_setzero_si256();
        for (int u = 0; u < f.subs(); ++u) {
          const __m256i B = _mm256_set1_epi32(qsub_sum(bs[t], f.sub, u));
          for (int v = 0; v < V; ++v)
            Z[v] = _mm256_add_epi32(Z[v], _mm256_mullo_epi32(i8x8(blk + L.sc + u * 64 + 8 * (v0 + v)), B));
        }
        for (int v = 0; v < V; ++v)
          I[t][v] = _mm256_sub_epi32(I[t][v], _mm256_mullo_epi32(Z[v], _mm256_set1_epi32(offset)));
      }
      accumulate_block<W, V>(I[t], blk, bs[t], A[t].scales[b], acc[t], v0);
    }
  }
  for (int t = 0; t < TT; ++t)
    for (int v = 0; v < V; ++v) _mm256_storeu_ps(C + t * ldc + 8 * (v0 + v), acc[t][v]);
}

// C[t][0..63] for every token t < T (the qsub contract), K block by K block
// (avx2_qsub::panel_in_k_blocks): tokens two at a time as 2 × 32-row tiles
// (the weights unpacked once for both: 8 int32 and 8 f32 accumulators, as one token's 1×64
// has), a last odd token by the 1×64 tile. Every tile computes a (token, row) by the same
// integer sums and float chain, so the pairing changes no bit.
template <WeightType W>
void panel(int64_t T, int64_t K, const ActivationRows& A, const std::byte* P, float* C, int64_t ldc) {
  avx2_qsub::panel_in_k_blocks<W>(T, K, A, C, ldc, [&](const auto& rows, int64_t b0, int64_t b1, bool shared) {
    // Shared: a super-block's T tiles (a pair of tokens' two halves, an odd token's one), tile i
    // prefetching share i of T.
    int64_t t = 0;
    for (; t + 2 <= T; t += 2) {
      const Q8Rows two[2] = {rows(t), rows(t + 1)};
      for (int v0 : {0, 4})
        if (shared)
          tile<W, 2, 4, true>(two, P, v0, b0, b1, true, true, C + t * ldc, ldc, int(t) + v0 / 4, int(T));
        else
          tile<W, 2, 4>(two, P, v0, b0, b1, b0 > 0, t == 0 && v0 == 0, C + t * ldc, ldc);
    }
    if (t < T) {
      const Q8Rows one = rows(t);
      if (shared)
        tile<W, 1, 8, true>(&one, P, 0, b0, b1, true, true, C + t * ldc, ldc, int(t), int(T));
      else
        tile<W, 1, 8>(&one, P, 0, b0, b1, b0 > 0, t == 0, C + t * ldc, ldc);
    }
  });
}

}  // namespace

FFN_PANEL_KERNEL_SET(qsub, panel_gemm_avx2_1x64_2x32, panel);

}  // namespace ffn::kernels
