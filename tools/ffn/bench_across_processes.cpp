// ffn bench --tp under mpirun: the block split across the P processes (tensor parallelism,
// distributed.hpp), timed per forward and split into each rank's slice and the all-reduce,
// beside the whole block on one process with the same threads, measured in the same run.
//
// Counting: a forward all-reduces y, T·D floats. Each process contributes its partial
// [T][D], 4·D bytes per token; all P together put 4·D·P bytes per token into the sum.
// "alone ms" is the same all-reduce timed by itself (no compute before it), and "bus GB/s"
// follows nccl-tests from it: bytes of y × 2(P−1)/P / time — what each process's link
// carries in a ring all-reduce, comparable across P.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>

#include "across_processes.hpp"
#include "ffn/distributed.hpp"
#include "ffn/error.hpp"
#include "ffn/isa.hpp"
#include "format.hpp"
#include "io/atomic_file.hpp"
#include "machine.hpp"
#include "measure/roofs.hpp"

namespace ffn::cli {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Row {
  int64_t tokens = 0;
  double total_ms = 0, local_ms = 0, reduce_ms = 0, single_ms = 0, alone_ms = 0;
};

// The all-reduce of y by itself, every rank starting together: the transport's cost at
// this size without any rank's compute before it. Median over reps of the slowest rank.
double time_allreduce_alone(Communicator& comm, Matrix& y, int reps) {
  comm.sum(y.data(), y.size());  // warm-up
  std::vector<double> ms;
  for (int r = 0; r < reps; ++r) {
    comm.barrier();
    const auto start = Clock::now();
    comm.sum(y.data(), y.size());
    ms.push_back(comm.max(ms_since(start)));
  }
  return median(ms);
}

// Medians over reps (every rank starts each rep together) of: the slowest rank's forward
// and slice times; and the shortest all-reduce time of the ranks — that of the last to
// arrive, which waits for no other: the transfer itself, without load imbalance.
Row time_split(const TensorParallelBlock& tp, const Matrix& x, Matrix& y, ThreadPool& pool, int reps) {
  Communicator& comm = tp.communicator();
  tp.forward(x.view(), y.view(), &pool);  // warm-up
  std::vector<double> total, local, reduce;
  for (int r = 0; r < reps; ++r) {
    TensorParallelTimes t;
    comm.barrier();
    const auto start = Clock::now();
    tp.forward(x.view(), y.view(), &pool, &t);
    const double ms = ms_since(start);
    total.push_back(comm.max(ms));
    local.push_back(comm.max(t.local_ms));
    reduce.push_back(-comm.max(-t.reduce_ms));
  }
  return {x.rows(), median(total), median(local), median(reduce), 0};
}

// The whole block on rank 0 alone, the others waiting.
double time_whole(const Block& whole, const Matrix& x, ThreadPool& pool, int reps) {
  Matrix y(x.rows(), x.cols());
  whole.forward(x.view(), y.view(), &pool);
  std::vector<double> ms;
  for (int r = 0; r < reps; ++r) {
    const auto start = Clock::now();
    whole.forward(x.view(), y.view(), &pool);
    ms.push_back(ms_since(start));
  }
  return median(ms);
}

void run(const BenchAcrossProcesses& o, Communicator& comm) {
  const BlockConfig& c = o.config;
  const int threads = threads_per_process(o.threads);
  ThreadPool pool(threads);
  const int P = comm.size();
  std::unique_ptr<Block> whole = std::make_unique<Block>(Block::random(c, 1, &pool));
  const TensorParallelBlock tp(*whole, comm, 1);
  if (comm.rank() != 0) whole.reset();  // only rank 0 runs the one-process comparison
  const bool root = comm.rank() == 0;
  const MachineDescription machine = describe_machine();  // process 0's is printed
  // Roofs of each process while all of them measure at once (what a process gets when all
  // run): the FMA loop on its threads, then a streaming read of 256 MiB per process.
  comm.barrier();
  const double compute = -comm.max(-measure_compute_roof_gflops(pool, 5));
  double memory = 0;
  {
    const Matrix big(1 << 13, 1 << 13);
    comm.barrier();
    memory = -comm.max(-measure_read_gbps(big.data(), size_t(big.size()) * 4, pool, 5));
  }
  if (root) {
    std::printf(
        "ffn bench --tp — %s: %s, d_model %lld, hidden %lld, f32, split over %d processes (hidden %lld…%lld "
        "each); %d thread%s per process, kernels %s\n",
        o.label.c_str(), variant_name(c.variant).c_str(), (long long)c.d_model, (long long)c.hidden, P,
        (long long)hidden_slice(c.hidden, P - 1, P).size(), (long long)tp.slice().size(), threads,
        threads == 1 ? "" : "s", std::string(isa_name(active_isa())).c_str());
    std::printf("%s (process 0)\n", machine_line(machine).c_str());
    std::printf(
        "each forward all-reduces y = T·%lld floats: %lld bytes per token from each process (%lld from all "
        "%d); times are the slowest process's, medians of %d\n\n",
        (long long)c.d_model, (long long)(4 * c.d_model), (long long)(4 * c.d_model * P), P, o.reps);
    std::printf("%6s %10s %10s %14s %9s %13s %10s %13s %8s %11s\n", "T", "ms", "slice ms", "all-reduce ms", "share",
                "alone ms", "bus GB/s", "1 process ms", "speedup", "bytes/token");
    std::fflush(stdout);
  }
  nlohmann::json rows = nlohmann::json::array();
  for (int64_t T : o.tokens) {
    Matrix x(T, c.d_model), y(T, c.d_model);
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    for (int64_t i = 0; i < x.size(); ++i) x.data()[i] = dist(rng);
    Row row = time_split(tp, x, y, pool, o.reps);
    row.alone_ms = time_allreduce_alone(comm, y, std::max(o.reps, 20));
    comm.barrier();
    if (root) row.single_ms = time_whole(*whole, x, pool, o.reps);
    comm.barrier();
    if (!root) continue;
    const double bytes = 4.0 * double(T * c.d_model);
    const double bus = bytes * 2.0 * double(P - 1) / double(P) / (row.alone_ms * 1e-3) / 1e9;
    std::printf("%6lld %10s %10s %14s %9s %13s %10s %13s %8s %11lld\n", (long long)T, fixed(row.total_ms, 3).c_str(),
                fixed(row.local_ms, 3).c_str(), fixed(row.reduce_ms, 3).c_str(),
                fixed(row.reduce_ms / row.total_ms, 3).c_str(), fixed(row.alone_ms, 3).c_str(), fixed(bus, 2).c_str(),
                fixed(row.single_ms, 3).c_str(), fixed(row.single_ms / row.total_ms, 2).c_str(),
                (long long)(4 * c.d_model));
    std::fflush(stdout);
    rows.push_back({{"tokens", T},
                    {"ms", row.total_ms},
                    {"slice_ms", row.local_ms},
                    {"allreduce_ms", row.reduce_ms},
                    {"allreduce_share", row.reduce_ms / row.total_ms},
                    {"bus_gbps", bus},
                    {"one_process_ms", row.single_ms},
                    {"bytes_per_token_per_process", 4 * c.d_model}});
  }
  if (root && !o.json_path.empty()) {
    nlohmann::json out{{"roofs_per_process", {{"compute_gflops", compute}, {"memory_gbps", memory}}},
                       {"variant", variant_name(c.variant)},
                       {"d", c.d_model},
                       {"hidden", c.hidden},
                       {"processes", P},
                       {"threads_per_process", threads},
                       {"isa", std::string(isa_name(active_isa()))},
                       {"machine", machine_json(machine)},
                       {"rows", rows}};
    write_file_atomically(o.json_path, out.dump(2) + "\n");
  }
}

}  // namespace

void run_bench_across_processes(const BenchAcrossProcesses& o) {
  if (!launched_with_several_processes())
    throw Error("bench --tp: launch under mpirun with at least 2 processes, e.g. mpirun -np 2 ffn bench --tp ...");
  Communicator& comm = Communicator::world();
  try {
    run(o, comm);
  } catch (const Error& e) {
    std::fprintf(stderr, "ffn: error (process %d of %d): %s\n", comm.rank(), comm.size(), e.what());
    comm.abort(1);
  }
}

}  // namespace ffn::cli
