// A q4_0 qblock panel's nibbles unpacked to a byte a code (qblock_panels.hpp), for the kernels
// that read many tokens against the same blocks: the AVX-512 VNNI strips of three tokens and
// the AMX tiles (amx_int8/) read the unpacked blocks as q8_0's, their offset still 8. Needs
// AVX-512F (included only by files of the levels from avx512_vnni).
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "kernels/qblock_panels.hpp"

namespace ffn::kernels {

// A q4_0 block unpacked: the 128 bytes of scales, then 8 groups of 256 bytes, q8_0's layout.
inline constexpr int64_t kUnpackedQ4BlockBytes = qblock_bytes(QFormat{.nibbles = false});

// Blocks [b0, b1) of a q4_0 panel P into `out` (64-byte aligned), kUnpackedQ4BlockBytes a
// block: the 128 bytes of scales copied; group g's nibbles to group g (low) and g + 4 (high),
// as the byte layout pairs weights 4g + i and 4(g + 4) + i. The same integers, so the same
// sums and bits.
inline void unpack_q4_0_nibbles(const std::byte* P, int64_t b0, int64_t b1, std::byte* out) {
  constexpr int64_t raw_bytes = qblock_bytes(QFormat{.nibbles = true});
  const __m512i nibble = _mm512_set1_epi8(0x0F);
  for (int64_t b = b0; b < b1; ++b) {
    const std::byte* src = P + b * raw_bytes;
    std::byte* dst = out + (b - b0) * kUnpackedQ4BlockBytes;
    for (int i = 0; i < 2; ++i) _mm512_store_si512(dst + 64 * i, _mm512_load_si512(src + 64 * i));
    const auto* q = reinterpret_cast<const __m512i*>(src + kQBlockScaleBytes);
    auto* u = reinterpret_cast<__m512i*>(dst + kQBlockScaleBytes);
    for (int i = 0; i < 16; ++i) {
      const __m512i raw = _mm512_load_si512(q + i);
      _mm512_store_si512(u + i, _mm512_and_si512(raw, nibble));
      _mm512_store_si512(u + 16 + i, _mm512_and_si512(_mm512_srli_epi16(raw, 4), nibble));
    }
  }
}

}  // namespace ffn::kernels
