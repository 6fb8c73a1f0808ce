// What the subcommands share across processes (across_processes.hpp).
#include "across_processes.hpp"

#include <cstdio>
#include <thread>

#include "ffn/distributed.hpp"
#include "ffn/thread_pool.hpp"

namespace ffn::cli {

int threads_per_process(int requested) {
  if (requested != ThreadPool::default_threads()) return requested;
  const int bound = ThreadPool::default_threads();
  const int machine = int(std::max(1u, std::thread::hardware_concurrency()));
  if (!launched_with_several_processes() || bound < machine) return bound;
  return std::max(1, machine / Communicator::world().local_size());
}

Collective* data_parallel_group() {
  if (!launched_with_several_processes()) return nullptr;
  Communicator& comm = Communicator::world();
  comm.set_reduction(Reduction::reduce_broadcast);
  if (comm.rank() != 0) {
    std::freopen("/dev/null", "w", stdout);
    std::freopen("/dev/null", "w", stderr);
  }
  return &comm;
}

}  // namespace ffn::cli
