// The roofs ffn bench judges rows against (internal to the tool): the f32 FMA chains', the
// memory's, and the dot instructions' its kernels multiply with, and which of them judges a
// row of given weight types. Shared by the dense rows (cmd_bench.cpp) and the
// mixture-of-experts rows (bench_moe.cpp).
#pragma once

#include "ffn/inference_block.hpp"
#include "ffn/thread_pool.hpp"

namespace ffn::cli {

struct MeasuredRoofs {
  double compute = 0;   // GFLOP/s of f32 FMA chains
  double memory = 0;    // GB/s of a streaming read
  double bf16_dot = 0;  // GFLOP/s of vdpbf16ps chains; 0 unless asked for and present
  double int8_dot = 0;  // G operations/s of the integer dot chains; 0 unless asked for and present
};

// Which compute roof judges a row set's rows: that of the instruction its kernels multiply
// with — the integer dot chains (vpdpbusd; AVX2's vpmaddubsw + vpmaddwd) where every matrix's
// kernel dots bytes (q8_0 or q8_K activations: 4 multiply-adds a lane per instruction, so
// the FMA chains' roof would be up to 4× too low and call decode compute-bound),
// vdpbf16ps's where every one dots bf16 — else the FMA chains'. Each: its name in the JSON
// rows, its field of MeasuredRoofs, and the loop that measures it.
struct ComputeRoof {
  const char* name;
  double MeasuredRoofs::*value;
  double (*measure)(ThreadPool& pool, int reps);
};
extern const ComputeRoof kFmaRoof, kBf16DotRoof, kInt8DotRoof;
// The roof of `types` on the active ISA; the FMA chains' where `measured` has no value for
// the instruction's roof (no such loop on this ISA, or not measured).
const ComputeRoof& compute_roof_of(const MatrixTypes& types);
const ComputeRoof& compute_roof_of(const MatrixTypes& types, const MeasuredRoofs& measured);

// The memory roof: a streaming read of a 1 GiB buffer (far beyond any last-level cache),
// made once for a run. The kernel takes longer to give a process 1 GiB of zeroed pages than
// the roof takes to read it five times (a buffer made for each measurement, at the start,
// beside every row and at the end, was 55 % of a one-row bench's time), so a run keeps one;
// its pages stay resident, and the rows' RSS leaves them out (resident_mb).
class MemoryRoof {
 public:
  MemoryRoof();
  // The memory roof now, in GB/s: best of `reps` rounds.
  double measure(ThreadPool& pool, int reps) const;
  // The buffer's resident size, in MB (10^6 bytes): all of it, as it is written when made.
  double resident_mb() const;

 private:
  Matrix buffer_;
};

// The roofs of this machine now: the compute loops, then the memory roof, each best of 5.
MeasuredRoofs measure_roofs(ThreadPool& pool, const MemoryRoof& memory, bool bf16_dot, bool int8_dot);

// The header's lines for the dot roofs a run measured (none when it measured neither).
void print_dot_roofs(const MeasuredRoofs& r);

}  // namespace ffn::cli
