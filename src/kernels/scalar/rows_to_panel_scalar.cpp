// Rows of 32-bit values laid into a panel's columns (contract in kernels.hpp), one value at
// a time: 64 values of k at a time, so that the rows are read front to back while the
// scattered writes stay within 16 KiB of the panel.
#include <algorithm>
#include <cstring>

#include "kernels/kernels.hpp"

namespace ffn::kernels {

void rows_to_panel32_scalar(int64_t rows, int64_t n, const std::byte* src, int64_t ld_bytes, uint32_t* panel,
                            int64_t j0) {
  constexpr int64_t kStep = 64;
  for (int64_t k0 = 0; k0 < n; k0 += kStep) {
    const int64_t kn = std::min(kStep, n - k0);
    for (int64_t r = 0; r < rows; ++r) {
      const std::byte* s = src + r * ld_bytes + 4 * k0;
      for (int64_t k = 0; k < kn; ++k) std::memcpy(panel + (k0 + k) * kPanelWidth + j0 + r, s + 4 * k, 4);
    }
  }
}

}  // namespace ffn::kernels
