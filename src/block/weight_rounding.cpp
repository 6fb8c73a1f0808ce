// round_weights_to: a block's weights as a given weight type holds them (the table's
// reference quantiser, then its exact widening).
#include <string>
#include <vector>

#include "core/weight_type_table.hpp"
#include "ffn/block.hpp"
#include "ffn/error.hpp"

namespace ffn {
namespace {

// Rounds each row of m (length a multiple of t's block) in place.
void round_matrix(Matrix& m, const char* name, WeightType t) {
  if (m.empty() || t == WeightType::f32) return;
  const auto& traits = weight_type_traits(t);
  const int64_t n = m.cols();
  if (n % traits.info.block_elements != 0)
    throw Error(std::string(name) + " rows have " + std::to_string(n) + " weights; " + std::string(traits.info.name) +
                " stores rows in blocks of " + std::to_string(traits.info.block_elements));
  std::vector<std::byte> row(static_cast<size_t>(traits.info.row_bytes(n)));
  for (int64_t r = 0; r < m.rows(); ++r) {
    traits.from_f32(m.row(r), row.data(), n);
    traits.to_f32(row.data(), m.row(r), n);
  }
}

}  // namespace

void round_weights_to(Block& block, const MatrixTypes& types) {
  auto& w = block.weights();
  round_matrix(w.gate, "gate", types.gate);
  round_matrix(w.up, "up", types.up);
  round_matrix(w.down, "down", types.down);
}

void round_weights_to(Block& block, WeightType t) { round_weights_to(block, MatrixTypes::all(t)); }

}  // namespace ffn
