// ffn bench for mixture-of-experts presets (bench_moe.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ffn/moe.hpp"

namespace ffn::cli {

struct MoeBenchOptions {
  std::vector<std::string> dtypes;  // weight types, every matrix of every expert in one
  std::vector<int64_t> tokens;
  int threads = 1;
  int reps = 5;
  std::string json_path;
};

// One layer of the preset at its real shapes with random weights: a row per type and T.
void run_moe_bench(const MoePreset& preset, const MoeBenchOptions& options);

}  // namespace ffn::cli
