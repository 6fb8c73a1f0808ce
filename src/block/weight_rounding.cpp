// round_weights_to: a block's weights as a given storage type holds them.
#include <string>
#include <vector>

#include "ffn/block.hpp"
#include "ffn/error.hpp"
#include "ffn/quant.hpp"

namespace ffn {
namespace {

// Rounds each row of m (length m.cols(), a multiple of 32 for block formats) in place.
void round_matrix(Matrix& m, const char* name, WeightType t) {
  if (m.empty()) return;
  const int64_t n = m.cols();
  if ((t == WeightType::q8_0 || t == WeightType::q4_0) && n % kQuantBlock != 0)
    throw Error(std::string(name) + " rows have " + std::to_string(n) + " weights; " +
                std::string(weight_type_info(t).name) + " stores rows in blocks of 32");
  std::vector<BlockQ8_0> q8(static_cast<size_t>(n / kQuantBlock));
  std::vector<BlockQ4_0> q4(static_cast<size_t>(n / kQuantBlock));
  for (int64_t r = 0; r < m.rows(); ++r) {
    float* row = m.row(r);
    switch (t) {
      case WeightType::f32: return;
      case WeightType::bf16:
        for (int64_t i = 0; i < n; ++i) row[i] = bf16_to_f32(f32_to_bf16(row[i]));
        break;
      case WeightType::f16:
        for (int64_t i = 0; i < n; ++i) row[i] = f16_to_f32(f32_to_f16(row[i]));
        break;
      case WeightType::q8_0:
        quantize_row_q8_0(row, q8.data(), n);
        dequantize_row_q8_0(q8.data(), row, n);
        break;
      case WeightType::q4_0:
        quantize_row_q4_0(row, q4.data(), n);
        dequantize_row_q4_0(q4.data(), row, n);
        break;
    }
  }
}

}  // namespace

void round_weights_to(Block& block, WeightType t) {
  auto& w = block.weights();
  round_matrix(w.gate, "gate", t);
  round_matrix(w.up, "up", t);
  round_matrix(w.down, "down", t);
}

}  // namespace ffn
