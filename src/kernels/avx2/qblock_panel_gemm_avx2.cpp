// AVX2 integer product with a qblock panel (Q8_0, Q4_0) packed at load (layout and arithmetic
// in qblock_panels.hpp), the 1×64 tile of qblock_tile_avx2.hpp.
// (It beat a 1×32 tile reading each block's two halves in two passes at every T measured:
// docs/performance.md, "The kernels' constants".)
// A group's 4 weights of 8 rows are one vector: vpmaddubsw multiplies unsigned by signed
// bytes into pairs of int16, vpmaddwd adds the pairs into int32 lanes — each lane the exact
// Σ of its row's 4 products. q4_0's nibbles (w + 8, at most 15) stay unsigned and the sum
// starts from the activations' −8·Σx; its pairs (|·| ≤ 2·15·127 = 3810, activations being
// in [−127, 127]) are added as int16 over the whole block — 8 of them, |·| ≤ 30480 < 2¹⁵,
// so exact — and widened by one vpmaddwd a block instead of one a vector. q8_0 multiplies
// |w| by x carrying w's sign, so no pair can saturate int16 (2·128·127 < 2¹⁵), and needs no
// correction (two such pairs could: its pairs are widened one vector at a time).
// Compiled with the avx2 level's flags (ffn/isa_list.hpp); called only when the CPU has the level.
#include <type_traits>

#include "kernels/avx2/avx2_kernels.hpp"
#include "kernels/avx2/qblock_tile_avx2.hpp"

namespace ffn::kernels {
namespace {

inline __m256i pair_sums(__m256i u8, __m256i s8) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(u8, s8), _mm256_set1_epi16(1));
}

struct MaddubsSums {
  template <WeightType W, class XGroup, class XSum>
  static void sums(const std::byte* q, const XGroup& x_group, const XSum& x_sum, __m256i sum[8]) {
    constexpr QFormat f = q_format(W);
    auto w_vec = [&](int g, int v) {
      return _mm256_load_si256(reinterpret_cast<const __m256i*>(q + 256 * g + 32 * v));
    };
    if constexpr (!f.nibbles) {
      static_assert(f.offset == 128, "byte codes are read back as signed weights by flipping their top bit");
      const __m256i bias = _mm256_set1_epi8(static_cast<char>(0x80));
      for (int v = 0; v < 8; ++v) sum[v] = _mm256_setzero_si256();
      for (int g = 0; g < 8; ++g) {
        const __m256i x = x_group(g);
        for (int v = 0; v < 8; ++v) {
          const __m256i w = _mm256_xor_si256(w_vec(g, v), bias);  // back to signed
          sum[v] = _mm256_add_epi32(sum[v], pair_sums(_mm256_abs_epi8(w), _mm256_sign_epi8(x, w)));
        }
      }
    } else {
      const __m256i nibble = _mm256_set1_epi8(0x0F);
      __m256i pairs[8];  // int16 pair sums of the block, exact (above)
      for (int v = 0; v < 8; ++v) pairs[v] = _mm256_setzero_si256();
      for (int g = 0; g < 4; ++g) {
        const __m256i x_lo = x_group(g), x_hi = x_group(g + 4);
        for (int v = 0; v < 8; ++v) {
          const __m256i raw = w_vec(g, v);
          const __m256i lo = _mm256_and_si256(raw, nibble);
          const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), nibble);
          pairs[v] = _mm256_add_epi16(pairs[v],
                                      _mm256_add_epi16(_mm256_maddubs_epi16(lo, x_lo), _mm256_maddubs_epi16(hi, x_hi)));
        }
      }
      const __m256i c = _mm256_set1_epi32(-f.offset * x_sum());
      for (int v = 0; v < 8; ++v) sum[v] = _mm256_add_epi32(_mm256_madd_epi16(pairs[v], _mm256_set1_epi16(1)), c);
    }
  }

  // From this many tokens block_major makes a block ready once for all of them (Block):
  // q4_0's nibbles unpacked, so that a token's vector takes vpmaddubsw and an int16 add
  // where it took the unpacking's three operations too (faster from 5 tokens, level at 4,
  // slower at 2 and 3); q8_0's codes as signed weights and their magnitudes, so that a
  // token's vector takes vpsignb, vpmaddubsw, vpmaddwd and vpaddd, not vpxor and vpabsb too
  // (slower at 6 tokens, level at 8, faster from 10: docs/performance.md, "A CPU without
  // AVX-512: Zen 3").
  template <WeightType W>
  static constexpr int64_t kPreparedFromTokens = q_format(W).nibbles ? 5 : 10;

  // A q4_0 block's nibbles unpacked into eight groups of unsigned bytes; its sums are the
  // integers sums<W> gives, so the bits are the same.
  template <WeightType W>
  struct NibbleBlock {
    // [g][v]: the codes (0 … 15) of weights 4g … 4g + 3 of rows 8v … 8v + 7.
    __m256i codes[8][8];

    void load(const std::byte* q) {
      const __m256i nibble = _mm256_set1_epi8(0x0F);
      for (int g = 0; g < 4; ++g)
        for (int v = 0; v < 8; ++v) {
          const __m256i raw = _mm256_load_si256(reinterpret_cast<const __m256i*>(q + 256 * g + 32 * v));
          codes[g][v] = _mm256_and_si256(raw, nibble);
          codes[g + 4][v] = _mm256_and_si256(_mm256_srli_epi16(raw, 4), nibble);
        }
    }

    // Row vector by row vector, the token's 8 groups of activations in registers: written
    // group by group (as sums<W>), GCC spilled the products to the stack.
    template <class XGroup, class XSum>
    void sums(const XGroup& x_group, const XSum& x_sum, __m256i sum[8]) const {
      __m256i x[8];
      for (int g = 0; g < 8; ++g) x[g] = x_group(g);
      const __m256i c = _mm256_set1_epi32(-q_format(W).offset * x_sum());
      for (int v = 0; v < 8; ++v) {
        // int16 pair sums of the block: at most 8 · 3810 < 2¹⁵, as in sums<W>.
        __m256i pairs = _mm256_maddubs_epi16(codes[0][v], x[0]);
        for (int g = 1; g < 8; ++g) pairs = _mm256_add_epi16(pairs, _mm256_maddubs_epi16(codes[g][v], x[g]));
        sum[v] = _mm256_add_epi32(_mm256_madd_epi16(pairs, _mm256_set1_epi16(1)), c);
      }
    }
  };

  // A q8_0 block's codes read back as signed weights once, with their magnitudes; its sums
  // are sums<W>'s integers, vector by vector in the same order, so the bits are the same.
  template <WeightType W>
  struct ByteBlock {
    // [g][v]: weights 4g … 4g + 3 of rows 8v … 8v + 7, signed and as |w|.
    __m256i weights[8][8], magnitudes[8][8];

    void load(const std::byte* q) {
      const __m256i bias = _mm256_set1_epi8(static_cast<char>(0x80));
      for (int g = 0; g < 8; ++g)
        for (int v = 0; v < 8; ++v) {
          weights[g][v] =
              _mm256_xor_si256(_mm256_load_si256(reinterpret_cast<const __m256i*>(q + 256 * g + 32 * v)), bias);
          magnitudes[g][v] = _mm256_abs_epi8(weights[g][v]);
        }
    }

    template <class XGroup, class XSum>
    void sums(const XGroup& x_group, const XSum&, __m256i sum[8]) const {
      __m256i x[8];
      for (int g = 0; g < 8; ++g) x[g] = x_group(g);
      for (int v = 0; v < 8; ++v) {
        __m256i s = pair_sums(magnitudes[0][v], _mm256_sign_epi8(x[0], weights[0][v]));
        for (int g = 1; g < 8; ++g)
          s = _mm256_add_epi32(s, pair_sums(magnitudes[g][v], _mm256_sign_epi8(x[g], weights[g][v])));
        sum[v] = s;
      }
    }
  };

  template <WeightType W>
  using Block = std::conditional_t<q_format(W).nibbles, NibbleBlock<W>, ByteBlock<W>>;
};

template <WeightType W>
void panel(int64_t T, int64_t K, const ActivationRows& A, const std::byte* P, float* C, int64_t ldc) {
  avx2_qblock::panel<W, MaddubsSums>(T, K, A, P, C, ldc);
}

}  // namespace

FFN_PANEL_KERNEL_SET(qblock, panel_gemm_avx2_1x64, panel);

}  // namespace ffn::kernels
