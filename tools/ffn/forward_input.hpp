// The tokens `ffn forward` reads from --input, for one process or many.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "ffn/tensor.hpp"
#include "io/npy.hpp"

namespace ffn::cli {

// --input as T tokens of D features: [T, D], or a single token [D] (the library's
// token_count, naming the file otherwise).
struct Tokens {
  NpyArray x;
  int64_t T;
};
inline Tokens read_tokens(const std::string& input, int64_t D) {
  NpyArray x = read_npy(input);
  const int64_t T = token_count(x.shape, D, input);
  return {std::move(x), T};
}

}  // namespace ffn::cli
