// Roofs, measured in the same run as the figures they judge (see DESIGN.md): speed is
// reported as a fraction of what this machine can do now, never as an absolute time.
#pragma once

#include <cstddef>

#include "ffn/thread_pool.hpp"

namespace ffn {

// Compute roof: GFLOP/s of independent multiply-add chains on full vectors of the active
// ISA (enough chains to fill the FMA units) on every thread of the pool, best of `reps`.
double measure_compute_roof_gflops(ThreadPool& pool, int reps = 5);

// Memory roof: GB/s (10⁹ bytes/s) of a streaming read of `bytes` bytes at `data` by every
// thread of the pool, best of `reps`. The buffer must be far larger than the last-level
// cache for this to measure DRAM.
double measure_read_gbps(const void* data, size_t bytes, ThreadPool& pool, int reps = 5);

}  // namespace ffn
