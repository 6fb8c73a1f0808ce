// Windows of weight tensors, as f32 or as stored bytes (stored_read.hpp).
#include "io/stored_read.hpp"

#include <cstring>
#include <vector>

#include "ffn/error.hpp"

namespace ffn::io {

// Reads rows [r0, r0 + m.rows()) and columns [c0, c0 + m.cols()) of a weight in nn.Linear
// layout [out][in] into m; a Conv1D weight is stored [in][out], so its window is transposed.
void read_weight(const io::TensorSource& src, const std::string& name, bool conv1d, Matrix& m, int64_t r0,
                 int64_t c0) {
  if (!conv1d) return src.read_f32_window(name, r0, r0 + m.rows(), c0, c0 + m.cols(), m.data());
  Matrix stored(m.cols(), m.rows());
  src.read_f32_window(name, c0, c0 + m.cols(), r0, r0 + m.rows(), stored.data());
  for (int64_t i = 0; i < stored.rows(); ++i)
    for (int64_t o = 0; o < stored.cols(); ++o) m.row(o)[i] = stored.row(i)[o];
}

// Rows [r0, r1) and columns [c0, c1) of a weight in nn.Linear layout as a StoredMatrix of
// type `want`, or of the type the file stores it in when want is empty (f32 if that is no
// weight type). The file's bytes are copied as they are when it stores that type, in
// nn.Linear layout, and the columns fall on whole blocks; otherwise the window is read as
// f32 (which names the tensor and its type when ffn cannot read it) and encoded.
StoredMatrix read_stored(const io::TensorSource& src, const std::string& name, bool conv1d, int64_t r0, int64_t r1,
                         int64_t c0, int64_t c1, std::optional<WeightType> want, ThreadPool& pool) {
  const SourceTensor& tensor = src.tensor(name);
  // Whether the bytes are a weight type's rows in nn.Linear layout (a Conv1D weight's are not).
  const bool stored = !conv1d && tensor.type.has_value();
  const WeightType file_type = stored ? *tensor.type : WeightType::f32;
  // Its scales are checked (once per tensor) whether its bytes are used as they are or converted.
  const std::byte* data = stored ? src.checked_data(name) : nullptr;
  const WeightType t = want.value_or(file_type);
  const auto& info = weight_type_info(t);
  const auto& shape = tensor.shape;  // [.., rows][cols]: leading dimensions flattened
  int64_t file_rows = 1;
  for (size_t i = 0; i + 1 < shape.size(); ++i) file_rows *= shape[i];
  const int64_t file_cols = shape.empty() ? 1 : shape.back();
  if (stored && file_type == t && c0 % info.block_elements == 0 && c1 % info.block_elements == 0) {
    const int64_t file_row_bytes = info.row_bytes(file_cols);
    if (tensor.bytes != file_rows * file_row_bytes)
      throw Error(src.path() + ": tensor '" + name + "' holds " + std::to_string(tensor.bytes) + " bytes; " +
                  std::string(info.name) + " [" + std::to_string(file_rows) + ", " + std::to_string(file_cols) +
                  "] needs " + std::to_string(file_rows * file_row_bytes));
    StoredMatrix m;
    m.type = t;
    m.rows = r1 - r0;
    m.cols = c1 - c0;
    const int64_t row_bytes = m.row_bytes(), skip = info.row_bytes(c0);
    m.bytes.resize(static_cast<size_t>(m.rows * row_bytes));
    for (int64_t r = r0; r < r1; ++r)
      std::memcpy(m.bytes.data() + (r - r0) * row_bytes, data + r * file_row_bytes + skip,
                  static_cast<size_t>(row_bytes));
    return m;
  }
  Matrix f32(r1 - r0, c1 - c0);
  read_weight(src, name, conv1d, f32, r0, c0);
  return StoredMatrix::encode(f32, t, src.path() + ": tensor '" + name + "'", &pool);
}

}  // namespace ffn::io
