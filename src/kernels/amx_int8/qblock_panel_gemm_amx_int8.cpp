// AMX integer product with a qblock panel (Q8_0, Q4_0) packed at load (layout and arithmetic
// in qblock_panels.hpp): tiles of up to 16 tokens × the panel's 64 rows. A block's group g of
// 4 weights of 16 rows is a 64-byte row of an AMX weight tile as it stands (16 rows × 4
// bytes, the layout tdpbsud's second operand takes), so each block is four tile dot products
// — the 4 vectors of 16 rows, K = 32 — of the tokens' signed activation bytes (a tile of M
// rows × 32 bytes, read in place) with the panel's unsigned codes. The sums of a span of
// blocks are stored; the chains add each token's −offset·Σx (the same exact integer sums S_b
// as vpdpbusd's) and take them in block order, acc ← fma(float(S_b), d_w·d_x, acc), so the
// bits are those of every other ISA. q4_0's nibbles are unpacked a
// span at a time (unpack_q4_0_nibbles). Some token counts take avx512_vnni's kernel (amx_takes).
// Compiled with the amx_int8 level's flags (ffn/isa_list.hpp); called only when the CPU has
// the level, whose detection has asked the OS for the tiles (cpu_features_x86_64.cpp).
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "kernels/amx_int8/amx_int8_kernels.hpp"
#include "kernels/avx512_vnni/avx512_vnni_kernels.hpp"
#include "kernels/avx512_vnni/qblock_unpack_avx512.hpp"
#include "kernels/qblock_panels.hpp"

namespace ffn::kernels {
namespace {

// The tile configuration (ldtilecfg's 64 bytes, palette 1): rows and bytes a row of each of
// the 8 tile registers.
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t bytes_per_row[16] = {};
  uint8_t rows[16] = {};
};

// The tile instructions as inline assembly that names its memory: GCC 12's AMX intrinsics pass
// only addresses to their asm, so the compiler may keep a value a tile store wrote in a
// register, or drop the stores a tile load (or ldtilecfg) reads.
template <int Tmm>
inline void tile_load(const void* base, int64_t stride) {
  asm volatile("tileloadd (%0,%1,1), %%tmm%c2" ::"r"(base), "r"(stride), "n"(Tmm) : "memory");
}
template <int Tmm>
inline void tile_store(void* base, int64_t stride) {
  asm volatile("tilestored %%tmm%c2, (%0,%1,1)" ::"r"(base), "r"(stride), "n"(Tmm) : "memory");
}
// tmm C += tmm A · tmm B, A signed bytes (M × 4k), B unsigned bytes (k × 16·4), C int32.
template <int C, int A, int B>
inline void tile_dot_signed_unsigned() {
  asm volatile("tdpbsud %%tmm%c2, %%tmm%c1, %%tmm%c0" ::"n"(C), "n"(A), "n"(B));
}
inline void tiles_configure(const TileConfig& config) { asm volatile("ldtilecfg %0" ::"m"(config) : "memory"); }

// The thread's tile configuration as the kernel found it, put back when it returns: other
// code in the process (ggml's AMX kernels, oneDNN's in PyTorch) may load its configuration
// once a thread and count on it staying, and a tile instruction run without the
// configuration it expects faults (SIGILL) or computes with the wrong shapes. Tiles in their
// initial state (no configuration: palette 0, as sttilecfg stores it) are released again.
class KeepCallersTiles {
 public:
  KeepCallersTiles() { asm volatile("sttilecfg %0" : "=m"(callers_) : : "memory"); }
  ~KeepCallersTiles() {
    if (callers_.palette != 0)
      tiles_configure(callers_);
    else
      asm volatile("tilerelease" ::: "memory");
  }
  KeepCallersTiles(const KeepCallersTiles&) = delete;
  KeepCallersTiles& operator=(const KeepCallersTiles&) = delete;

 private:
  TileConfig callers_;
};

// Tile registers: tmm0–3 a block's sums for rows 16v … 16v + 15 (M tokens × 16 int32),
// tmm4 the activations (M tokens × 32 bytes), tmm5–7 the weights (8 groups × 64 bytes).
TileConfig config_for(int64_t tokens) {
  TileConfig c;
  for (int i = 0; i < 4; ++i) {
    c.rows[i] = uint8_t(tokens);
    c.bytes_per_row[i] = 64;
  }
  c.rows[4] = uint8_t(tokens);
  c.bytes_per_row[4] = 32;
  for (int i = 5; i < 8; ++i) {
    c.rows[i] = 8;
    c.bytes_per_row[i] = 64;
  }
  return c;
}

// Which tokens the tiles take (docs/performance.md, "AMX tiles"): a tile's fixed cost a block
// (four tile products and the stores of four sum tiles) pays only over whole tiles of 16
// tokens. So 16 tokens, or 32 and more, run in tiles; fewer, and 17 to 31, take
// avx512_vnni's kernel (a tile of 16 and one of 1 to 15 was slower than it); of 32 and more,
// a last tile of fewer than kAmxRestFrom tokens goes to avx512_vnni's kernel too, after the
// tiles, while the panel is in L2.
constexpr int64_t kTileTokens = 16;  // an AMX tile's rows
constexpr int64_t kAmxRestFrom = 8;
constexpr bool amx_takes(int64_t T) { return T == kTileTokens || T >= 2 * kTileTokens; }

// Blocks whose sums are stored before the chains take them: 16 KiB of sums at 16 tokens.
constexpr int64_t kSpan = 4;

// A span's sums: block j of the span, token t, row r.
struct alignas(64) SpanSums {
  int32_t s[kSpan][kTileTokens][64];
};

// The integer sums Σ w·x of block `blk` (q8_0's byte layout, codes without their offset
// taken off) for the M tokens of the tile into sums[t][…].
inline void block_sums(const int8_t* codes, int64_t K, const std::byte* blk, int32_t (*sums)[64]) {
  const std::byte* q = blk + kQBlockScaleBytes;
  asm volatile("tilezero %%tmm0\n\ttilezero %%tmm1\n\ttilezero %%tmm2\n\ttilezero %%tmm3" ::: "memory");
  tile_load<4>(codes, K);
  tile_load<5>(q, 256);
  tile_dot_signed_unsigned<0, 4, 5>();
  tile_load<6>(q + 64, 256);
  tile_dot_signed_unsigned<1, 4, 6>();
  tile_load<7>(q + 128, 256);
  tile_dot_signed_unsigned<2, 4, 7>();
  tile_load<5>(q + 192, 256);
  tile_dot_signed_unsigned<3, 4, 5>();
  tile_store<0>(&sums[0][0], 256);
  tile_store<1>(&sums[0][16], 256);
  tile_store<2>(&sums[0][32], 256);
  tile_store<3>(&sums[0][48], 256);
}

template <WeightType W>
void panel(int64_t T, int64_t K, const ActivationRows& A, const std::byte* P, float* C, int64_t ldc) {
  const PanelGemm vnni = qblock_panel_gemm_avx512_vnni_2x64[static_cast<size_t>(W)];
  if (!amx_takes(T) || K == 0) {
    vnni(T, K, A, P, C, ldc);
    return;
  }
  if (const int64_t rest = T % kTileTokens; rest != 0 && rest < kAmxRestFrom) {
    panel<W>(T - rest, K, A, P, C, ldc);
    vnni(rest, K, A.from_token(T - rest), P, C + (T - rest) * ldc, ldc);
    return;
  }
  constexpr QFormat f = q_format(W);
  constexpr int64_t raw_bytes = qblock_bytes(f);
  static_assert(kUnpackedQ4BlockBytes == qblock_bytes(q_format(WeightType::q8_0)));
  constexpr int64_t ahead = kQPanelPrefetchBytes / raw_bytes * raw_bytes;
  const int64_t blocks = K / 32;
  const KeepCallersTiles keep;
  SpanSums sums;
  int32_t starts[kTileTokens][kSpan];
  alignas(64) float row_scales[kSpan][64];
  alignas(64) std::byte unpacked[f.nibbles ? kSpan * kUnpackedQ4BlockBytes : 64];
  int64_t configured = 0;  // the tile rows ldtilecfg last set
  const __m128i minus_offset = _mm_set1_epi16(int16_t(-f.offset));
  for (int64_t b0 = 0; b0 < blocks; b0 += kSpan) {
    const int64_t nb = std::min(kSpan, blocks - b0);
    // The span's blocks in q8_0's byte layout (q4_0's unpacked once for every tile of tokens)
    // and their row scales as f32.
    const std::byte* span = P + b0 * raw_bytes;
    if constexpr (f.nibbles) {
      unpack_q4_0_nibbles(P, b0, b0 + nb, unpacked);
      span = unpacked;
    }
    for (int64_t j = 0; j < nb; ++j) {
      const auto* scales = reinterpret_cast<const __m256i*>(span + j * kUnpackedQ4BlockBytes);
      for (int v = 0; v < 4; ++v)
        _mm512_store_ps(row_scales[j] + 16 * v, _mm512_cvtph_ps(_mm256_load_si256(scales + v)));
    }
    for (int64_t m0 = 0; m0 < T; m0 += kTileTokens) {
      const int64_t M = std::min(kTileTokens, T - m0);
      if (M != configured) {
        const TileConfig config = config_for(M);
        tiles_configure(config);
        configured = M;
      }
      const ActivationRows At = A.from_token(m0);
      float* Ct = C + m0 * ldc;
      // Each token's −offset·Σx of the span's blocks: pairs of sums of 16 (madd, exact in int32).
      for (int64_t t = 0; t < M; ++t) {
        const int16_t* sums16 = At.sums + t * (K / 16) + 2 * b0;
        if (nb == kSpan) {
          _mm_storeu_si128(reinterpret_cast<__m128i*>(starts[t]),
                           _mm_madd_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sums16)), minus_offset));
        } else {
          for (int64_t j = 0; j < nb; ++j) starts[t][j] = -f.offset * q8_block_sum(At.sums + t * (K / 16), b0 + j);
        }
      }
      for (int64_t j = 0; j < nb; ++j) {
        // The first tile of tokens pulls the block kQPanelPrefetchBytes ahead into L2, a block
        // at a time (a span's blocks at once were slower where the panel streams from memory).
        if (m0 == 0) prefetch_share_to_l2(P + (b0 + j) * raw_bytes + ahead, raw_bytes, 0, 1);
        block_sums(At.codes() + 32 * (b0 + j), K, span + j * kUnpackedQ4BlockBytes, sums.s[j]);
      }
      // The chains, block by block in order: acc ← fma(float(S_b), d_w·d_x, acc).
      for (int64_t t = 0; t < M; ++t) {
        __m512 acc[4];
        for (int v = 0; v < 4; ++v) acc[v] = b0 == 0 ? _mm512_setzero_ps() : _mm512_loadu_ps(Ct + t * ldc + 16 * v);
        for (int64_t j = 0; j < nb; ++j) {
          const __m512 dx = _mm512_set1_ps(At.scales[t * blocks + b0 + j]);
          const __m512i start = _mm512_set1_epi32(starts[t][j]);
          for (int v = 0; v < 4; ++v)
            acc[v] =
                _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(_mm512_load_si512(sums.s[j][t] + 16 * v), start)),
                                _mm512_mul_ps(_mm512_load_ps(row_scales[j] + 16 * v), dx), acc[v]);
        }
        for (int v = 0; v < 4; ++v) _mm512_storeu_ps(Ct + t * ldc + 16 * v, acc[v]);
      }
    }
  }
}

}  // namespace

FFN_PANEL_KERNEL_SET(qblock, panel_gemm_amx_int8_16x64, panel);

}  // namespace ffn::kernels
