// AVX-VNNI integer product with a qblock panel (Q8_0, Q4_0) packed at load (layout and
// arithmetic in qblock_panels.hpp), the 1×64 tile of avx2/qblock_tile_avx2.hpp: the AVX-512 VNNI kernel's
// arithmetic on 256-bit vectors, for the CPUs that have VEX-coded vpdpbusd without AVX-512
// (Intel's client cores from Alder Lake on, and Zen 5 beside its AVX-512).
// Each group of 4 weights of 8 rows is one vector, dotted by one vpdpbusd with the token's
// 4 activation bytes broadcast: the weights enter as the panel stores them, unsigned
// (q8_0 + 128, q4_0 nibbles + 8), and each block sum starts from the activations'
// −offset·Σx, which makes it exact — vpdpbusd adds its four products in int32, so nothing
// saturates. Against AVX2's vpmaddubsw form that is 1 instruction a q8_0 vector instead of
// 5 (xor, abs, sign, vpmaddubsw, vpmaddwd and the add) and 2 dot products a q4_0 vector
// instead of 3 operations and a share of the widening.
// Compiled with the avx2_vnni level's flags (ffn/isa_list.hpp); called only when the CPU has the level.
#include "kernels/avx2/qblock_tile_avx2.hpp"
#include "kernels/avx2_vnni/avx2_vnni_kernels.hpp"

namespace ffn::kernels {
namespace {

struct DpbusdSums {
  // Every block is read in place by each token (vpdpbusd takes the codes as they are; q4_0's
  // nibbles unpacked once a block, as the avx2 kernel's are from 5 tokens, is not measured
  // with AVX-VNNI).
  template <WeightType W>
  static constexpr int64_t kPreparedFromTokens = 0;

  template <WeightType W, class XGroup, class XSum>
  static void sums(const std::byte* q, const XGroup& x_group, const XSum& x_sum, __m256i sum[8]) {
    constexpr QFormat f = q_format(W);
    auto w_vec = [&](int g, int v) {
      return _mm256_load_si256(reinterpret_cast<const __m256i*>(q + 256 * g + 32 * v));
    };
    const __m256i c = _mm256_set1_epi32(-f.offset * x_sum());
    for (int v = 0; v < 8; ++v) sum[v] = c;
    if constexpr (!f.nibbles) {
      for (int g = 0; g < 8; ++g) {
        const __m256i x = x_group(g);
        for (int v = 0; v < 8; ++v) sum[v] = _mm256_dpbusd_avx_epi32(sum[v], w_vec(g, v), x);
      }
    } else {
      const __m256i nibble = _mm256_set1_epi8(0x0F);
      for (int g = 0; g < 4; ++g) {
        const __m256i x_lo = x_group(g), x_hi = x_group(g + 4);
        for (int v = 0; v < 8; ++v) {
          const __m256i raw = w_vec(g, v);
          sum[v] = _mm256_dpbusd_avx_epi32(sum[v], _mm256_and_si256(raw, nibble), x_lo);
          sum[v] = _mm256_dpbusd_avx_epi32(sum[v], _mm256_and_si256(_mm256_srli_epi16(raw, 4), nibble), x_hi);
        }
      }
    }
  }
};

template <WeightType W>
void panel(int64_t T, int64_t K, const ActivationRows& A, const std::byte* P, float* C, int64_t ldc) {
  avx2_qblock::panel<W, DpbusdSums>(T, K, A, P, C, ldc);
}

}  // namespace

FFN_PANEL_KERNEL_SET(qblock, panel_gemm_avx2_vnni_1x64, panel);

}  // namespace ffn::kernels
