// One row of ffn bench's table: a timed pass judged against the roofline of this run,
//   roofline time = max(bytes moved / memory roof, FLOPs / compute roof)
//   efficiency    = roofline time / measured time
// printed as a table line and returned as the JSON row. With `beside`, the row is also
// judged against roofs measured beside it (column "beside", JSON efficiency_beside and
// roofs_beside): on a shared machine whose memory bandwidth drifts by tens of per cent
// within minutes, the roofs of the run's start can be far from those the row met.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "ffn/config.hpp"
#include "ffn/tensor.hpp"

namespace ffn::cli {

struct Roofs {
  double compute_gflops = 0;
  double memory_gbps = 0;
};

struct BenchRow {
  std::string dtype;        // weight type
  std::string pass;         // "forward", "fwd+bwd", "fwd+bwd (recompute)"
  int64_t tokens = 0;       // T
  double ms = 0;            // median time of the pass
  double flops = 0;         // useful FLOPs of the pass (matrix products, 2 per multiply-add)
  double weight_bytes = 0;  // bytes of weights read once (for the GB/s column)
  double moved_bytes = 0;   // bytes the roofline charges: weights (times they are read), gradients, activations
  std::string path;         // which kernels ran
};

// The tokens a row runs on: T × D uniform in [-1, 1), the same for every type and run of a
// seed (the usual rows take seed 7).
Matrix bench_tokens(int64_t T, int64_t D, uint32_t seed = 7);

void print_bench_header();
nlohmann::json print_bench_row(const BenchRow& row, const Roofs& roofs, const BlockConfig& config, int threads,
                               const Roofs* beside = nullptr);

}  // namespace ffn::cli
