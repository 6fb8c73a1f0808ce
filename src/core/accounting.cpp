#include "ffn/accounting.hpp"

#include "ffn/error.hpp"

namespace ffn {

Accounting account(const BlockConfig& c) {
  validate(c);
  Accounting a;
  a.weight_parameters = c.matrices() * c.d_model * c.hidden;
  a.bias_parameters = c.bias ? (c.variant.gated ? 2 : 1) * c.hidden + c.d_model : 0;
  a.parameters = a.weight_parameters + a.bias_parameters;
  a.matmul_flops_forward = 2 * a.weight_parameters;
  a.matmul_flops_forward_backward = 6 * a.weight_parameters;
  a.activations_per_token = c.hidden;
  a.elementwise_products_per_token = c.variant.gated ? c.hidden : 0;
  return a;
}

std::optional<int64_t> weight_bytes(const BlockConfig& c, const MatrixTypes& types) {
  validate(c);
  // Rows of gate and up have D weights (H rows each); rows of down have H (D rows).
  auto matrix = [&](WeightType t, int64_t rows, int64_t cols) -> std::optional<int64_t> {
    const auto& info = weight_type_info(t);
    if (cols % info.block_elements != 0) return std::nullopt;
    return rows * info.row_bytes(cols);
  };
  const auto gate = c.variant.gated ? matrix(types.gate, c.hidden, c.d_model) : std::optional<int64_t>(0);
  const auto up = matrix(types.up, c.hidden, c.d_model);
  const auto down = matrix(types.down, c.d_model, c.hidden);
  if (!gate || !up || !down) return std::nullopt;
  return *gate + *up + *down + 4 * account(c).bias_parameters;
}

std::optional<int64_t> weight_bytes(const BlockConfig& c, WeightType t) { return weight_bytes(c, MatrixTypes::all(t)); }

std::optional<int64_t> decode_bytes_per_token(const BlockConfig& c, WeightType t) {
  auto w = weight_bytes(c, t);
  if (!w) return std::nullopt;
  return *w + 2 * 4 * c.d_model;
}

}  // namespace ffn
