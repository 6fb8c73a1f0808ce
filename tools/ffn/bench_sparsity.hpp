// ffn bench --sparsity: activation-sparse decode (SparseDecode) against the dense block, one
// weight type at a time, in alternating rounds of one sitting.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ffn/config.hpp"
#include "ffn/inference_block.hpp"
#include "ffn/thread_pool.hpp"

namespace ffn::cli {

struct SparsityRowSet {
  std::string dtype;
  std::function<InferenceBlock(const SparseDecode&)> make;  // the same weights, with this sparse decode
};

struct SparsityBench {
  BlockConfig config;
  std::vector<SparsityRowSet> sets;
  std::vector<double> targets;  // fractions of hidden channels dropped, each in [0, 1)
  std::vector<int64_t> token_counts;
  int reps = 5;
  int rounds = 3;
  // --down-sparsity: > 0 (gated blocks) gives each sparse block also the down threshold
  // that drops this share of the calibration tokens' channels by |h| alone
  // (SparseDecode::down_threshold), and max_kept_share 1, so that a token the gate keeps
  // most channels of still takes the sparse path (the share counts the gate's kept channels
  // for down too: inference_block.hpp).
  double down_target = 0.0;
  // Bytes read through the caches before each timed forward (0: none), so that a forward
  // reads its weights from memory, as in a model, where the other layers pass through
  // between two forwards of one (cmd_bench.cpp: four times the largest cache). A block
  // timed again and again keeps part of its bytes in the last-level cache, the more of them
  // the fewer it reads: the sparse rows most.
  int64_t flush_bytes = 0;
};

// "0,0.5,0.7" or "0,50,70" (per cent when any value is above 1) → fractions; ffn::Error
// naming a value outside [0, 1) or [0, 100).
std::vector<double> parse_sparsity_targets(const std::string& list);

// Prints the table and appends a JSON row per (type, target, T) to `rows`.
void bench_sparsity(const SparsityBench& b, ThreadPool& pool, double memory_gbps, nlohmann::json& rows);

}  // namespace ffn::cli
