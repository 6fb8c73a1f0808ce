// Copies of a block's weights for the tests: as they are, or rounded to the values a set of
// matrix types stores (the weights an InferenceBlock of those types computes with).
#pragma once

#include <utility>

#include "ffn/block.hpp"

namespace ffn::test {

inline Block copy_of(const Block& block) {
  Block out(block.config());
  const auto& w = block.weights();
  auto& o = out.weights();
  for (auto [dst, src] : {std::pair{&o.gate, &w.gate},
                          {&o.up, &w.up},
                          {&o.down, &w.down},
                          {&o.gate_bias, &w.gate_bias},
                          {&o.up_bias, &w.up_bias},
                          {&o.down_bias, &w.down_bias}})
    *dst = src->clone();
  return out;
}

inline Block rounded_copy(const Block& block, const MatrixTypes& types) {
  Block out = copy_of(block);
  round_weights_to(out, types);
  return out;
}

}  // namespace ffn::test
