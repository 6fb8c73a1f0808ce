// Accounting of a block: parameters, FLOPs and bytes — where the third matrix of a gated
// block costs at inference. All counts are exact integers.
#pragma once

#include <cstdint>
#include <optional>

#include "ffn/config.hpp"
#include "ffn/weight_type.hpp"

namespace ffn {

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
// The same with each matrix in its own type.
std::optional<int64_t> weight_bytes(const BlockConfig& config, const MatrixTypes& types);

// Bytes one decode step (T = 1) moves per token: every weight byte once, plus reading x
// and writing y (4·D bytes each, f32). The hidden vector (4·H bytes) stays in cache and is
// not counted. At T tokens the weight share is divided by T.
std::optional<int64_t> decode_bytes_per_token(const BlockConfig& config, WeightType t);

}  // namespace ffn
