#include "parallel/scratch.hpp"

#include <array>
#include <string>

#include "ffn/block.hpp"
#include "ffn/error.hpp"

namespace ffn {
namespace {

thread_local std::array<AlignedFloats, static_cast<size_t>(Scratch::count)> t_buffers;

}  // namespace

MatrixView scratch_matrix(Scratch slot, int64_t rows, int64_t cols) {
  if (rows < 0 || cols < 0 || (cols != 0 && rows > INT64_MAX / cols))
    throw Error("scratch of " + std::to_string(rows) + " × " + std::to_string(cols) + ": invalid size");
  AlignedFloats& buffer = t_buffers[static_cast<size_t>(slot)];
  if (buffer.size() < rows * cols) buffer = AlignedFloats(rows * cols);
  return {buffer.data(), rows, cols, cols};
}

std::byte* scratch_bytes(Scratch slot, int64_t bytes) {
  return reinterpret_cast<std::byte*>(scratch_matrix(slot, 1, (bytes + 3) / 4).data);
}

int64_t scratch_held_bytes() {
  int64_t bytes = 0;
  for (const auto& b : t_buffers) bytes += b.size() * int64_t(sizeof(float));
  return bytes;
}

void release_scratch() {
  for (auto& b : t_buffers) b = AlignedFloats();
}

}  // namespace ffn
