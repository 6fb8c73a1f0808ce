#include "ffn/accounting.hpp"

#include <array>

#include "ffn/error.hpp"

namespace ffn {

const std::vector<WeightTypeInfo>& weight_types() {
  static const std::vector<WeightTypeInfo> all{
      {WeightType::f32, "f32", 1, 4},
      {WeightType::bf16, "bf16", 1, 2},
      {WeightType::f16, "f16", 1, 2},
      {WeightType::q8_0, "q8_0", 32, 34},  // f16 scale + 32 × int8
      {WeightType::q4_0, "q4_0", 32, 18},  // f16 scale + 32 × 4-bit
  };
  return all;
}

const WeightTypeInfo& weight_type_info(WeightType t) {
  for (const auto& i : weight_types())
    if (i.type == t) return i;
  throw Error("weight type " + std::to_string(static_cast<int>(t)) + " is unknown");
}

WeightType parse_weight_type(std::string_view name) {
  std::string names;
  for (const auto& i : weight_types()) {
    if (i.name == name) return i.type;
    names += (names.empty() ? "" : ", ") + std::string(i.name);
  }
  throw Error("weight type '" + std::string(name) + "' is unknown; accepted: " + names);
}

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

std::optional<int64_t> weight_bytes(const BlockConfig& c, WeightType t) {
  validate(c);
  const auto& info = weight_type_info(t);
  // Rows of gate/up have D weights; rows of down have H.
  if (c.d_model % info.block_elements != 0 || c.hidden % info.block_elements != 0) return std::nullopt;
  const int64_t in_proj_rows = (c.matrices() - 1) * c.hidden;  // gate and up: H rows each
  const int64_t bytes = in_proj_rows * (c.d_model / info.block_elements) * info.block_bytes +
                        c.d_model * (c.hidden / info.block_elements) * info.block_bytes;
  return bytes + 4 * account(c).bias_parameters;
}

std::optional<int64_t> decode_bytes_per_token(const BlockConfig& c, WeightType t) {
  auto w = weight_bytes(c, t);
  if (!w) return std::nullopt;
  return *w + 2 * 4 * c.d_model;
}

}  // namespace ffn
