#include "ffn/tensor.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "ffn/error.hpp"

namespace ffn {

namespace {

// Bytes of physical memory (sysconf); INT64_MAX if the system does not say.
int64_t physical_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0 || pages > INT64_MAX / page) return INT64_MAX;
  return static_cast<int64_t>(pages) * page;
}

}  // namespace

void AlignedFloats::Free::operator()(float* p) const noexcept { std::free(p); }

AlignedFloats::AlignedFloats(int64_t count) {
  if (count < 0) throw Error("allocation of " + std::to_string(count) + " floats: negative size");
  if (count == 0) return;
  // Round the byte size up to the 64-byte alignment, as aligned_alloc requires.
  constexpr int64_t kMaxFloats = (INT64_MAX - 63) / 4;
  if (count > kMaxFloats) throw Error("allocation of " + std::to_string(count) + " floats overflows");
  const auto bytes = static_cast<size_t>((count * 4 + 63) / 64 * 64);
  static const int64_t memory = physical_memory_bytes();
  if (static_cast<int64_t>(bytes) > memory)
    throw Error("allocation of " + std::to_string(count) + " floats (" + std::to_string(bytes) +
                " bytes) exceeds this machine's memory (" + std::to_string(memory) + " bytes)");
  // Large arrays (weights, [T][H] activations) are placed on 2 MiB boundaries and offered
  // transparent huge pages: touching a fresh 4 KiB page costs a fault (≈ 10 µs in a
  // virtual machine), and zeroing a 45 MB hidden tensor page by page took 120 ms — as long
  // as a seventh of the forward that used it.
  constexpr size_t kHugePage = size_t(2) << 20;
  const bool huge = bytes >= kHugePage;
  const size_t alloc_bytes = huge ? (bytes + kHugePage - 1) / kHugePage * kHugePage : bytes;
  auto* p = static_cast<float*>(std::aligned_alloc(huge ? kHugePage : 64, alloc_bytes));
  if (p && huge) ::madvise(p, alloc_bytes, MADV_HUGEPAGE);  // a hint: refusal changes nothing
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

Matrix Matrix::clone() const {
  Matrix out(rows_, cols_);
  if (!empty()) std::memcpy(out.data(), data(), static_cast<size_t>(size()) * sizeof(float));
  return out;
}

int64_t token_count(std::span<const int64_t> shape, int64_t d_model, const std::string& what) {
  const std::string D = std::to_string(d_model);
  if (shape.size() != 1 && shape.size() != 2)
    throw Error(what + " must have shape [T, " + D + "] or [" + D + "], got " + std::to_string(shape.size()) +
                " dimensions");
  if (shape.back() != d_model)
    throw Error(what + " has " + std::to_string(shape.back()) + " features but the block has d_model " + D);
  return shape.size() == 2 ? shape[0] : 1;
}

}  // namespace ffn
