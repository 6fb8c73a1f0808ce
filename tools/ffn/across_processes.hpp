// The ffn command across the processes of mpirun: when launched with several processes
// (ffn::launched_with_several_processes), forward and bench split the block across them
// (tensor parallelism; a mixture of experts by experts: expert parallelism) and compare
// splits every batch (data parallelism). Rank 0 prints and writes; the others compute.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "distributed/launch.hpp"
#include "ffn/collective.hpp"
#include "ffn/config.hpp"
#include "ffn/moe.hpp"

namespace ffn {
class Checkpoint;
class Communicator;
struct LoadOptions;
}  // namespace ffn

namespace ffn::cli {

// Worker threads for each of the processes sharing this machine: `requested` when given
// (≠ ThreadPool::default_threads()); else the cores this process is bound to when mpirun
// bound it to fewer than the machine has, else the machine's cores over the processes on it.
int threads_per_process(int requested);

struct ForwardAcrossProcesses {
  std::string weights, variant, dtype, input, output;
  int64_t layer = 0;
  int threads = 1;
  bool quiet = false;
};
void run_forward_across_processes(const ForwardAcrossProcesses& o);
// Its mixture-of-experts case: the layer split by experts (forward_moe_across_processes.cpp).
// Errors are ffn::Error, ended across ranks by run_forward_across_processes.
// `whole`: the layer's configuration (Checkpoint::inspect).
void run_expert_parallel_forward(const ForwardAcrossProcesses& o, const Checkpoint& checkpoint, const LoadOptions& load,
                                 const MoeConfig& whole, Communicator& comm);

struct BenchAcrossProcesses {
  BlockConfig config;
  std::string label;
  std::vector<int64_t> tokens;
  int threads = 1;
  int reps = 5;
  std::string json_path;
};
void run_bench_across_processes(const BenchAcrossProcesses& o);

// For ffn compare under mpirun: MPI's world with sums that reach every rank as rank 0's bits
// (so the model stays identical everywhere); stdout and stderr of ranks other than 0 go
// to /dev/null. nullptr when not launched with several processes.
Collective* data_parallel_group();

}  // namespace ffn::cli
