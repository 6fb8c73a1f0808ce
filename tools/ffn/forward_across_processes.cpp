// ffn forward under mpirun: every rank loads its slice of the checkpoint's block (its share
// of the hidden units, distributed.hpp) and runs it on the same tokens; one all-reduce gives
// every rank y, and rank 0 writes it. A mixture-of-experts layer goes to the expert-parallel
// path instead.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <variant>

#include "across_processes.hpp"
#include "ffn/checkpoint.hpp"
#include "ffn/distributed.hpp"
#include "ffn/error.hpp"
#include "ffn/isa.hpp"
#include "ffn/thread_pool.hpp"
#include "forward_input.hpp"
#include "io/npy.hpp"

namespace ffn::cli {
namespace {

void run(const ForwardAcrossProcesses& o, Communicator& comm) {
  LoadOptions load;
  load.layer = o.layer;
  if (!o.variant.empty()) load.variant = parse_variant(o.variant);
  if (!o.dtype.empty()) load.type = parse_weight_type(o.dtype);
  const int threads = threads_per_process(o.threads);
  ThreadPool pool(threads);
  // Each rank reads only its slice of the checkpoint's tensors (for safetensors, only those
  // bytes of the mapping), each matrix in the type the file stores it in or in --dtype, as
  // one process runs it (ffn forward). The slice's edges fall on whole blocks (granule):
  // q8_0 / q4_0 blocks run along rows, and the slice's columns of W_down start on one.
  const Checkpoint checkpoint(o.weights);
  const LayerInfo info = checkpoint.inspect(load);
  // A mixture of experts splits by experts instead (forward_moe_across_processes.cpp).
  if (info.is_moe()) return run_expert_parallel_forward(o, checkpoint, load, std::get<MoeConfig>(info.config), comm);
  const BlockConfig whole = std::get<BlockConfig>(info.config);
  const int64_t granule = hidden_granule(load.type.value_or(info.file_types.down));
  const HiddenSlice slice = hidden_slice(whole.hidden, comm.rank(), comm.size(), granule);
  LoadedStoredWeights loaded = checkpoint.load_stored(load, slice.begin, slice.end, &pool);
  // The down bias is added once across ranks: by rank 0.
  if (comm.rank() != 0 && whole.bias) std::fill_n(loaded.weights.down_bias.data(), whole.d_model, 0.0f);
  const TensorParallelInferenceBlock tp(InferenceBlock(loaded.config, loaded.weights, &pool), whole, slice, comm);
  const int64_t D = tp.config().d_model;
  const auto [x, T] = read_tokens(o.input, D);

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
        variant_name(tp.config().variant).c_str(), loaded.scheme.c_str(), static_cast<long long>(o.layer),
        loaded.activation_source.c_str(), static_cast<long long>(D), static_cast<long long>(tp.config().hidden),
        tp.config().bias ? " bias" : "", comm.size(),
        static_cast<long long>(hidden_slice(whole.hidden, comm.size() - 1, comm.size(), granule).size()),
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
