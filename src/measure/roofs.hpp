// Roofs, measured in the same run as the figures they judge (see DESIGN.md): speed is
// reported as a fraction of what this machine can do now, never as an absolute time.
#pragma once

#include <cstddef>
#include <string>

#include "ffn/thread_pool.hpp"

namespace ffn {

// Compute roof: GFLOP/s of independent multiply-add chains on full vectors of the active
// ISA (enough chains to fill the FMA units) on every thread of the pool, best of `reps`.
double measure_compute_roof_gflops(ThreadPool& pool, int reps = 5);

// What the roofs of the active ISA run, for a report to say which roof judges it, e.g.
// "f32_fma_roof_avx2: 12 FMA chains x 8 f32 lanes (256-bit ymm); stream_read_avx2: 32-byte
// loads". FFN_ISA=avx2 on an AVX-512 machine gets the ymm loops, so AVX2 kernels are judged
// by what AVX2 itself can do there.
std::string roof_loops_description();

// The compute roof of bf16 dot products (AVX512_BF16's vdpbf16ps or Arm's BFDOT, two
// multiply-adds per lane, the same chains), which packed bf16 blocks run on such a CPU
// (Isa::avx512_bf16, Arm's Isa::bf16); 0 where the active ISA has none.
double measure_bf16_dot_roof_gflops(ThreadPool& pool, int reps = 5);

// The compute roof of integer dot products of bytes (vpdpbusd, or AVX2's vpmaddubsw +
// vpmaddwd), which the integer panel kernels (q8_0, q4_0, the K-quants, the i-quants) run:
// giga-operations/s, a multiply-add of two bytes counting 2, the same chains; 0 where the
// active ISA has no such roof loop (scalar, plain NEON).
double measure_int8_dot_roof_gops(ThreadPool& pool, int reps = 5);
// What that roof runs, e.g. "int8_dot_roof_avx512_vnni: 24 chains x 16 int32 lanes"; "" where
// the active ISA has no integer roof loop.
std::string int8_roof_loop_description();

// Memory roof: GB/s (10⁹ bytes/s) of a streaming read of `bytes` bytes at `data` by every
// thread of the pool — each thread's share read in each of the active ISA's read patterns
// (kernels::stream_read_pattern: 4 streams × 4 lines a round, 2 × 1, 1 × 1, widest loads;
// this machine serves them at rates up to 1.25× apart) — best over `reps` rounds of all
// patterns. The buffer must be far larger than the last-level cache for this to measure
// DRAM.
double measure_read_gbps(const void* data, size_t bytes, ThreadPool& pool, int reps = 5);

}  // namespace ffn
