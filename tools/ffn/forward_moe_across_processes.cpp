// ffn forward under mpirun on a mixture-of-experts layer: expert parallelism
// (ffn/expert_parallel.hpp). Every rank loads the router, the shared experts and only its
// range of the routed experts; each rank takes a contiguous share of the input's tokens as
// its own (the first T mod P ranks one more), and the all-to-all forward sends each token's
// rows to its experts' ranks and back. The ranks' outputs are then gathered on every rank
// and rank 0 writes them: the same bits as one process's `ffn forward`.
#include <chrono>
#include <cstdio>
#include <optional>
#include <string>

#include "across_processes.hpp"
#include "ffn/checkpoint.hpp"
#include "ffn/error.hpp"
#include "ffn/expert_parallel.hpp"
#include "ffn/isa.hpp"
#include "ffn/thread_pool.hpp"
#include "forward_input.hpp"
#include "io/npy.hpp"

namespace ffn::cli {

void run_expert_parallel_forward(const ForwardAcrossProcesses& o, const Checkpoint& checkpoint, const LoadOptions& load,
                                 const MoeConfig& whole, Communicator& comm) {
  const int threads = threads_per_process(o.threads);
  ThreadPool pool(threads);
  const int P = comm.size();
  // expert_range refuses P > E on every rank alike (the same file), before anything is read.
  const ExpertRange mine = expert_range(whole.experts, comm.rank(), P);
  LoadedMoeExperts loaded = checkpoint.load_moe_experts(load, mine.begin, mine.end, &pool);
  const ExpertParallelMoe ep(loaded.config, std::move(loaded.router), std::move(loaded.experts),
                             std::move(loaded.shared), comm);
  const MoeConfig& c = ep.config();
  const int64_t D = c.d_model();
  const auto [x, T] = read_tokens(o.input, D);

  // This rank's tokens: rows t0 … t1 of the file; y gathers every rank's rows in rank order.
  std::vector<int64_t> rows(static_cast<size_t>(P));
  for (int q = 0; q < P; ++q) {
    const auto [a, b] = split_range(T, q, P);
    rows[q] = b - a;
  }
  const auto [t0, t1] = split_range(T, comm.rank(), P);
  Matrix y(T, D);
  ExpertParallelTimes times;
  comm.barrier();
  const auto start = std::chrono::steady_clock::now();
  ep.forward({x.data.data() + t0 * D, t1 - t0, D, D}, {y.row(t0), t1 - t0, D, D}, &pool, &times);
  const double ms =
      comm.max(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  comm.allgather_rows(y.data(), rows.data(), D);
  const double local_ms = comm.max(times.local_ms), exchange_ms = comm.max(times.exchange_ms);
  double rows_sent = double(times.rows_sent);
  comm.sum(&rows_sent, 1);
  if (comm.rank() != 0) return;
  write_npy(o.output, x.shape, y.data());
  if (o.quiet) return;
  std::string split;
  for (int q = 0; q < P; ++q) {
    const ExpertRange r = expert_range(c.experts, q, P);
    split += (q ? ", " : "") + std::to_string(r.begin) + "…" + std::to_string(r.end - 1);
  }
  std::printf(
      "mixture of experts (%s names, layer %lld; routing from %s; activation from %s): %lld %s experts of hidden "
      "%lld, top %lld by %s%s%s, d_model %lld, split over %d processes by experts (experts %s; shared experts, if "
      "any, on every process): %lld token%s (%lld…%lld per process) in %.3f ms (slowest process: local %.3f ms, "
      "all-to-all exchanges %.3f ms; %.0f rows of %lld floats sent between processes each way; %d thread%s each, "
      "%s) → %s\n",
      loaded.scheme.c_str(), static_cast<long long>(o.layer), loaded.routing_source.c_str(),
      loaded.activation_source.c_str(), static_cast<long long>(c.experts), variant_name(c.expert.variant).c_str(),
      static_cast<long long>(c.expert.hidden), static_cast<long long>(c.top_k),
      std::string(router_scoring_name(c.scoring)).c_str(), c.normalize_top_k ? ", renormalised" : "",
      c.shared_hidden > 0 ? (", shared experts of hidden " + std::to_string(c.shared_hidden)).c_str() : "",
      static_cast<long long>(D), P, split.c_str(), static_cast<long long>(T), T == 1 ? "" : "s",
      static_cast<long long>(rows[P - 1]), static_cast<long long>(rows[0]), ms, local_ms, exchange_ms, rows_sent,
      static_cast<long long>(D), threads, threads == 1 ? "" : "s", std::string(isa_name(active_isa())).c_str(),
      o.output.c_str());
}

}  // namespace ffn::cli
