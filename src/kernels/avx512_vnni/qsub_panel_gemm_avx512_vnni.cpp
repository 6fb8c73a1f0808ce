// AVX-512 VNNI product with a qsub panel packed at load (layout, integers and arithmetic
// in qsub_panels.hpp), 2×64 tile: 2 tokens × 4 zmm of 16 rows. Each group of 4 values of 16
// rows is one vector, dotted by one vpdpbusd with the token's 4 activation bytes broadcast
// into the sub-block's sum, which starts from −offset·B_u; the sum times the sub-block's
// 16 scales (vpmulld) goes into I. M = Σ_u m_u·B_u takes one vpmulld a sub-block and row
// vector. Then per super-block two FMAs an element, as the scalar reference.
// The codebook types (IQ4_NL, IQ4_XS, MXFP4): vpdpbusd wants the weights unsigned, so one
// vpshufb maps each nibble to its signed code plus 128 (q + 128 in 1 … 255: the codebook with
// its sign bit flipped), and the sums start from −128·B_u, which takes the 128 back out
// exactly (no saturation: vpdpbusd adds in int32). MXFP4's d is made from its e8m0 byte in
// integer registers.
// Compiled with the avx512_vnni level's flags (ffn/isa_list.hpp); called only when the CPU has the level.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "kernels/avx512_vnni/avx512_vnni_kernels.hpp"
#include "kernels/cpu_features.hpp"
#include "kernels/every_call_inlined.hpp"
#include "kernels/qsub_panels.hpp"

namespace ffn::kernels {
namespace {

constexpr int64_t kKValues = 2048;  // values of K per K block (8 super-blocks, 64 blocks of 32)

// From how many tokens the block-by-block path runs strips of four tokens over half panels
// (32 rows; strips of 2 and 1 for the rest of the tokens): each vector's values, unpacked
// from their nibbles, high bits, codebook or ternary digits, are then made once for four
// tokens instead of two, and the strip's sums (4 tokens × 2 vectors) fit the registers that
// 4 tokens × 4 vectors would spill. Once a few tokens make the loop bound by the core, its
// vector instructions bind: vpdpbusd and the sub-block scales' vpmulld share two pipes, and
// with strips of two the unpacking fills the rest. Where a format has no entry, or a later
// one, it measured level or slower from memory: Q4_K at four and six tokens and Q2_K at four
// were slower (the half panels' reads), Q3_K and the 32-value formats level
// (docs/performance.md, "Four-token strips").
template <WeightType W>
constexpr int64_t four_token_strips_from() {
  using W_ = WeightType;
  if constexpr (W == W_::mxfp4 || W == W_::q6_K || W == W_::tq1_0 || W == W_::tq2_0) return 4;
  if constexpr (W == W_::q5_K || W == W_::iq4_xs || W == W_::q4_K || W == W_::q2_K) return 8;
  return INT64_MAX;
}

// From how many tokens the block-by-block path prefetches twice as far ahead. Its strips
// divide a super-block's prefetch among them, so the share issued last, by the last strip,
// is the one the next super-block's first strip reads first; from eight tokens, with the
// distance one super-block (8 KiB rounded up), that share came late. Taken where twice the
// distance measured faster at eight tokens in slow and fast memory alike; Q5_K, Q2_K and the
// 32-value formats measured level or slower with it, and six tokens gained only with fast
// memory (docs/performance.md, "Prefetch distance").
template <WeightType W>
constexpr int64_t prefetch_twice_as_far_from() {
  using W_ = WeightType;
  if constexpr (W == W_::q4_K || W == W_::q6_K || W == W_::iq4_xs || W == W_::tq1_0 || W == W_::tq2_0) return 8;
  return INT64_MAX;
}

// A panel vector loaded into a register of its own. GCC otherwise folds the load into each
// instruction that uses it (a memory operand), so the load waits until that instruction is
// dispatched; loaded on its own it is requested as soon as the loop reaches it. Taken by the
// types with high bits in their one- and two-token tiles (the K-block path, Ahead::whole and
// none) and, for Q5_0 and Q5_1, in every tile: from memory Q6_K's one token reads 1.14–1.16×
// faster so, Q5_0's and Q5_1's one to sixteen tokens 1.0–1.26×. Q6_K's and Q5_K's strips of
// three tokens and more read as fast or faster without it (Q6_K's three 0.82–0.85 of the
// previous kernel with it), and IQ4_XS, Q3_K and MXFP4 slower with it (docs/performance.md,
// "Q6_K and the 5-bit types: a pair's first code whole").
inline __m512i load_into_register(const __m512i* p) {
  __m512i v = _mm512_load_si512(p);
  asm("" : "+v"(v));
  return v;
}

// What a tile prefetches of the super-block kQPanelPrefetchBytes ahead of each it reads
// (rounded up to whole super-blocks): nothing; all of it into L2, a sub-block's share of its
// lines with each sub-block (whole); all of it into L1, a pair of code groups' share with
// each pair, f.subs() · f.sub / 8 shares a super-block (whole_into_l1: prefetch_into_l1); or
// into L2 share `part` of `parts` of it (the strips of the block-by-block path dividing it
// among them) — of that super-block, or, share_far, of the one twice as far ahead.
enum class Ahead { none, whole, whole_into_l1, share, share_far };

// Whether the first strip of one or two tokens prefetches into L1, a share with each pair of
// code groups (Ahead::whole_into_l1), rather than into L2 a sub-block's share at a time. At
// one token what a core keeps in flight binds the stream, and the q4_0 and q8_0 kernels,
// which prefetch into L1 in small shares, read the memory faster than these did. On AMD's
// cores one token of every format takes it (from memory 1.04–1.37× faster on Zen 4, Q2_K
// level), and two tokens of the 32-value formats (1.06–1.20×); two tokens of the
// super-block formats read 0.96–1.04 with it and keep L2. Small shares into L2 gained less,
// and L1 in a sub-block's shares, a burst of up to 18 lines, was slower. Intel's cores keep
// L2, where the qblock kernels' L1 prefetch was slower; not measured there for these
// (docs/performance.md, "Prefetch into L1 in pairs' shares").
template <WeightType W>
bool prefetch_into_l1(int64_t T) {
  return (T == 1 || q_format(W).block == 32) && !cpu_is_intel();
}

// MT tokens × NV vectors of 16 rows from row 16·V0 (NV = 4: the panel's 64 rows) over
// super-blocks [b0, b1); chains start from C when resume. A whole panel's chains stay in
// registers over the super-blocks; a half panel's (NV = 2: the four-token strips, which
// always resume) are loaded from C once each block's sums are made and stored back after
// it, as the strip's sums need the registers.
template <WeightType W, int MT, Ahead prefetch, int NV = 4, int V0 = 0>
void tile(int64_t K, const Q8Rows& A, const std::byte* P, int64_t b0, int64_t b1, bool resume, float* C, int64_t ldc,
          int part = 0, int parts = 1) {
  static_assert(NV == 4 || (NV == 2 && MT == 4));
  constexpr bool kChainsInC = NV < 4;  // resume is then true
  constexpr QFormat f = q_format(W);
  constexpr QSubLayout L = qsub_layout(f);
  constexpr int64_t ahead =
      (kQPanelPrefetchBytes + L.bytes - 1) / L.bytes * L.bytes * (prefetch == Ahead::share_far ? 2 : 1);
  const int64_t blocks = K / q_format(W).block;
  C += 16 * V0;
  __m512 acc[MT][NV];
  if constexpr (!kChainsInC)
    for (int t = 0; t < MT; ++t)
      for (int v = 0; v < NV; ++v) acc[t][v] = resume ? _mm512_loadu_ps(C + t * ldc + 16 * v) : _mm512_setzero_ps();
  const __m512i nibble = _mm512_set1_epi8(0x0F);
  __m512i biased_codebook = _mm512_setzero_si512();
  if constexpr (f.has_codebook())
    biased_codebook =
        _mm512_xor_si512(_mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(f.codebook_values()))),
                         _mm512_set1_epi8(char(0x80)));
  constexpr int bias = f.offset + (f.has_codebook() ? 128 : 0);  // subtracted from every q: B_u's factor
  constexpr bool own_registers = f.high_bits != 0 && (prefetch == Ahead::whole || prefetch == Ahead::whole_into_l1 ||
                                                      prefetch == Ahead::none || f.block == 32);
  auto panel_vector = [](const __m512i* p) { return own_registers ? load_into_register(p) : _mm512_load_si512(p); };
  // The d of 16 rows as f32: binary16 widened, or MXFP4's e8m0 byte e as 2^(e − 128), whose
  // bits are (e − 1) << 23 for e ≥ 2 and the subnormals 0x00200000 << e below.
  auto scale_d = [&](const std::byte* blk, int v) {
    if constexpr (f.e8m0) {
      const __m512i e = _mm512_cvtepu8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(blk) + v));
      const __m512i normal = _mm512_slli_epi32(_mm512_sub_epi32(e, _mm512_set1_epi32(1)), 23);
      const __m512i tiny = _mm512_sllv_epi32(_mm512_set1_epi32(0x00200000), e);
      return _mm512_castsi512_ps(
          _mm512_mask_blend_epi32(_mm512_cmpgt_epu32_mask(e, _mm512_set1_epi32(1)), tiny, normal));
    } else {
      return _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(blk) + v));
    }
  };
  for (int64_t b = b0; b < b1; ++b) {
    const std::byte* blk = P + b * L.bytes;
    const int8_t* x[MT];
    const int16_t* bs[MT];
    for (int t = 0; t < MT; ++t) {
      x[t] = A.codes + t * K + b * f.block;
      bs[t] = A.sums + t * (K / 16) + b * (f.block / 16);
    }
    auto x_group = [&](int t, int i) {  // activation bytes i … i+3 of the super-block
      int32_t bytes;
      __builtin_memcpy(&bytes, x[t] + i, 4);
      return _mm512_set1_epi32(bytes);
    };
    __m512i I[MT][NV];
    for (int t = 0; t < MT; ++t)
      for (int v = 0; v < NV; ++v) I[t][v] = _mm512_setzero_si512();
    // Shared: this tile's shares of the super-block ahead, one a sub-block (unused otherwise).
    LineShares ahead_shares(L.bytes, parts * f.subs(), part * f.subs());
    for (int u = 0; u < f.subs(); ++u) {
      // The super-block `ahead` bytes on, a sub-block's share of its lines at a time.
      if constexpr (prefetch == Ahead::whole)
        prefetch_share_to_l2(reinterpret_cast<const std::byte*>(blk) + ahead, L.bytes, u, f.subs());
      else if constexpr (prefetch == Ahead::share || prefetch == Ahead::share_far)
        ahead_shares.prefetch_next(reinterpret_cast<const std::byte*>(blk) + ahead);
      __m512i s[MT][NV];
      for (int t = 0; t < MT; ++t) {
        const __m512i init = _mm512_set1_epi32(-bias * qsub_sum(bs[t], f.sub, u));
        for (int v = 0; v < NV; ++v) s[t][v] = init;
      }
      const auto* q = reinterpret_cast<const __m512i*>(blk + L.q_of(f, u));
      if constexpr (f.nibbles) {
        constexpr int pairs = f.sub / 8;
        __m512i high[NV];
        if constexpr (f.high_bits != 0)
          for (int v = 0; v < NV; ++v)
            high[v] = panel_vector(reinterpret_cast<const __m512i*>(blk + L.h_of(u)) + V0 + v);
        for (int g = 0; g < pairs; ++g) {
          if constexpr (prefetch == Ahead::whole_into_l1)
            prefetch_share<true>(reinterpret_cast<const std::byte*>(blk) + ahead, L.bytes, u * pairs + g,
                                 f.subs() * pairs);
          __m512i lo_x[MT], hi_x[MT];
          for (int t = 0; t < MT; ++t) {
            lo_x[t] = x_group(t, u * f.sub + 4 * g);
            hi_x[t] = x_group(t, u * f.sub + 4 * (g + pairs));
          }
          for (int v = 0; v < NV; ++v) {
            // The pair's codes (qsub_panels.hpp): the two nibbles, or the first code whole and
            // its partner's low bits (the byte's bits above the code, shifted down), the rest
            // from h. The 16-bit shifts carry a byte's neighbour's bits in, outside the masks.
            const __m512i raw = panel_vector(q + (f.crumbs ? pair_offset(f, g) / 64 : 4 * g) + V0 + v);
            __m512i lo, hi;
            if constexpr (f.crumbs) {
              // Odd pairs sit 2 bits up (a shift by a constant: see avx2's nibble_codes).
              static_assert(pair_shift(f, 1) == 2);
              const __m512i pair = g % 2 ? _mm512_srli_epi16(raw, 2) : raw, crumb = _mm512_set1_epi8(0x03);
              lo = _mm512_and_si512(pair, crumb);
              hi = _mm512_and_si512(_mm512_srli_epi16(pair, 4), crumb);
            } else if constexpr (f.high_bits == 0) {
              lo = _mm512_and_si512(raw, nibble);
              hi = _mm512_and_si512(_mm512_srli_epi16(raw, 4), nibble);
            } else {
              const __m512i first = _mm512_set1_epi8(char(code_mask(f)));
              lo = _mm512_and_si512(raw, first);
              const int move = partner_h_move(f, g);
              const __m512i moved =
                  move >= 0 ? _mm512_slli_epi16(high[v], unsigned(move)) : _mm512_srli_epi16(high[v], unsigned(-move));
              hi = _mm512_or_si512(_mm512_srli_epi16(_mm512_andnot_si512(first, raw), code_bits(f)),
                                   _mm512_and_si512(moved, _mm512_set1_epi8(char(partner_h_mask(f)))));
            }
            if constexpr (f.has_codebook()) {
              lo = _mm512_shuffle_epi8(biased_codebook, lo);
              hi = _mm512_shuffle_epi8(biased_codebook, hi);
            }
            for (int t = 0; t < MT; ++t) {
              s[t][v] = _mm512_dpbusd_epi32(s[t][v], lo, lo_x[t]);
              s[t][v] = _mm512_dpbusd_epi32(s[t][v], hi, hi_x[t]);
            }
          }
        }
      } else {
        for (int g = 0; g < f.sub / 4; ++g) {
          __m512i xg[MT];
          for (int t = 0; t < MT; ++t) xg[t] = x_group(t, u * f.sub + 4 * g);
          for (int v = 0; v < NV; ++v) {
            const __m512i w = _mm512_load_si512(q + 4 * g + V0 + v);
            for (int t = 0; t < MT; ++t) s[t][v] = _mm512_dpbusd_epi32(s[t][v], w, xg[t]);
          }
        }
      }
      if constexpr (f.stores_scales()) {
        const auto* sc = reinterpret_cast<const __m128i*>(blk + L.sc + u * 64) + V0;
        for (int v = 0; v < NV; ++v) {
          const __m512i scale = _mm512_cvtepi8_epi32(_mm_load_si128(sc + v));
          for (int t = 0; t < MT; ++t) I[t][v] = _mm512_add_epi32(I[t][v], _mm512_mullo_epi32(s[t][v], scale));
        }
      } else {  // every scale 1 (qsub_panels.hpp)
        for (int t = 0; t < MT; ++t)
          for (int v = 0; v < NV; ++v) I[t][v] = _mm512_add_epi32(I[t][v], s[t][v]);
      }
    }
    if constexpr (kChainsInC) {
      // Not before the sums: GCC hoists loads that no store separates from the block's
      // start, and 8 chains held through the sums would spill them.
      asm volatile("" ::: "memory");
      for (int t = 0; t < MT; ++t)
        for (int v = 0; v < NV; ++v) acc[t][v] = _mm512_loadu_ps(C + t * ldc + 16 * v);
    }
    __m512 d[NV];
    for (int v = 0; v < NV; ++v) d[v] = scale_d(blk, V0 + v);
    for (int t = 0; t < MT; ++t) {
      const __m512 dx = _mm512_set1_ps(A.scales[t * blocks + b]);
      for (int v = 0; v < NV; ++v)
        acc[t][v] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(I[t][v]), _mm512_mul_ps(d[v], dx), acc[t][v]);
    }
    if constexpr (f.has_min) {
      __m512i M[MT][NV];
      for (int t = 0; t < MT; ++t)
        for (int v = 0; v < NV; ++v) M[t][v] = _mm512_setzero_si512();
      for (int u = 0; u < f.subs(); ++u) {
        const auto* m = reinterpret_cast<const __m128i*>(blk + L.m + u * 64) + V0;
        __m512i B[MT];
        for (int t = 0; t < MT; ++t) B[t] = _mm512_set1_epi32(qsub_sum(bs[t], f.sub, u));
        for (int v = 0; v < NV; ++v) {
          if constexpr (f.stores_mins()) {
            const __m512i mins = _mm512_cvtepu8_epi32(_mm_load_si128(m + v));
            for (int t = 0; t < MT; ++t) M[t][v] = _mm512_add_epi32(M[t][v], _mm512_mullo_epi32(mins, B[t]));
          } else {  // the min is 1 (qsub_panels.hpp)
            for (int t = 0; t < MT; ++t) M[t][v] = _mm512_add_epi32(M[t][v], B[t]);
          }
        }
      }
      const auto* dmin16 = reinterpret_cast<const __m256i*>(blk + L.dmin) + V0;
      for (int t = 0; t < MT; ++t) {
        const __m512 dx = _mm512_set1_ps(A.scales[t * blocks + b]);
        for (int v = 0; v < NV; ++v) {
          const __m512 ms = _mm512_mul_ps(_mm512_cvtph_ps(_mm256_load_si256(dmin16 + v)), dx);
          acc[t][v] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(M[t][v]), ms, acc[t][v]);  // fma(M, −ms, acc)
        }
      }
    }
    if constexpr (kChainsInC)
      for (int t = 0; t < MT; ++t)
        for (int v = 0; v < NV; ++v) _mm512_storeu_ps(C + t * ldc + 16 * v, acc[t][v]);
  }
  if constexpr (!kChainsInC)
    for (int t = 0; t < MT; ++t)
      for (int v = 0; v < NV; ++v) _mm512_storeu_ps(C + t * ldc + 16 * v, acc[t][v]);
}

// A's rows from token t on.
inline Q8Rows rows_from(const Q8Rows& A, int64_t t, int64_t K, int64_t blocks) {
  return Q8Rows{A.codes + t * K, A.scales + t * blocks, A.sums + t * (K / 16)};
}

// Three tokens and more (K > 0), super-block by super-block: every strip of two tokens (or
// four over half panels: four_token_strips_from) takes a super-block while it is in L1, its
// chains in C (zeroed first), each strip prefetching its share of the super-block ahead —
// so the panel streams from memory once while the strips' products run, instead of once a
// strip per K block with the memory idle while the other strips re-read it from L2
// (docs/performance.md, "Decode: where the time goes"). An odd token's strip runs first, as
// in the 256-bit kernels (avx2/qsub_tile_avx2.hpp): from memory three tokens read faster so
// in slow-memory processes (1.03–1.10× for Q4_K, IQ4_XS and the 5-bit types), level in
// fast ones (docs/performance.md, "Q6_K and the 5-bit types: a pair's first code whole").
// Share is Ahead::share or Ahead::share_far.
template <WeightType W, Ahead Share>
inline void block_by_block(int64_t T, int64_t K, const Q8Rows& A, const std::byte* P, float* C, int64_t ldc) {
  const int64_t blocks = K / q_format(W).block;
  zero_panel_rows(C, T, ldc);
  const int64_t fours = T >= four_token_strips_from<W>() ? T / 4 : 0;
  const int calls = int(fours * 2 + (T - 4 * fours + 1) / 2);
  const bool odd = T % 2 != 0;  // token T − 1 has no pair: it runs alone, first
  for (int64_t b = 0; b < blocks; ++b) {
    int64_t t = 0;
    int part = 0;
    if (odd)
      tile<W, 1, Share>(K, rows_from(A, T - 1, K, blocks), P, b, b + 1, true, C + (T - 1) * ldc, ldc, part++, calls);
    for (; t < 4 * fours; t += 4) {  // rows 0–31, then 32–63
      tile<W, 4, Share, 2, 0>(K, rows_from(A, t, K, blocks), P, b, b + 1, true, C + t * ldc, ldc, part++, calls);
      tile<W, 4, Share, 2, 2>(K, rows_from(A, t, K, blocks), P, b, b + 1, true, C + t * ldc, ldc, part++, calls);
    }
    for (; t + 2 <= T; t += 2)
      tile<W, 2, Share>(K, rows_from(A, t, K, blocks), P, b, b + 1, true, C + t * ldc, ldc, part++, calls);
  }
}

// Whether block_by_block runs with every strip's code inlined into its loop
// (every_call_inlined). Taken where a strip's call is a large share of its block's work —
// the formats of 32-value blocks, and those with four-token strips; Q3_K, the one format
// left, measured level or slower with it at three and eight tokens (docs/performance.md,
// "Four-token strips").
template <WeightType W>
constexpr bool inline_strips() {
  return q_format(W).block == 32 || four_token_strips_from<W>() < INT64_MAX;
}

template <WeightType W, Ahead Share>
void by_blocks(int64_t T, int64_t K, const Q8Rows& A, const std::byte* P, float* C, int64_t ldc) {
  if constexpr (inline_strips<W>())
    every_call_inlined([](int64_t tokens, int64_t k, const Q8Rows* a, const std::byte* p, float* c,
                          int64_t ld) { block_by_block<W, Share>(tokens, k, *a, p, c, ld); },
                       T, K, &A, P, C, ldc);
  else
    block_by_block<W, Share>(T, K, A, P, C, ldc);
}

template <WeightType W>
void panel_rows(int64_t T, int64_t K, const Q8Rows& A, const std::byte* P, float* C, int64_t ldc) {
  if (T <= 0) return;
  const int64_t blocks = K / q_format(W).block;
  if (T >= 3 && blocks > 0) {
    if constexpr (prefetch_twice_as_far_from<W>() < INT64_MAX)
      if (T >= prefetch_twice_as_far_from<W>()) return by_blocks<W, Ahead::share_far>(T, K, A, P, C, ldc);
    return by_blocks<W, Ahead::share>(T, K, A, P, C, ldc);
  }
  // One or two tokens, and K = 0: K in blocks of kKValues, the first strip prefetching.
  // K = 0 still visits one (empty) range, so that C is written (zeros).
  const bool into_l1 = prefetch_into_l1<W>(T);
  for (int64_t b0 = 0; b0 < blocks || b0 == 0; b0 += kKValues / q_format(W).block) {
    const int64_t b1 = std::min(blocks, b0 + kKValues / q_format(W).block);
    int64_t t = 2;
    if (T >= 2 && into_l1)
      tile<W, 2, Ahead::whole_into_l1>(K, A, P, b0, b1, b0 > 0, C, ldc);
    else if (T >= 2)
      tile<W, 2, Ahead::whole>(K, A, P, b0, b1, b0 > 0, C, ldc);
    else if (into_l1)
      tile<W, 1, Ahead::whole_into_l1>(K, A, P, b0, b1, b0 > 0, C, ldc);
    else
      tile<W, 1, Ahead::whole>(K, A, P, b0, b1, b0 > 0, C, ldc);
    for (; t + 2 <= T; t += 2)
      tile<W, 2, Ahead::none>(K, rows_from(A, t, K, blocks), P, b0, b1, b0 > 0, C + t * ldc, ldc);
    if (t < T) tile<W, 1, Ahead::none>(K, rows_from(A, t, K, blocks), P, b0, b1, b0 > 0, C + t * ldc, ldc);
  }
}

template <WeightType W>
void panel(int64_t T, int64_t K, const ActivationRows& A, const std::byte* P, float* C, int64_t ldc) {
  panel_rows<W>(T, K, Q8Rows{A.codes(), A.scales, A.sums}, P, C, ldc);
}

}  // namespace

FFN_PANEL_KERNEL_SET(qsub, panel_gemm_avx512_vnni_2x64, panel);

}  // namespace ffn::kernels
