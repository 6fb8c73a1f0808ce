// read_window (tensor_window.hpp): the one decoder of tensor windows to f32.
#include "io/tensor_window.hpp"

#include <cstring>
#include <vector>

#include "core/weight_type_table.hpp"

namespace ffn::io {

void read_window(WeightType type, const std::byte* data, int64_t cols, int64_t r0, int64_t r1, int64_t c0, int64_t c1,
                 float* out) {
  const int64_t width = c1 - c0;
  if (width == 0 || r0 == r1) return;
  const WeightTypeTraits& t = weight_type_traits(type);
  const int64_t block = t.info.block_elements, row_bytes = t.info.row_bytes(cols);
  // The whole blocks covering [c0, c1) of a row: [b0, b1).
  const int64_t b0 = c0 / block * block, b1 = (c1 + block - 1) / block * block;
  std::vector<float> covered(b0 == c0 && b1 == c1 ? 0 : static_cast<size_t>(b1 - b0));
  for (int64_t r = r0; r < r1; ++r) {
    const std::byte* row = data + r * row_bytes + t.info.row_bytes(b0);
    float* to = out + (r - r0) * width;
    if (covered.empty()) {
      t.to_f32(row, to, width);
    } else {
      t.to_f32(row, covered.data(), b1 - b0);
      std::memcpy(to, covered.data() + (c0 - b0), sizeof(float) * static_cast<size_t>(width));
    }
  }
}

}  // namespace ffn::io
