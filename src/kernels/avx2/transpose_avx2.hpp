// Laying weight rows into a panel 8 × 8 at a time with AVX (the packing routine of
// f32_gemm_nt_through_panels on AVX2 and AVX-512, and rows_to_panel32_avx2; include only
// from files compiled with -mavx2). Eight rows' 8 values of k are loaded, transposed in registers (unpack, shuffle,
// lane permute) and stored as 8 panel rows — 24 shuffles for 64 values, where the scalar
// loop does 64 scattered stores.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "kernels/f32_panel_tiles.hpp"

namespace ffn::kernels {

// An 8 × 8 block of 32-bit values: row i of the block at rows[i] (8 values, any
// alignment) stored as column i at out[c·ld_out + i], c < 8 (bits copied as they are).
inline void transpose_8x8(const void* const rows[8], float* out, int64_t ld_out) {
  __m256 r[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(static_cast<const float*>(rows[i]));
  __m256 t[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  __m256 u[8];
  for (int i = 0; i < 8; i += 4) {
    u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
    u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
    u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
  }
  // u[0..3] hold rows 0–3, u[4..7] rows 4–7, each as (c, c+4) halves.
  for (int i = 0; i < 4; ++i) {
    _mm256_storeu_ps(out + i * ld_out, _mm256_permute2f128_ps(u[i], u[i + 4], 0x20));
    _mm256_storeu_ps(out + (i + 4) * ld_out, _mm256_permute2f128_ps(u[i], u[i + 4], 0x31));
  }
}

struct AvxPanelPack {
  // panel[k][j] = B[j·ldb + k] for j < nr, k < kc; columns nr … 63 zero (as PortablePanelPack).
  static void rows_to_panel(const float* B, int64_t ldb, int64_t nr, int64_t kc, float* panel) {
    const int64_t full_j = nr / 8 * 8, full_k = kc / 8 * 8;
    for (int64_t j0 = 0; j0 < full_j; j0 += 8)
      for (int64_t k0 = 0; k0 < full_k; k0 += 8) {
        const void* rows[8];
        for (int i = 0; i < 8; ++i) rows[i] = B + (j0 + i) * ldb + k0;
        transpose_8x8(rows, panel + k0 * kPanelWidth + j0, kPanelWidth);
      }
    // The edges (rows past the last 8, k past the last 8) and the zero columns.
    for (int64_t j = 0; j < nr; ++j)
      for (int64_t k = j < full_j ? full_k : 0; k < kc; ++k) panel[k * kPanelWidth + j] = B[j * ldb + k];
    for (int64_t k = 0; k < kc; ++k)
      for (int64_t j = nr; j < kPanelWidth; ++j) panel[k * kPanelWidth + j] = 0.0f;
  }
};

}  // namespace ffn::kernels
