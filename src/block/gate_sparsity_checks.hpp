// The paths that cannot compute Gemma 3n's Gaussian top-k on the gate
// (BlockConfig::gate_sparsity) refuse a block that has one, by name, rather than run it as a
// plain gated block — a different function.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

#include "ffn/config.hpp"
#include "ffn/error.hpp"

namespace ffn {

// Throws ffn::Error "<what> does not compute gate_sparsity … <why>" when config has one.
inline void refuse_gate_sparsity(const BlockConfig& config, std::string_view what, std::string_view why) {
  if (config.gate_sparsity <= 0.0) return;
  char value[32];
  std::snprintf(value, sizeof value, "%g", config.gate_sparsity);
  throw Error(std::string(what) + " does not compute gate_sparsity = " + value +
              " (Gemma 3n's Gaussian top-k on the gate): " + std::string(why));
}

}  // namespace ffn
