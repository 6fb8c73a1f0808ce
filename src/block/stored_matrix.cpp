// StoredMatrix: a matrix in a weight type's row layout, encoded from f32 and decoded back
// through the weight-type table's reference conversions.
#include <string>

#include "core/weight_type_table.hpp"
#include "ffn/error.hpp"
#include "ffn/inference_block.hpp"

namespace ffn {

int64_t StoredMatrix::row_bytes() const { return weight_type_info(type).row_bytes(cols); }

StoredMatrix StoredMatrix::encode(const Matrix& m, WeightType t, const std::string& name, ThreadPool* pool) {
  const auto& traits = weight_type_traits(t);
  StoredMatrix out;
  out.type = t;
  if (m.empty()) return out;
  const int64_t n = m.cols();
  if (n % traits.info.block_elements != 0)
    throw Error(name + " rows have " + std::to_string(n) + " weights; " + std::string(traits.info.name) +
                " stores rows in blocks of " + std::to_string(traits.info.block_elements));
  out.rows = m.rows();
  out.cols = n;
  const int64_t row_bytes = out.row_bytes();
  out.bytes.resize(static_cast<size_t>(out.rows * row_bytes));
  ThreadPool& p = pool ? *pool : default_thread_pool();
  // Rows are encoded independently; an error in any (a non-finite value of a block type)
  // is rethrown here by the pool, naming the matrix.
  try {
    p.run([&](int ith, int nth) {
      const auto [r0, r1] = split_range(out.rows, ith, nth);
      for (int64_t r = r0; r < r1; ++r) traits.from_f32(m.row(r), out.bytes.data() + r * row_bytes, n);
    });
  } catch (const Error& e) {
    throw Error(name + ": " + e.what());
  }
  return out;
}

Matrix StoredMatrix::decode() const {
  Matrix m(rows, cols);
  const auto& traits = weight_type_traits(type);
  for (int64_t r = 0; r < rows; ++r) traits.to_f32(row(r), m.row(r), cols);
  return m;
}

}  // namespace ffn
