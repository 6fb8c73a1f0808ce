// Accounting of a block: parameters, FLOPs and bytes — where the third matrix of a gated
// block costs at inference. All counts are exact integers.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "ffn/config.hpp"

namespace ffn {

// Storage types for weight matrices. q8_0 / q4_0 are ggml's block formats: 32 weights per
// block with an f16 scale — 34 and 18 bytes per block. A block format needs the row length
// (in_features) to be a multiple of 32. Biases are always stored as f32.
enum class WeightType { f32, bf16, f16, q8_0, q4_0 };

struct WeightTypeInfo {
  WeightType type;
  std::string_view name;
  int64_t block_elements;  // weights per block (1 for plain types)
  int64_t block_bytes;     // bytes per block
};
const std::vector<WeightTypeInfo>& weight_types();
const WeightTypeInfo& weight_type_info(WeightType t);
WeightType parse_weight_type(std::string_view name);  // throws ffn::Error

struct Accounting {
  int64_t weight_parameters = 0;  // matrices only: (3 if gated else 2)·D·H
  int64_t bias_parameters = 0;    // (2H + D) if gated, (H + D) otherwise; 0 without bias
  int64_t parameters = 0;         // the two above
  // FLOPs per token, counting a multiply-add as 2. Matrix products only: the O(H)
  // elementwise work (bias adds, activation, gate product) is listed separately.
  int64_t matmul_flops_forward = 0;           // 2 · weight_parameters
  int64_t matmul_flops_forward_backward = 0;  // 6 · weight_parameters (forward, dX, dW)
  int64_t activations_per_token = 0;          // H evaluations of the activation
  int64_t elementwise_products_per_token = 0; // H for gated blocks (act(g) ⊙ u), else 0
};
Accounting account(const BlockConfig& config);

// Bytes of the weight matrices stored as type t, plus f32 biases; nullopt when t is a
// block format and some matrix's row length is not a multiple of its block size.
std::optional<int64_t> weight_bytes(const BlockConfig& config, WeightType t);

// Bytes one decode step (T = 1) moves per token: every weight byte once, plus reading x
// and writing y (4·D bytes each, f32). The hidden vector (4·H bytes) stays in cache and is
// not counted. At T tokens the weight share is divided by T.
std::optional<int64_t> decode_bytes_per_token(const BlockConfig& config, WeightType t);

}  // namespace ffn
