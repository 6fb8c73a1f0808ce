// AVX-VNNI product with a qsub panel packed at load (layout, integers and arithmetic in
// qsub_panels.hpp), super-block after super-block, in the AVX2 kernel's tiles: 1×64 (one
// token × 8 ymm of 8 rows), 2×32 (two tokens × 4 ymm) and for some types 4×8 (four tokens ×
// 1 ymm), each vector of weights unpacked once for the tile's tokens — for the CPUs that
// have VEX-coded vpdpbusd without AVX-512 (Intel's client cores from Alder Lake on; Zen 5
// beside its AVX-512). Each group of 4 values of 8 rows is one vector, dotted by one
// vpdpbusd with the token's 4 activation bytes broadcast into the sub-block's sum, which
// starts from −offset·B_u; the sum times the sub-block's 8 scales (vpmulld) goes into I.
// Against the AVX2 kernel's vpmaddubsw + vpmaddwd by the scales + add, that is one
// instruction a vector and token and one vpmulld a sub-block, row vector and token, and no
// int16 pair to bound. M = Σ_u m_u·B_u takes one vpmaddwd for two sub-blocks and a row
// vector (accumulate_block, shared with the AVX2 kernel).
// The codebook types (IQ4_NL, IQ4_XS, MXFP4): vpdpbusd wants the weights unsigned, so one
// vpshufb maps each nibble to its signed code plus 128 (the codebook with its sign bit
// flipped), and the sums start from −128·B_u, which takes the 128 back out exactly
// (vpdpbusd adds in int32). MXFP4's d is made from its e8m0 byte in integer registers.
// With the first token (prefetch) the panel kQPanelPrefetchBytes ahead is pulled into L2,
// a sub-block's share of its lines at a time, as the AVX2 kernel does — or, Shared, each
// tile its share of it (avx2_qsub::panel_in_k_blocks).
// Compiled with the avx2_vnni level's flags (ffn/isa_list.hpp); called only when the CPU has the level.
#include <immintrin.h>

#include <algorithm>

#include "kernels/avx2/qsub_tile_avx2.hpp"
#include "kernels/avx2_vnni/avx2_vnni_kernels.hpp"

namespace ffn::kernels {
namespace {

using namespace avx2_qsub;

// TT tokens × V row vectors from v0 (rows 8·v0 … 8·(v0 + V) − 1) over super-blocks [b0, b1):
// each vector of weights unpacked once for the TT tokens. Chains start from C when resume;
// with prefetch (a pass's first tile) the panel kQPanelPrefetchBytes ahead is pulled into L2,
// a sub-block's share of its lines at a time — or, Shared, only share `part` of `parts` of
// it (the tiles of a super-block dividing it among them: avx2_qsub::panel_in_k_blocks).
template <WeightType W, int TT, int V, bool Shared = false>
void tile(const Q8Rows* A, const std::byte* P, int v0, int64_t b0, int64_t b1, bool resume, bool prefetch, float* C,
          int64_t ldc, int part = 0, int parts = 1) {
  // Not static, as the AVX2 kernel's are: here that measured level, and MXFP4's one token
  // 0.96–0.99× from memory.
  constexpr QFormat f = q_format(W);
  constexpr QSubLayout L = qsub_layout(f);
  constexpr int64_t ahead = (kQPanelPrefetchBytes + L.bytes - 1) / L.bytes * L.bytes;
  __m256 acc[TT][V];
  for (int t = 0; t < TT; ++t)
    for (int v = 0; v < V; ++v) acc[t][v] = resume ? _mm256_loadu_ps(C + t * ldc + 8 * (v0 + v)) : _mm256_setzero_ps();
  const __m256i nibble = _mm256_set1_epi8(0x0F);
  __m256i biased_codebook = _mm256_setzero_si256();
  if constexpr (f.has_codebook())
    biased_codebook = _mm256_xor_si256(
        _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(f.codebook_values()))),
        _mm256_set1_epi8(char(0x80)));
  constexpr int bias = f.offset + (f.has_codebook() ? 128 : 0);  // subtracted from every q: B_u's factor
  constexpr int pairs = f.sub / 8;                               // nibble vectors of a sub-block and row vector
  // Two loop orders over a sub-block, each the faster for some formats (docs/performance.md,
  // "AVX-VNNI: the AVX2 kernel's tiles"). Group by group, the activations' broadcasts
  // shared by the row vectors, a sum for every token and row vector: one token, and the
  // pairs of tokens of the formats without high bits. Row vector by row vector, a sum for
  // every token and the high-bit vector loaded once: the pairs of the high-bit formats and
  // MXFP4, and the four-token tiles (one row vector: the orders differ only in their code).
  constexpr bool row_vector_outer = TT >= 2 && (f.high_bits != 0 || f.e8m0 || V == 1);
  for (int64_t b = b0; b < b1; ++b) {
    const auto* blk = reinterpret_cast<const uint8_t*>(P + b * L.bytes);
    const int8_t* x[TT];
    const int16_t* bs[TT];
    for (int t = 0; t < TT; ++t) {
      x[t] = A[t].codes + b * f.block;
      bs[t] = A[t].sums + b * (f.block / 16);
    }
    auto x_group = [&](int t, int i) {  // activation bytes i … i+3 of token t's super-block
      int32_t bytes;
      __builtin_memcpy(&bytes, x[t] + i, 4);
      return _mm256_set1_epi32(bytes);
    };
    __m256i I[TT][V];
    for (int t = 0; t < TT; ++t)
      for (int v = 0; v < V; ++v) I[t][v] = _mm256_setzero_si256();
    // Shared: this tile's shares of the super-block ahead, one a sub-block (unused otherwise).
    LineShares ahead_shares(L.bytes, parts * f.subs(), part * f.subs());
    for (int u = 0; u < f.subs(); ++u) {
      if constexpr (Shared)
        ahead_shares.prefetch_next(reinterpret_cast<const std::byte*>(blk) + ahead);
      else if (prefetch)
        prefetch_share_to_l2(reinterpret_cast<const std::byte*>(blk) + ahead, L.bytes, u, f.subs());
      __m256i init[TT];  // each sum starts from −bias·B_u
      for (int t = 0; t < TT; ++t) init[t] = _mm256_set1_epi32(-bias * qsub_sum(bs[t], f.sub, u));
      const uint8_t* q = blk + L.q_of(f, u);
      auto w_vec = [&](int g, int v) {  // pair g (nibble types) or group g
        return _mm256_load_si256(
            reinterpret_cast<const __m256i*>(q + (f.crumbs ? pair_offset(f, g) : 256 * g) + 32 * (v0 + v)));
      };
      // A sub-block's sum of row vector v into I: times its 8 scales, or as it is where every
      // scale is 1 (qsub_panels.hpp) — the 32-blocks' one sum is I.
      auto add_scaled = [&](int t, int v, __m256i s) {
        if constexpr (f.subs() == 1)
          I[t][v] = s;
        else if constexpr (!f.stores_scales())
          I[t][v] = _mm256_add_epi32(I[t][v], s);
        else
          I[t][v] = _mm256_add_epi32(I[t][v], _mm256_mullo_epi32(s, i8x8(blk + L.sc + u * 64 + 8 * (v0 + v))));
      };
      auto high_vec = [&](int v) {
        return _mm256_load_si256(reinterpret_cast<const __m256i*>(blk + L.h_of(u) + 32 * (v0 + v)));
      };
      if constexpr (row_vector_outer) {
        for (int v = 0; v < V; ++v) {
          __m256i s[TT];
          for (int t = 0; t < TT; ++t) s[t] = init[t];
          if constexpr (f.nibbles) {
            const __m256i h = f.high_bits != 0 ? high_vec(v) : nibble;
            for (int g = 0; g < pairs; ++g) {
              __m256i lo, hi;  // vpdpbusd's unsigned operands: the values, or codes plus 128
              nibble_codes<W>(w_vec(g, v), h, g, biased_codebook, lo, hi);
              for (int t = 0; t < TT; ++t) {
                s[t] = _mm256_dpbusd_avx_epi32(s[t], lo, x_group(t, u * f.sub + 4 * g));
                s[t] = _mm256_dpbusd_avx_epi32(s[t], hi, x_group(t, u * f.sub + 4 * (g + pairs)));
              }
            }
          } else {
            for (int g = 0; g < f.sub / 4; ++g) {
              const __m256i w = w_vec(g, v);
              for (int t = 0; t < TT; ++t) s[t] = _mm256_dpbusd_avx_epi32(s[t], w, x_group(t, u * f.sub + 4 * g));
            }
          }
          for (int t = 0; t < TT; ++t) add_scaled(t, v, s[t]);
        }
      } else {
        __m256i s[TT][V];
        for (int t = 0; t < TT; ++t)
          for (int v = 0; v < V; ++v) s[t][v] = init[t];
        if constexpr (f.nibbles) {
          for (int g = 0; g < pairs; ++g) {
            __m256i lo_x[TT], hi_x[TT];
            for (int t = 0; t < TT; ++t) {
              lo_x[t] = x_group(t, u * f.sub + 4 * g);
              hi_x[t] = x_group(t, u * f.sub + 4 * (g + pairs));
            }
            for (int v = 0; v < V; ++v) {
              __m256i lo, hi;
              nibble_codes<W>(w_vec(g, v), f.high_bits != 0 ? high_vec(v) : nibble, g, biased_codebook, lo, hi);
              for (int t = 0; t < TT; ++t) {
                s[t][v] = _mm256_dpbusd_avx_epi32(s[t][v], lo, lo_x[t]);
                s[t][v] = _mm256_dpbusd_avx_epi32(s[t][v], hi, hi_x[t]);
              }
            }
          }
        } else {
          for (int g = 0; g < f.sub / 4; ++g) {
            __m256i xg[TT];
            for (int t = 0; t < TT; ++t) xg[t] = x_group(t, u * f.sub + 4 * g);
            for (int v = 0; v < V; ++v) {
              const __m256i w = w_vec(g, v);
              for (int t = 0; t < TT; ++t) s[t][v] = _mm256_dpbusd_avx_epi32(s[t][v], w, xg[t]);
            }
          }
        }
        for (int t = 0; t < TT; ++t)
          for (int v = 0; v < V; ++v) add_scaled(t, v, s[t][v]);
      }
    }
    for (int t = 0; t < TT; ++t) accumulate_block<W, V>(I[t], blk, bs[t], A[t].scales[b], acc[t], v0);
  }
  for (int t = 0; t < TT; ++t)
    for (int v = 0; v < V; ++v) _mm256_storeu_ps(C + t * ldc + 8 * (v0 + v), acc[t][v]);
}

// Whether type W runs four tokens at a time as 4 × 8-row tiles from four tokens (two tokens
// block by block): each vector of weights unpacked once for four. It paid where the unpacking
// is dearest — the high bits of Q6_K, Q5_K, Q5_0 and Q5_1, IQ4's codebook — and cost the
// others 0.79–0.94× at 4–8 tokens, whose pairs share each broadcast of the activations among
// four row vectors (docs/performance.md, "AVX-VNNI: the AVX2 kernel's tiles").
template <WeightType W>
constexpr bool four_token_strips() {
  using W_ = WeightType;
  return W == W_::q6_K || W == W_::q5_K || W == W_::q5_0 || W == W_::q5_1 || W == W_::iq4_xs || W == W_::iq4_nl;
}

template <WeightType W>
void panel(int64_t T, int64_t K, const ActivationRows& A, const std::byte* P, float* C, int64_t ldc) {
  avx2_qsub::panel_in_tiles<W, four_token_strips<W>()>(
      T, K, A, P, C, ldc, []<int TT, int V, bool Shared>(auto... args) { tile<W, TT, V, Shared>(args...); });
}

}  // namespace

FFN_PANEL_KERNEL_SET(qsub, panel_gemm_avx2_vnni_1x64_2x32, panel);

}  // namespace ffn::kernels
