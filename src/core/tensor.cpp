#include "ffn/tensor.hpp"

#include <cstdlib>
#include <cstring>
#include <string>

#include "ffn/error.hpp"

namespace ffn {

void AlignedFloats::Free::operator()(float* p) const noexcept { std::free(p); }

AlignedFloats::AlignedFloats(int64_t count) {
  if (count < 0) throw Error("allocation of " + std::to_string(count) + " floats: negative size");
  if (count == 0) return;
  // Round the byte size up to the 64-byte alignment, as aligned_alloc requires.
  constexpr int64_t kMaxFloats = (INT64_MAX - 63) / 4;
  if (count > kMaxFloats) throw Error("allocation of " + std::to_string(count) + " floats overflows");
  const auto bytes = static_cast<size_t>((count * 4 + 63) / 64 * 64);
  auto* p = static_cast<float*>(std::aligned_alloc(64, bytes));
  if (!p)
    throw Error("allocation of " + std::to_string(count) + " floats (" + std::to_string(bytes) +
                " bytes) failed: not enough memory");
  std::memset(p, 0, bytes);
  data_.reset(p);
  size_ = count;
}

Matrix::Matrix(int64_t rows, int64_t cols) {
  if (rows < 0 || cols < 0)
    throw Error("matrix of " + std::to_string(rows) + " × " + std::to_string(cols) + ": negative size");
  if (cols != 0 && rows > INT64_MAX / cols)
    throw Error("matrix of " + std::to_string(rows) + " × " + std::to_string(cols) + ": size overflows");
  storage_ = AlignedFloats(rows * cols);
  rows_ = rows;
  cols_ = cols;
}

}  // namespace ffn
