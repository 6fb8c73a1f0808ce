// The tokens `ffn forward` reads from --input, for one process or many.
#pragma once

#include <cstdint>
#include <string>

#include "ffn/error.hpp"
#include "ffn/npy.hpp"

namespace ffn::cli {

// --input as tokens of D features: [T, D], or a single token [D]; ffn::Error naming the
// file (and the checkpoint whose d_model it must match) otherwise.
inline NpyArray read_tokens(const std::string& input, const std::string& weights, int64_t D) {
  NpyArray x = read_npy(input);
  if (x.shape.size() != 1 && x.shape.size() != 2)
    throw Error(input + ": expected an array of shape [T, " + std::to_string(D) + "] or [" + std::to_string(D) +
                "], got " + std::to_string(x.shape.size()) + " dimensions");
  if (x.shape.back() != D)
    throw Error(input + ": tokens have " + std::to_string(x.shape.back()) + " features but the block in " + weights +
                " has d_model " + std::to_string(D));
  return x;
}

// T of an array read_tokens accepted.
inline int64_t token_count(const NpyArray& x) { return x.shape.size() == 2 ? x.shape[0] : 1; }

}  // namespace ffn::cli
