// Rows of 32-bit values laid into a panel's columns (contract in kernels.hpp), 8 rows × 8
// values at a time transposed in registers (transpose_avx2.hpp), 64 values of k at a time
// so that the writes stay within 16 KiB of the panel; the edges one value at a time.
// Compiled with -mavx2 (this file only); called only when the CPU has it.
#include <algorithm>
#include <cstring>

#include "kernels/avx2/transpose_avx2.hpp"
#include "kernels/kernels.hpp"

namespace ffn::kernels {

void rows_to_panel32_avx2(int64_t rows, int64_t n, const std::byte* src, int64_t ld_bytes, uint32_t* panel,
                          int64_t j0) {
  const int64_t full_rows = rows / 8 * 8, full_n = n / 8 * 8;
  // The panel written through float vectors: the bits are copied, never converted.
  auto* out = reinterpret_cast<float*>(panel);
  constexpr int64_t kStep = 64;
  for (int64_t k0 = 0; k0 < full_n; k0 += kStep) {
    const int64_t k1 = std::min(full_n, k0 + kStep);
    for (int64_t r0 = 0; r0 < full_rows; r0 += 8)
      for (int64_t k = k0; k < k1; k += 8) {
        const void* block_rows[8];
        for (int i = 0; i < 8; ++i) block_rows[i] = src + (r0 + i) * ld_bytes + 4 * k;
        transpose_8x8(block_rows, out + k * kPanelWidth + j0 + r0, kPanelWidth);
      }
  }
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = r < full_rows ? full_n : 0; k < n; ++k)
      std::memcpy(panel + k * kPanelWidth + j0 + r, src + r * ld_bytes + 4 * k, 4);
}

}  // namespace ffn::kernels
