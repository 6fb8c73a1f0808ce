// AVX2 product with a qsub panel packed at load (layout, integers and arithmetic in
// qsub_panels.hpp), super-block after super-block, in tiles of 1×64 (one token × 8 ymm of 8
// rows) and 2×32 (two tokens × 4 ymm: each vector of weights unpacked once for both, which
// at 2–8 tokens is most of the work: the nibbles, high bits and codebook lookups below),
// and for some types 4×8 (four tokens × 1 ymm: four_token_strips).
// A group's 4 values of 8 rows are one vector: vpmaddubsw multiplies the unsigned values by
// the signed activation bytes into pairs of int16 (at most 2·63·127 < 2¹⁵: no saturation
// for any K-quant), and vpmaddwd against the sub-block's scales (each row's scale in both
// halves of its lane) adds the pairs into int32 lanes already scaled — so I accumulates
// sc_u·Σ q·x without a multiply of its own. Before vpmaddwd, a run of the sub-block's
// vectors is summed in int16, as many as the format's largest q keeps below 2¹⁵ (Q4_K's
// whole sub-block, 8 vpmaddubsw outputs; Q5_K 4; Q6_K 2), which takes a vpmaddwd and a
// vpaddd from most of them: with a few tokens this loop is bound by the core, not the
// memory (docs/performance.md, "AVX2: a sub-block's products summed in int16"). The offset
// term −offset·Σ_u sc_u·B_u and the mins Σ_u m_u·B_u take one vpmaddwd for two sub-blocks
// and a row vector (sub_block_sums, qsub_tile_avx2.hpp).
// The codebook types (IQ4_NL, IQ4_XS, MXFP4) map each nibble to its code with one vpshufb
// against the 16-byte codebook. A codebook small enough (MXFP4: |q| ≤ 12) is looked up
// biased, q + max|q| unsigned, and its bias joins the offset term (pairs at most
// 2·24·127 < 2¹⁵). IQ4's codes (−127 … 113) are signed, and their products q·x go to
// vpmaddubsw with the signs moved to one side, exactly q·x a product, pairs at most
// 2·127·127 = 32258 < 2¹⁵ (x ≥ −127: q8's codes never hold −128; q ≥ −127, so −q is a
// byte). In the tile of one token, |x| (made once a block) by sign(x)·q: a vpsignb a weight
// vector, the |x| shared by its 8 row vectors. With more tokens, as ggml does, |q| by
// sign(q)·x: a vpabsb a weight vector shared by the tokens, and a vpsignb a token (with
// four tokens of one row vector each, |x| would be loaded for every vector: 0.82–0.93×;
// docs/performance.md, "IQ4's signs"). Their two halves' pairs are not added in int16,
// since 4·127·127 passes 2¹⁵: each goes through vpmaddwd on its own. MXFP4's d is made from
// its e8m0 byte in integer registers. The 32-blocks (one sub-block a block, whose scale the
// panel stores as 1) skip the scales: vpmaddwd by ones.
// Compiled with the avx2 level's flags (ffn/isa_list.hpp); called only when the CPU has the level.
#include <immintrin.h>

#include <algorithm>

#include "kernels/avx2/avx2_kernels.hpp"
#include "kernels/avx2/qsub_tile_avx2.hpp"
#include "kernels/cpu_features.hpp"

namespace ffn::kernels {
namespace {

using namespace avx2_qsub;

// 8 rows' int8 values at p, each as an int16 in both halves of its 32-bit lane.
inline __m256i scales_in_pairs(const uint8_t* p) {
  const __m256i s = _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
  return _mm256_or_si256(_mm256_and_si256(s, _mm256_set1_epi32(0xFFFF)), _mm256_slli_epi32(s, 16));
}

// Whether the one-token tile's prefetch goes into L1, a share with each pair of code groups,
// rather than into L2 a sub-block's share at a time: on AMD's cores for the formats of
// 32-value blocks, whose one token then read the memory up to 1.33× faster on Zen 4 (Q5_0,
// Q5_1; MXFP4 and IQ4_NL within noise), where the super-block formats read 0.95–1.03 and
// keep L2. The AVX-512 kernel takes it for every format (its prefetch_into_l1). Intel's
// cores keep L2, not measured there (docs/performance.md, "Prefetch into L1 in pairs'
// shares").
template <WeightType W, int TT, bool Shared>
bool prefetch_pairs_into_l1() {
  if constexpr (Shared || TT != 1 || q_format(W).block != 32)
    return false;
  else
    return !cpu_is_intel();
}

// TT tokens × V row vectors from v0 (rows 8·v0 … 8·(v0 + V) − 1) over super-blocks [b0, b1):
// each vector of weights unpacked once for the TT tokens. Chains start from C when resume;
// with prefetch (a pass's first tile) the panel kQPanelPrefetchBytes ahead is pulled into L2,
// a sub-block's share of its lines at a time (or into L1, a pair's share at a time:
// prefetch_pairs_into_l1) — or, Shared, only share `part` of `parts` of it (the tiles of a
// super-block dividing it among them: avx2_qsub::panel_in_k_blocks).
template <WeightType W, int TT, int V, bool Shared = false>
void tile(const Q8Rows* A, const std::byte* P, int v0, int64_t b0, int64_t b1, bool resume, bool prefetch, float* C,
          int64_t ldc, int part = 0, int parts = 1) {
  // static: the lambdas below capture f by reference, and GCC then read some of its fields
  // (the high-bit mask, u·sub) from the stack at run time.
  static constexpr QFormat f = q_format(W);
  static constexpr QSubLayout L = qsub_layout(f);
  constexpr int64_t ahead = (kQPanelPrefetchBytes + L.bytes - 1) / L.bytes * L.bytes;
  const bool pairs_into_l1 = prefetch && prefetch_pairs_into_l1<W, TT, Shared>();
  __m256 acc[TT][V];
  for (int t = 0; t < TT; ++t)
    for (int v = 0; v < V; ++v) acc[t][v] = resume ? _mm256_loadu_ps(C + t * ldc + 8 * (v0 + v)) : _mm256_setzero_ps();
  const __m256i nibble = _mm256_set1_epi8(0x0F);
  // Codebooks whose biased codes q + max|q| keep vpmaddubsw's pairs below 2¹⁵ are looked up
  // biased (no vpsignb), the bias subtracted with the offset.
  constexpr bool biased = f.has_codebook() && 2 * (2 * f.max_abs_q()) * 127 < 32768;
  constexpr int bias = biased ? f.max_abs_q() : 0, offset = f.offset + bias;
  constexpr bool unit_scale = !f.stores_scales();  // every sc is 1, none stored (qsub_panels.hpp)
  __m256i codebook = _mm256_setzero_si256();
  if constexpr (f.has_codebook())
    codebook = _mm256_add_epi8(
        _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(f.codebook_values()))),
        _mm256_set1_epi8(char(bias)));
  // vpmaddubsw's outputs, int16 pairs of at most 2·q·127 each (q ≤ max|q| + bias), are summed
  // in int16 before one vpmaddwd takes them, as many as stay below 2¹⁵: Q4_K 8, Q5_K 4,
  // Q6_K 2, IQ4 1 (not even a vector's two halves). Each nibble vector gives two (its groups
  // g and g + pairs); a run of `run` vectors is one sum.
  constexpr int outputs_in_int16 = 32767 / (2 * (f.max_abs_q() + bias) * 127);
  constexpr int pairs = f.sub / 8;  // nibble vectors of a sub-block and row vector
  constexpr int longest_run = [] {
    int n = std::max(1, outputs_in_int16 / 2);
    while (pairs % n != 0) --n;
    return n;
  }();
  // Two loop orders over a sub-block's nibble vectors, each the faster for some formats
  // (docs/performance.md, "AVX2: a sub-block's products summed in int16"). With high bits and
  // two tokens, row vector by row vector: each token's sum is one register and the high-bit
  // vector is loaded once. Otherwise group by group, the activations' broadcasts shared by the
  // row vectors; every token's and row vector's sum is then a register, which paid only
  // where a run is four vectors or more (Q4_K, Q4_1, the ternary types) and in the tiles of
  // two tokens: in the one-token tile, T = 3's last token, it cost Q4_K's block 0.9×.
  constexpr bool row_vector_outer = f.high_bits != 0 && TT >= 2;
  constexpr int run = row_vector_outer || (longest_run >= 4 && TT >= 2) ? longest_run : 1;
  for (int64_t b = b0; b < b1; ++b) {
    const auto* blk = reinterpret_cast<const uint8_t*>(P + b * L.bytes);
    const int8_t* x[TT];
    const int16_t* bs[TT];
    for (int t = 0; t < TT; ++t) {
      x[t] = A[t].codes + b * f.block;
      bs[t] = A[t].sums + b * (f.block / 16);
    }
    auto four_bytes = [](const int8_t* p) {  // bytes p[0 … 3] in every 32-bit lane
      int32_t bytes;
      __builtin_memcpy(&bytes, p, 4);
      return _mm256_set1_epi32(bytes);
    };
    auto x_group = [&](int t, int i) { return four_bytes(x[t] + i); };
    // IQ4's signed codes take the signs of x in the tile of one token, whose |x| (made here
    // for the block) serve its 8 row vectors; with more tokens they give theirs to x (the
    // header says why).
    constexpr bool signed_codes = f.has_codebook() && !biased;
    constexpr bool signs_to_codes = signed_codes && TT == 1, signs_to_x = signed_codes && !signs_to_codes;
    alignas(32) int8_t x_abs[signs_to_codes ? f.block : 32];
    if constexpr (signs_to_codes)
      for (int i = 0; i < f.block; i += 32)
        _mm256_store_si256(reinterpret_cast<__m256i*>(x_abs + i),
                           _mm256_abs_epi8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[0] + i))));
    __m256i I[TT][V];
    for (int t = 0; t < TT; ++t)
      for (int v = 0; v < V; ++v) I[t][v] = _mm256_setzero_si256();
    // Shared: this tile's shares of the super-block ahead, one a sub-block (unused otherwise).
    LineShares ahead_shares(L.bytes, parts * f.subs(), part * f.subs());
    for (int u = 0; u < f.subs(); ++u) {
      // The super-block `ahead` bytes on, a sub-block's share of its lines at a time.
      if constexpr (Shared)
        ahead_shares.prefetch_next(reinterpret_cast<const std::byte*>(blk) + ahead);
      else if (prefetch && !pairs_into_l1)
        prefetch_share_to_l2(reinterpret_cast<const std::byte*>(blk) + ahead, L.bytes, u, f.subs());
      const uint8_t* q = blk + L.q_of(f, u);
      auto w_vec = [&](int g, int v) {  // pair g (nibble types) or group g
        return _mm256_load_si256(
            reinterpret_cast<const __m256i*>(q + (f.crumbs ? pair_offset(f, g) : 256 * g) + 32 * (v0 + v)));
      };
      auto scale_of = [&](int v) {
        return unit_scale ? _mm256_set1_epi16(1) : scales_in_pairs(blk + L.sc + u * 64 + 8 * (v0 + v));
      };
      if constexpr (f.nibbles) {
        auto high_vec = [&](int v) {
          return _mm256_load_si256(reinterpret_cast<const __m256i*>(blk + L.h_of(u) + 32 * (v0 + v)));
        };
        // Nibble vector g of row vector v (h: its high bits) as the codes of groups g and
        // g + pairs (lo, hi): vpmaddubsw's unsigned operands, the values or their codes; or
        // IQ4's signed codes, which take the signs of x.
        auto unpack = [&](int g, int v, __m256i h, __m256i& lo, __m256i& hi) {
          nibble_codes<W>(w_vec(g, v), h, g, codebook, lo, hi);
        };
        if constexpr (row_vector_outer) {
          static_assert(!signed_codes, "no format has both a signed codebook and high bits");
          // Unrolled, so that I stays in registers.
#pragma GCC unroll 8
          for (int v = 0; v < V; ++v) {
            // The broadcasts made again for each row vector: held from one to the next, GCC
            // kept them on the stack.
            asm volatile("" ::: "memory");
            const __m256i scale = scale_of(v), h = high_vec(v);
            for (int g0 = 0; g0 < pairs; g0 += run) {
              // Set by the run's first vector; zeroed first only so that GCC sees no read of an
              // unset value (adding every vector to the zeros instead cost Q4_K 0.8×).
              __m256i sum[TT];
              for (int t = 0; t < TT; ++t) sum[t] = _mm256_setzero_si256();
              for (int g = g0; g < g0 + run; ++g) {
                __m256i lo, hi;
                unpack(g, v, h, lo, hi);
                for (int t = 0; t < TT; ++t) {
                  const __m256i x_lo = x_group(t, u * f.sub + 4 * g), x_hi = x_group(t, u * f.sub + 4 * (g + pairs));
                  const __m256i lo_p = _mm256_maddubs_epi16(lo, x_lo), hi_p = _mm256_maddubs_epi16(hi, x_hi);
                  if constexpr (outputs_in_int16 < 2)
                    I[t][v] = _mm256_add_epi32(
                        I[t][v], _mm256_add_epi32(_mm256_madd_epi16(lo_p, scale), _mm256_madd_epi16(hi_p, scale)));
                  else
                    sum[t] =
                        g == g0 ? _mm256_add_epi16(lo_p, hi_p) : _mm256_add_epi16(sum[t], _mm256_add_epi16(lo_p, hi_p));
                }
              }
              if constexpr (outputs_in_int16 >= 2)
                for (int t = 0; t < TT; ++t) I[t][v] = _mm256_add_epi32(I[t][v], _mm256_madd_epi16(sum[t], scale));
            }
          }
        } else {
          __m256i scale[V];
          for (int v = 0; v < V; ++v) scale[v] = scale_of(v);
          for (int g0 = 0; g0 < pairs; g0 += run) {
            __m256i sum[TT][V];  // set by the run's first vector; zeroed as above
            for (int t = 0; t < TT; ++t)
              for (int v = 0; v < V; ++v) sum[t][v] = _mm256_setzero_si256();
            for (int g = g0; g < g0 + run; ++g) {
              if (pairs_into_l1)
                prefetch_share<true>(reinterpret_cast<const std::byte*>(blk) + ahead, L.bytes, u * pairs + g,
                                     f.subs() * pairs);
              const int i_lo = u * f.sub + 4 * g, i_hi = u * f.sub + 4 * (g + pairs);
              __m256i x_lo[TT], x_hi[TT];
              for (int t = 0; t < TT; ++t) {
                x_lo[t] = x_group(t, i_lo);
                x_hi[t] = x_group(t, i_hi);
              }
              for (int v = 0; v < V; ++v) {
                __m256i lo, hi;
                unpack(g, v, f.high_bits != 0 ? high_vec(v) : nibble, lo, hi);
                // Signs to x: |q| for the tokens' sign(q)·x.
                const __m256i lo_m = signs_to_x ? _mm256_abs_epi8(lo) : lo,
                              hi_m = signs_to_x ? _mm256_abs_epi8(hi) : hi;
                for (int t = 0; t < TT; ++t) {
                  __m256i lo_p, hi_p;  // q·x in vpmaddubsw's int16 pairs
                  if constexpr (signs_to_codes) {
                    lo_p = _mm256_maddubs_epi16(four_bytes(x_abs + i_lo), _mm256_sign_epi8(lo, x_lo[t]));
                    hi_p = _mm256_maddubs_epi16(four_bytes(x_abs + i_hi), _mm256_sign_epi8(hi, x_hi[t]));
                  } else if constexpr (signs_to_x) {
                    lo_p = _mm256_maddubs_epi16(lo_m, _mm256_sign_epi8(x_lo[t], lo));
                    hi_p = _mm256_maddubs_epi16(hi_m, _mm256_sign_epi8(x_hi[t], hi));
                  } else {
                    lo_p = _mm256_maddubs_epi16(lo, x_lo[t]);
                    hi_p = _mm256_maddubs_epi16(hi, x_hi[t]);
                  }
                  if constexpr (outputs_in_int16 < 2)
                    I[t][v] = _mm256_add_epi32(I[t][v], _mm256_add_epi32(_mm256_madd_epi16(lo_p, scale[v]),
                                                                         _mm256_madd_epi16(hi_p, scale[v])));
                  else if constexpr (run == 1)
                    I[t][v] = _mm256_add_epi32(I[t][v], _mm256_madd_epi16(_mm256_add_epi16(lo_p, hi_p), scale[v]));
                  else
                    sum[t][v] = g == g0 ? _mm256_add_epi16(lo_p, hi_p)
                                        : _mm256_add_epi16(sum[t][v], _mm256_add_epi16(lo_p, hi_p));
                }
              }
            }
            if constexpr (outputs_in_int16 >= 2 && run > 1)
              for (int v = 0; v < V; ++v)
                for (int t = 0; t < TT; ++t)
                  I[t][v] = _mm256_add_epi32(I[t][v], _mm256_madd_epi16(sum[t][v], scale[v]));
          }
        }
      } else {
        __m256i scale[V];
        for (int v = 0; v < V; ++v) scale[v] = scale_of(v);
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
        const __m256i Z = _mm256_set1_epi32(offset * qsub_block_sum(bs[t], f));  // I −= offset·Σ_u B_u
        for (int v = 0; v < V; ++v) I[t][v] = _mm256_sub_epi32(I[t][v], Z);
      } else if constexpr (offset != 0) {
        // I −= offset·Σ_u sc_u·B_u.
        __m256i Z[V];
        sub_block_sums<W, true, V>(blk + L.sc, bs[t], v0, Z);
        for (int v = 0; v < V; ++v)
          I[t][v] = _mm256_sub_epi32(I[t][v], _mm256_mullo_epi32(Z[v], _mm256_set1_epi32(offset)));
      }
      accumulate_block<W, V>(I[t], blk, bs[t], A[t].scales[b], acc[t], v0);
    }
  }
  for (int t = 0; t < TT; ++t)
    for (int v = 0; v < V; ++v) _mm256_storeu_ps(C + t * ldc + 8 * (v0 + v), acc[t][v]);
}

// Whether type W runs four tokens at a time as 4 × 8-row tiles from four tokens (two tokens
// block by block): each vector of weights unpacked once for four, where four tokens × 4 row
// vectors of sums would not fit the 16 ymm registers. It paid where the unpacking is dearest
// — the high bits of Q6_K, Q5_K and Q5_0, IQ4's codebook and signs (1.04–1.15× from memory
// at 4–16 tokens), Q2_K's crumbs with their scales and mins (1.04–1.08× from memory at 4–8,
// 1.07–1.09× in cache at 4–64) — and cost the formats whose runs of int16 sums are long
// (Q4_K, Q4_1, the ternary types: 0.71–0.77× in L2; the ternary types' crumbs 0.86× in
// cache), MXFP4 (0.89×) and Q5_1 (0.91–0.94×); Q3_K read 0.95× at six tokens
// (docs/performance.md, "AVX2: a sub-block's products summed in int16" and "Q2_K's four-token
// strips with AVX2").
template <WeightType W>
constexpr bool four_token_strips() {
  using W_ = WeightType;
  return W == W_::q6_K || W == W_::q5_K || W == W_::q5_0 || W == W_::iq4_xs || W == W_::iq4_nl || W == W_::q2_K;
}

// C[t][0..63] for every token t < T (the qsub contract), K block by K block, in the tiles
// of avx2_qsub::panel_in_tiles: the 2 × 32 tiles unpack the weights once for both tokens (8
// int32 and 8 f32 accumulators, as one token's 1×64 has).
template <WeightType W>
void panel(int64_t T, int64_t K, const ActivationRows& A, const std::byte* P, float* C, int64_t ldc) {
  avx2_qsub::panel_in_tiles<W, four_token_strips<W>()>(
      T, K, A, P, C, ldc, []<int TT, int V, bool Shared>(auto... args) { tile<W, TT, V, Shared>(args...); });
}

}  // namespace

FFN_PANEL_KERNEL_SET(qsub, panel_gemm_avx2_1x64_2x32, panel);

}  // namespace ffn::kernels
