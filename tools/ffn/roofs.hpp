// Roofs measured in the same run as the figures they judge (see DESIGN.md).
#pragma once

#include <cstddef>

#include "ffn/thread_pool.hpp"

namespace ffn::cli {

// Memory roof: GB/s (10⁹ bytes/s) of a streaming read of `bytes` bytes at `data` by every
// thread of the pool, best of `reps`. The buffer must be far larger than the last-level
// cache for this to measure DRAM.
double measure_read_gbps(const void* data, size_t bytes, ThreadPool& pool, int reps);

}  // namespace ffn::cli
