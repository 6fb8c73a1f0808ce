// AVX-512 VNNI integer product with a qblock panel (Q8_0, Q4_0) packed at load (layout and
// arithmetic in qblock_panels.hpp), 2×64 tile: 2 tokens × 4 zmm of 16 rows, 8 float accumulators
// and 8 integer block sums. Each group of 4 weights of 16 rows is one vector, dotted by one
// vpdpbusd with the token's 4 activation bytes broadcast — no lane reduction, a 16-row
// scale vector per block — and the panel streams as one linear array, its next blocks
// prefetched (into L1 or L2: prefetch_into_l1). The weights enter as unsigned bytes (q8_0 +
// 128, q4_0 nibbles + 8); each block sum starts from the activations' −offset·Σx, which
// makes it exact. Three and four tokens in one pass of 16 rows at a time (rows_tile); more
// block by block (block_major); q8_0 from 9 tokens in strips over K blocks, which together
// prefetch the next (k_block_strips); q4_0 from 16 over K blocks unpacked once, strips of
// three (unpacked_strips).
// Compiled with the avx512_vnni level's flags (ffn/isa_list.hpp); called only when the CPU has the level.
#include <immintrin.h>

#include <algorithm>

#include "kernels/avx512_vnni/avx512_vnni_kernels.hpp"
#include "kernels/avx512_vnni/qblock_unpack_avx512.hpp"
#include "kernels/cpu_features.hpp"
#include "kernels/qblock_panels.hpp"

namespace ffn::kernels {
namespace {

// The first strip prefetches kQPanelPrefetchBytes ahead (7 q4_0 blocks, 3 q8_0), a group's
// share of the block's lines with each group of 4 weights. On AMD's cores into L1 where the
// loop reads the most bytes per instruction — q8_0 at every T, q4_0 (whose nibbles are
// unpacked) at one or two tokens — into L2 otherwise, where L1 prefetches were slower; on
// Intel's into L2 at every T, 1.01–1.16× faster there at one and two tokens
// (docs/performance.md, "The kernels' constants"; "An Intel CPU: Emerald Rapids").
template <WeightType W>
bool prefetch_into_l1(int64_t T) {
  return (!q_format(W).nibbles || T <= 2) && !cpu_is_intel();
}

// W's format as a tile reads its blocks: with Unpacked, a q4_0 block unpacked to a byte a
// code (unpack_q4_0_nibbles), read as q8_0's are, its offset still 8.
template <WeightType W, bool Unpacked>
constexpr QFormat read_format() {
  QFormat f = q_format(W);
  if (Unpacked) f.nibbles = false;
  return f;
}

// From kUnpackFrom tokens a q4_0 panel is unpacked once a K block of kUnpackBlocks blocks
// (unpack_q4_0_nibbles), into a buffer of the thread's that every strip of tokens reads as q8_0's
// bytes, where each strip unpacking the nibbles itself spends 3 of its 7 vector instructions
// a weight vector on it. The buffer, 34 KiB, stays in L1 on cores with 48 KiB of it (Golden
// Cove, Zen 5), in L2 on Zen 4's 32 (not measured there). From fewer tokens the strips'
// arithmetic no longer hides the burst of panel reads each K block starts with, and reading
// block by block, each strip unpacking its own, was faster (docs/performance.md, "The
// kernels' constants").
constexpr int64_t kUnpackFrom = 16;
constexpr int64_t kUnpackBlocks = 16;
static_assert(kUnpackedQ4BlockBytes == qblock_bytes(read_format<WeightType::q4_0, true>()));

// The exact integer sums S_b of block b (at blk) for MT tokens from A's token 0 × the panel's
// 64 rows: sum[t][v] holds rows 16v … 16v + 15. With prefetch (the first strip of tokens),
// the block kQPanelPrefetchBytes ahead is pulled into L1 (L1) or L2, a group's share of its
// lines with each group of 4 weights.
template <WeightType W, int MT, bool L1, bool prefetch, bool Unpacked = false>
inline void block_sums(int64_t K, const ActivationRows& A, const std::byte* blk, int64_t b, __m512i sum[MT][4]) {
  constexpr QFormat f = read_format<W, Unpacked>();
  constexpr int64_t block_bytes = qblock_bytes(f), ahead = kQPanelPrefetchBytes / block_bytes * block_bytes;
  const auto* q = reinterpret_cast<const __m512i*>(blk + kQBlockScaleBytes);
  for (int t = 0; t < MT; ++t) {
    const __m512i c = _mm512_set1_epi32(-f.offset * q8_block_sum(A.sums + t * (K / 16), b));
    for (int v = 0; v < 4; ++v) sum[t][v] = c;
  }
  // The 4 activation bytes of group g of token t, broadcast to every lane.
  auto x_group = [&](int t, int g) {
    int32_t bytes;
    __builtin_memcpy(&bytes, A.codes() + t * K + 32 * b + 4 * g, 4);
    return _mm512_set1_epi32(bytes);
  };
  if constexpr (!f.nibbles) {
    for (int g = 0; g < 8; ++g) {
      if constexpr (prefetch) prefetch_share<L1>(blk + ahead, block_bytes, g, 8);
      __m512i xg[MT];
      for (int t = 0; t < MT; ++t) xg[t] = x_group(t, g);
      for (int v = 0; v < 4; ++v) {
        const __m512i w = _mm512_load_si512(q + 4 * g + v);
        for (int t = 0; t < MT; ++t) sum[t][v] = _mm512_dpbusd_epi32(sum[t][v], w, xg[t]);
      }
    }
  } else {
    const __m512i nibble = _mm512_set1_epi8(0x0F);
    for (int g = 0; g < 4; ++g) {
      if constexpr (prefetch) prefetch_share<L1>(blk + ahead, block_bytes, g, 4);
      __m512i lo_x[MT], hi_x[MT];
      for (int t = 0; t < MT; ++t) {
        lo_x[t] = x_group(t, g);
        hi_x[t] = x_group(t, g + 4);
      }
      for (int v = 0; v < 4; ++v) {
        const __m512i raw = _mm512_load_si512(q + 4 * g + v);
        const __m512i lo = _mm512_and_si512(raw, nibble);
        const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(raw, 4), nibble);
        for (int t = 0; t < MT; ++t) {
          sum[t][v] = _mm512_dpbusd_epi32(sum[t][v], lo, lo_x[t]);
          sum[t][v] = _mm512_dpbusd_epi32(sum[t][v], hi, hi_x[t]);
        }
      }
    }
  }
}

// The block's 64 row scales d_w as f32.
inline void row_scales(const std::byte* blk, __m512 dw[4]) {
  const auto* scales = reinterpret_cast<const __m256i*>(blk);
  for (int v = 0; v < 4; ++v) dw[v] = _mm512_cvtph_ps(_mm256_load_si256(scales + v));
}

// One step of the chains: acc ← fma(float(S_b), d_w·d_x, acc), d_x token t's scale of block b.
template <int MT>
inline void chain_step(const __m512i sum[MT][4], const __m512 dw[4], const float* x_scales, int64_t blocks, int64_t b,
                       __m512 acc[MT][4]) {
  for (int t = 0; t < MT; ++t) {
    const __m512 dx = _mm512_set1_ps(x_scales[t * blocks + b]);
    for (int v = 0; v < 4; ++v)
      acc[t][v] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum[t][v]), _mm512_mul_ps(dw[v], dx), acc[t][v]);
  }
}

// The panel's next K block, which the strips over a K block pull into L2 as they compute:
// strip `part` of `parts` takes that share of each next block's lines (prefetch_share), so
// that together they fetch the next K block once and the memory streams while every strip
// computes, not only while the first does, the others re-reading the K block from L1 or L2.
template <WeightType W>
class NextKBlock {
 public:
  NextKBlock() = default;
  // raw: the panel as stored; span: the K block's blocks.
  NextKBlock(const std::byte* raw, int64_t span, int64_t part, int64_t parts)
      : raw_(raw), span_(span), first_(part * kBytes / parts / 64 * 64), end_((part + 1) * kBytes / parts) {}
  // The share of block b + span, the one block b's place in the next K block, if the panel has it.
  void pull(int64_t b, int64_t blocks) const {
    if (raw_ == nullptr || b + span_ >= blocks) return;
    for (int64_t line = first_; line < end_; line += 64) __builtin_prefetch(raw_ + (b + span_) * kBytes + line, 0, 2);
  }

 private:
  static constexpr int64_t kBytes = qblock_bytes(q_format(W));
  const std::byte* raw_ = nullptr;
  int64_t span_ = 0, first_ = 0, end_ = 0;
};

// MT tokens × 64 rows over blocks [b0, b1), the chains in registers, starting from C when
// resume. Block b at P + b·(its bytes); with Unpacked at P + (b − b0)·(its bytes), the K
// block unpack_q4_0_nibbles made. With each block, its share of the next K block (next).
template <WeightType W, int MT, bool L1, bool prefetch, bool Unpacked = false>
void tile(int64_t K, const ActivationRows& A, const std::byte* P, int64_t b0, int64_t b1, bool resume, float* C,
          int64_t ldc, const NextKBlock<W>& next = {}) {
  constexpr int64_t block_bytes = qblock_bytes(read_format<W, Unpacked>());
  const int64_t blocks = K / 32;
  __m512 acc[MT][4];
  for (int t = 0; t < MT; ++t)
    for (int v = 0; v < 4; ++v) acc[t][v] = resume ? _mm512_loadu_ps(C + t * ldc + 16 * v) : _mm512_setzero_ps();
  for (int64_t b = b0; b < b1; ++b) {
    const std::byte* blk = P + (Unpacked ? b - b0 : b) * block_bytes;
    next.pull(b, blocks);
    __m512i sum[MT][4];
    block_sums<W, MT, L1, prefetch && !Unpacked, Unpacked>(K, A, blk, b, sum);
    __m512 dw[4];
    row_scales(blk, dw);
    chain_step<MT>(sum, dw, A.scales, blocks, b, acc);
  }
  for (int t = 0; t < MT; ++t)
    for (int v = 0; v < 4; ++v) _mm512_storeu_ps(C + t * ldc + 16 * v, acc[t][v]);
}

// Three or four tokens × 64 rows in one pass over the panel, their 4·MT chains in registers:
// a block's sums are formed 16 rows at a time (vector v of the 4), MT integer sums live at
// once instead of 4·MT, and each token's 4 activation bytes of a group are broadcast once per
// vector. The panel streams once, as at one and two tokens, its prefetch of the block
// kQPanelPrefetchBytes ahead in shares: q4_0 a quarter with each vector; q8_0, whose loop
// reads twice the bytes a product, a sixteenth with every two groups (2–3 lines; from memory
// 1.07–1.10× faster at three and four tokens on Zen 4 than a quarter a vector, where q4_0
// read level: docs/performance.md, "Prefetch into L1 in pairs' shares"). Each row's chain
// takes the same steps as tile's, so the bits are the same.
template <WeightType W, int MT, bool L1>
void rows_tile(int64_t K, const ActivationRows& A, const std::byte* P, float* C, int64_t ldc) {
  static_assert(MT == 3 || MT == 4, "one and two tokens take tile");
  constexpr QFormat f = q_format(W);
  constexpr int64_t block_bytes = qblock_bytes(f), ahead = kQPanelPrefetchBytes / block_bytes * block_bytes;
  const int64_t blocks = K / 32;
  __m512 acc[MT][4];
  for (int t = 0; t < MT; ++t)
    for (int v = 0; v < 4; ++v) acc[t][v] = _mm512_setzero_ps();
  for (int64_t b = 0; b < blocks; ++b) {
    const std::byte* blk = P + b * block_bytes;
    const auto* q = reinterpret_cast<const __m512i*>(blk + kQBlockScaleBytes);
    __m512 dw[4];
    row_scales(blk, dw);
    // Each token's start of the block's sums (−offset·Σx) and scale d_x, for all 4 vectors.
    int32_t start[MT];
    float dx[MT];
    for (int t = 0; t < MT; ++t) {
      start[t] = -f.offset * q8_block_sum(A.sums + t * (K / 16), b);
      dx[t] = A.scales[t * blocks + b];
    }
    // Unrolled, so that acc[t][v] names registers (a loop over v would keep acc in memory).
#pragma GCC unroll 4
    for (int v = 0; v < 4; ++v) {
      if constexpr (f.nibbles) prefetch_share<L1>(blk + ahead, block_bytes, v, 4);
      // The activations' address made opaque for each vector, so that the compiler
      // broadcasts each group's bytes as its vpdpbusd needs them (a load-port broadcast)
      // instead of hoisting all 8·MT broadcasts of the block out of the vectors and spilling.
      const int8_t* codes = A.codes() + 32 * b;
      asm volatile("" : "+r"(codes));
      auto x_group = [&](int t, int g) {
        int32_t bytes;
        __builtin_memcpy(&bytes, codes + t * K + 4 * g, 4);
        return _mm512_set1_epi32(bytes);
      };
      __m512i sum[MT];
      for (int t = 0; t < MT; ++t) sum[t] = _mm512_set1_epi32(start[t]);
      if constexpr (!f.nibbles) {
        for (int g = 0; g < 8; ++g) {
          if (g % 2 == 0) prefetch_share<L1>(blk + ahead, block_bytes, 4 * v + g / 2, 16);
          const __m512i w = _mm512_load_si512(q + 4 * g + v);
          for (int t = 0; t < MT; ++t) sum[t] = _mm512_dpbusd_epi32(sum[t], w, x_group(t, g));
        }
      } else {
        const __m512i nibble = _mm512_set1_epi8(0x0F);
        for (int g = 0; g < 4; ++g) {
          const __m512i raw = _mm512_load_si512(q + 4 * g + v);
          const __m512i lo = _mm512_and_si512(raw, nibble);
          const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(raw, 4), nibble);
          for (int t = 0; t < MT; ++t) {
            sum[t] = _mm512_dpbusd_epi32(sum[t], lo, x_group(t, g));
            sum[t] = _mm512_dpbusd_epi32(sum[t], hi, x_group(t, g + 4));
          }
        }
      }
      for (int t = 0; t < MT; ++t)
        acc[t][v] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum[t]), _mm512_mul_ps(dw[v], _mm512_set1_ps(dx[t])), acc[t][v]);
    }
  }
  for (int t = 0; t < MT; ++t)
    for (int v = 0; v < 4; ++v) _mm512_storeu_ps(C + t * ldc + 16 * v, acc[t][v]);
}

// MT tokens, their chains in C: one step of the chains over a block's sums.
template <WeightType W, int MT, bool L1, bool prefetch>
inline void strip_step(int64_t K, const ActivationRows& A, const std::byte* blk, int64_t b, const __m512 dw[4],
                       float* C, int64_t ldc) {
  __m512i sum[MT][4];
  block_sums<W, MT, L1, prefetch>(K, A, blk, b, sum);
  __m512 acc[MT][4];
  for (int t = 0; t < MT; ++t)
    for (int v = 0; v < 4; ++v) acc[t][v] = _mm512_loadu_ps(C + t * ldc + 16 * v);
  chain_step<MT>(sum, dw, A.scales, K / 32, b, acc);
  for (int t = 0; t < MT; ++t)
    for (int v = 0; v < 4; ++v) _mm512_storeu_ps(C + t * ldc + 16 * v, acc[t][v]);
}

// Five to eight tokens (q4_0: to fifteen), block by block: every strip of two tokens takes a
// block while it is in L1, so the panel streams from memory once, at the pace of its first
// strip's prefetch. The chains live in C. (K = 0, which writes zeros, goes this way at every
// T ≥ 5.)
template <WeightType W, bool L1>
void block_major(int64_t T, int64_t K, const ActivationRows& A, const std::byte* P, float* C, int64_t ldc) {
  constexpr int64_t block_bytes = qblock_bytes(q_format(W));
  const int64_t blocks = K / 32;
  zero_panel_rows(C, T, ldc);
  for (int64_t b = 0; b < blocks; ++b) {
    const std::byte* blk = P + b * block_bytes;
    __m512 dw[4];
    row_scales(blk, dw);
    strip_step<W, 2, L1, true>(K, A, blk, b, dw, C, ldc);
    int64_t t = 2;
    for (; t + 2 <= T; t += 2) strip_step<W, 2, L1, false>(K, A.from_token(t), blk, b, dw, C + t * ldc, ldc);
    if (t < T) strip_step<W, 1, L1, false>(K, A.from_token(t), blk, b, dw, C + t * ldc, ldc);
  }
}

// q8_0 from kKBlockStripsFrom tokens: the chains stay in registers over a K block of about
// kKBlockBytes of panel, strip after strip of two tokens (k_block_strips), the later strips
// re-reading it from L1 while every strip pulls its share of the next K block into L2
// (NextKBlock), so the memory streams throughout. block_major's chains in C cost a load and
// a store a chain a block there. Fewer tokens run block by block, which was faster up to 8
// tokens and slower from 10 (Emerald Rapids; docs/performance.md, "The kernels'
// constants"). q4_0 runs block by block to 15 tokens, faster than these strips (each
// unpacking the nibbles again) at 8–14; from kUnpackFrom it unpacks its K blocks once
// (unpacked_strips).
constexpr int64_t kKBlockBytes = 36 * 1024;  // in L1 of 48 KiB (Golden Cove, Zen 5)
constexpr int64_t kKBlockStripsFrom = 9;

// q8_0, kKBlockStripsFrom tokens and more over K blocks of the panel as stored: strips of two
// tokens (then one), their chains in registers, each pulling its share of the next K block.
template <WeightType W, bool L1>
void k_block_strips(int64_t T, int64_t K, const ActivationRows& A, const std::byte* P, float* C, int64_t ldc) {
  constexpr int64_t span = kKBlockBytes / qblock_bytes(q_format(W));  // 16 blocks
  const int64_t blocks = K / 32, strips = (T + 1) / 2;
  auto next = [&](int64_t strip) { return NextKBlock<W>(P, span, strip, strips); };
  for (int64_t b0 = 0; b0 < blocks; b0 += span) {
    const int64_t b1 = std::min(blocks, b0 + span);
    tile<W, 2, L1, true>(K, A, P, b0, b1, b0 > 0, C, ldc, next(0));
    int64_t t = 2;
    for (; t + 2 <= T; t += 2)
      tile<W, 2, L1, false>(K, A.from_token(t), P, b0, b1, b0 > 0, C + t * ldc, ldc, next(t / 2));
    if (t < T) tile<W, 1, L1, false>(K, A.from_token(t), P, b0, b1, b0 > 0, C + t * ldc, ldc, next(t / 2));
  }
}

// q4_0 from kUnpackFrom tokens: K blocks of kUnpackBlocks blocks unpacked once
// (unpack_q4_0_nibbles), strips of three tokens over each with their chains in registers (12
// chains of vpdpbusd, where two tokens' 8 leave its latency uncovered), every strip pulling
// its share of the panel's next K block into L2 (NextKBlock).
template <WeightType W, bool L1>
void unpacked_strips(int64_t T, int64_t K, const ActivationRows& A, const std::byte* P, float* C, int64_t ldc) {
  const int64_t blocks = K / 32, strips = T / 3 + (T % 3 != 0);
  auto next = [&](int64_t strip) { return NextKBlock<W>(P, kUnpackBlocks, strip, strips); };
  alignas(64) static thread_local std::byte unpacked[kUnpackBlocks * kUnpackedQ4BlockBytes];
  for (int64_t b0 = 0; b0 < blocks; b0 += kUnpackBlocks) {
    const int64_t b1 = std::min(blocks, b0 + kUnpackBlocks);
    unpack_q4_0_nibbles(P, b0, b1, unpacked);
    tile<W, 3, L1, true, true>(K, A, unpacked, b0, b1, b0 > 0, C, ldc, next(0));
    int64_t t = 3;
    for (; t + 3 <= T; t += 3)
      tile<W, 3, L1, false, true>(K, A.from_token(t), unpacked, b0, b1, b0 > 0, C + t * ldc, ldc, next(t / 3));
    if (t + 2 <= T) {
      tile<W, 2, L1, false, true>(K, A.from_token(t), unpacked, b0, b1, b0 > 0, C + t * ldc, ldc, next(t / 3));
      t += 2;
    }
    if (t < T)
      tile<W, 1, L1, false, true>(K, A.from_token(t), unpacked, b0, b1, b0 > 0, C + t * ldc, ldc, next(strips - 1));
  }
}

template <WeightType W, bool L1>
void panel_tiles(int64_t T, int64_t K, const ActivationRows& A, const std::byte* P, float* C, int64_t ldc) {
  const int64_t blocks = K / 32;
  if (T == 1) {
    tile<W, 1, L1, true>(K, A, P, 0, blocks, false, C, ldc);
  } else if (T == 2) {
    tile<W, 2, L1, true>(K, A, P, 0, blocks, false, C, ldc);
  } else if (T == 3) {
    rows_tile<W, 3, L1>(K, A, P, C, ldc);
  } else if (T == 4) {
    rows_tile<W, 4, L1>(K, A, P, C, ldc);
  } else if (q_format(W).nibbles && T >= kUnpackFrom && K > 0) {
    if constexpr (q_format(W).nibbles) unpacked_strips<W, L1>(T, K, A, P, C, ldc);
  } else if (!q_format(W).nibbles && T >= kKBlockStripsFrom && K > 0) {
    if constexpr (!q_format(W).nibbles) k_block_strips<W, L1>(T, K, A, P, C, ldc);
  } else {
    block_major<W, L1>(T, K, A, P, C, ldc);
  }
}

template <WeightType W>
void panel(int64_t T, int64_t K, const ActivationRows& A, const std::byte* P, float* C, int64_t ldc) {
  if (prefetch_into_l1<W>(T))
    panel_tiles<W, true>(T, K, A, P, C, ldc);
  else
    panel_tiles<W, false>(T, K, A, P, C, ldc);
}

}  // namespace

FFN_PANEL_KERNEL_SET(qblock, panel_gemm_avx512_vnni_2x64, panel);

}  // namespace ffn::kernels
