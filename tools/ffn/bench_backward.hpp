// ffn bench --backward: the training step of one block, forward_train + backward, in f32,
// judged against the roofline on the useful FLOPs 6·W·T (2·W forward, 4·W backward; W the
// weight count): the measure, also for recompute mode, whose 2 extra products
// (1 for 2-matrix blocks) are not counted as useful.
// Bytes charged: the weights read 3 times (forward, dH = dY·W_down, dX = dU·W_up + dG·W_gate),
// the gradients read and written once, and x, y, dy, dx.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "bench_rows.hpp"
#include "ffn/block.hpp"
#include "ffn/thread_pool.hpp"

namespace ffn::cli {

// Prints one row per (mode, T) for modes saved and recompute, appending the JSON rows.
void bench_backward(const Block& block, const std::vector<int64_t>& token_counts, const Roofs& roofs, ThreadPool& pool,
                    int reps, nlohmann::json& rows);

}  // namespace ffn::cli
