// Rows of 32- and 16-bit values laid into a panel's columns (contracts in kernels.hpp), one
// value at a time: 64 values of k at a time, so that the rows are read front to back while
// the scattered writes stay within a few KiB of the panel.
#include <algorithm>
#include <cstring>

#include "kernels/scalar/scalar_kernels.hpp"

namespace ffn::kernels {

namespace {

template <class Value>
void rows_to_panel(int64_t rows, int64_t n, const std::byte* src, int64_t ld_bytes, Value* panel, int64_t j0) {
  constexpr int64_t kStep = 64, kBytes = sizeof(Value);
  for (int64_t k0 = 0; k0 < n; k0 += kStep) {
    const int64_t kn = std::min(kStep, n - k0);
    for (int64_t r = 0; r < rows; ++r) {
      const std::byte* s = src + r * ld_bytes + kBytes * k0;
      for (int64_t k = 0; k < kn; ++k) std::memcpy(panel + (k0 + k) * kPanelWidth + j0 + r, s + kBytes * k, kBytes);
    }
  }
}

}  // namespace

void rows_to_panel32_scalar(int64_t rows, int64_t n, const std::byte* src, int64_t ld_bytes, uint32_t* panel,
                            int64_t j0) {
  rows_to_panel(rows, n, src, ld_bytes, panel, j0);
}

void rows_to_panel16_scalar(int64_t rows, int64_t n, const std::byte* src, int64_t ld_bytes, uint16_t* panel,
                            int64_t j0) {
  rows_to_panel(rows, n, src, ld_bytes, panel, j0);
}

}  // namespace ffn::kernels
