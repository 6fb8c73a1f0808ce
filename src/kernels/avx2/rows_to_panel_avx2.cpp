// Rows of 32- and 16-bit values laid into a panel's columns (contracts in kernels.hpp),
// 8 rows × 8 values at a time transposed in registers (32-bit: transpose_avx2.hpp; 16-bit:
// three rounds of unpacks), 64 values of k at a time so that the writes stay within a few
// KiB of the panel; the edges one value at a time.
// Compiled with the avx2 level's flags (ffn/isa_list.hpp); called only when the CPU has the level.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/avx2/transpose_avx2.hpp"
#include "kernels/avx2/avx2_kernels.hpp"

namespace ffn::kernels {

namespace {

// An 8 × 8 block of 16-bit values: row i at rows[i] (any alignment) stored as column i at
// out[c·64 + i], c < 8.
void transpose_8x8_16(const void* const rows[8], uint16_t* out) {
  __m128i r[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm_loadu_si128(static_cast<const __m128i*>(rows[i]));
  // Pairs of rows interleaved: a[2p] holds values 0–3 of rows 2p, 2p + 1; a[2p + 1] values 4–7.
  __m128i a[8];
  for (int p = 0; p < 4; ++p) {
    a[2 * p] = _mm_unpacklo_epi16(r[2 * p], r[2 * p + 1]);
    a[2 * p + 1] = _mm_unpackhi_epi16(r[2 * p], r[2 * p + 1]);
  }
  // Quads of rows: b[4q + h] holds values 2h, 2h + 1 of rows 4q … 4q + 3.
  __m128i b[8];
  for (int q = 0; q < 2; ++q) {
    b[4 * q] = _mm_unpacklo_epi32(a[4 * q], a[4 * q + 2]);
    b[4 * q + 1] = _mm_unpackhi_epi32(a[4 * q], a[4 * q + 2]);
    b[4 * q + 2] = _mm_unpacklo_epi32(a[4 * q + 1], a[4 * q + 3]);
    b[4 * q + 3] = _mm_unpackhi_epi32(a[4 * q + 1], a[4 * q + 3]);
  }
  // Value c of all 8 rows.
  for (int h = 0; h < 4; ++h) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + (2 * h) * kPanelWidth), _mm_unpacklo_epi64(b[h], b[h + 4]));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + (2 * h + 1) * kPanelWidth), _mm_unpackhi_epi64(b[h], b[h + 4]));
  }
}

// Rows of `Value`s into the panel: 8 × 8 blocks by transpose(block_rows, out), where out
// is the panel at the block's first value; the edges one value at a time.
template <class Value, class Transpose>
void rows_to_panel(int64_t rows, int64_t n, const std::byte* src, int64_t ld_bytes, Value* panel, int64_t j0,
                   Transpose transpose) {
  constexpr int64_t kBytes = sizeof(Value), kStep = 64;
  const int64_t full_rows = rows / 8 * 8, full_n = n / 8 * 8;
  for (int64_t k0 = 0; k0 < full_n; k0 += kStep) {
    const int64_t k1 = std::min(full_n, k0 + kStep);
    for (int64_t r0 = 0; r0 < full_rows; r0 += 8)
      for (int64_t k = k0; k < k1; k += 8) {
        const void* block_rows[8];
        for (int i = 0; i < 8; ++i) block_rows[i] = src + (r0 + i) * ld_bytes + kBytes * k;
        transpose(block_rows, panel + k * kPanelWidth + j0 + r0);
      }
  }
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = r < full_rows ? full_n : 0; k < n; ++k)
      std::memcpy(panel + k * kPanelWidth + j0 + r, src + r * ld_bytes + kBytes * k, kBytes);
}

}  // namespace

void rows_to_panel32_avx2(int64_t rows, int64_t n, const std::byte* src, int64_t ld_bytes, uint32_t* panel,
                          int64_t j0) {
  // Written through float vectors: the bits are copied, never converted.
  rows_to_panel(rows, n, src, ld_bytes, panel, j0, [](const void* const block_rows[8], uint32_t* out) {
    transpose_8x8(block_rows, reinterpret_cast<float*>(out), kPanelWidth);
  });
}

void rows_to_panel16_avx2(int64_t rows, int64_t n, const std::byte* src, int64_t ld_bytes, uint16_t* panel,
                          int64_t j0) {
  rows_to_panel(rows, n, src, ld_bytes, panel, j0, transpose_8x8_16);
}

}  // namespace ffn::kernels
