// ffn forward under mpirun: every rank loads the checkpoint's block, keeps its slice of the
// hidden units (distributed.hpp), runs it on the same tokens; one all-reduce gives every
// rank y, and rank 0 writes it. The whole block is read and then sliced on every rank.
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "across_processes.hpp"
#include "ffn/checkpoint.hpp"
#include "ffn/distributed.hpp"
#include "ffn/error.hpp"
#include "ffn/isa.hpp"
#include "ffn/npy.hpp"
#include "ffn/thread_pool.hpp"

namespace ffn::cli {
namespace {

void run(const ForwardAcrossProcesses& o, Communicator& comm) {
  LoadOptions load;
  load.layer = o.layer;
  if (!o.variant.empty()) load.variant = parse_variant(o.variant);
  const int threads = threads_per_process(o.threads);
  ThreadPool pool(threads);
  // The whole block lives only until this rank's slice is cut from it.
  std::string scheme, activation_source;
  int64_t granule = 1;
  const TensorParallelBlock tp = [&] {
    LoadedBlock loaded = load_block(o.weights, load);
    if (!o.dtype.empty()) {
      const WeightType t = parse_weight_type(o.dtype);
      round_weights_to(loaded.block, t);
      granule = hidden_granule(t);
    }
    scheme = loaded.scheme;
    activation_source = loaded.activation_source;
    return TensorParallelBlock(loaded.block, comm, granule);
  }();
  const int64_t D = tp.config().d_model;

  NpyArray x = read_npy(o.input);
  if (x.shape.size() != 1 && x.shape.size() != 2)
    throw Error(o.input + ": expected an array of shape [T, " + std::to_string(D) + "] or [" + std::to_string(D) +
                "], got " + std::to_string(x.shape.size()) + " dimensions");
  const int64_t T = x.shape.size() == 2 ? x.shape[0] : 1;
  if (x.shape.back() != D)
    throw Error(o.input + ": tokens have " + std::to_string(x.shape.back()) + " features but the block in " +
                o.weights + " has d_model " + std::to_string(D));

  Matrix y(T, D);
  TensorParallelTimes times;
  comm.barrier();
  const auto start = std::chrono::steady_clock::now();
  tp.forward({x.data.data(), T, D, D}, y.view(), &pool, &times);
  const double ms =
      comm.max(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  const double local_ms = comm.max(times.local_ms), reduce_ms = comm.max(times.reduce_ms);
  if (comm.rank() != 0) return;
  write_npy(o.output, x.shape, y.data());
  if (!o.quiet)
    std::printf(
        "%s (%s names, layer %lld; activation from %s) d_model %lld hidden %lld%s split over %d processes "
        "(hidden %lld…%lld per process): %lld token%s in %.3f ms (slowest process: slice %.3f ms, all-reduce of "
        "%lld floats %.3f ms; %d thread%s each, %s) → %s\n",
        variant_name(tp.config().variant).c_str(), scheme.c_str(), static_cast<long long>(o.layer),
        activation_source.c_str(), static_cast<long long>(D), static_cast<long long>(tp.config().hidden),
        tp.config().bias ? " bias" : "", comm.size(),
        static_cast<long long>(hidden_slice(tp.config().hidden, comm.size() - 1, comm.size(), granule).size()),
        static_cast<long long>(tp.slice().size()), static_cast<long long>(T), T == 1 ? "" : "s", ms, local_ms,
        static_cast<long long>(T * D), reduce_ms, threads, threads == 1 ? "" : "s",
        std::string(isa_name(active_isa())).c_str(), o.output.c_str());
}

}  // namespace

void run_forward_across_processes(const ForwardAcrossProcesses& o) {
  Communicator& comm = Communicator::world();
  try {
    run(o, comm);
  } catch (const Error& e) {
    // The other ranks may be waiting in a collective: end them all.
    std::fprintf(stderr, "ffn: error (process %d of %d): %s\n", comm.rank(), comm.size(), e.what());
    comm.abort(1);
  }
}

}  // namespace ffn::cli
