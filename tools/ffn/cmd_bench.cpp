// ffn bench: forward time of one block over token counts and weight types, each row judged
// against the roofline of this machine measured in the same run:
//   roofline time = max(bytes moved / memory roof, FLOPs / compute roof)
//   efficiency    = roofline time / measured time
// Bytes are the weights in the row's type plus the activations read and written; FLOPs the
// matrix products (2 per multiply-add).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>

#include "across_processes.hpp"
#include "bench_backward.hpp"
#include "bench_peers.hpp"
#include "bench_rows.hpp"
#include "commands.hpp"
#include "ffn/accounting.hpp"
#include "ffn/atomic_file.hpp"
#include "ffn/backward.hpp"
#include "ffn/block.hpp"
#include "ffn/inference_block.hpp"
#include "ffn/error.hpp"
#include "ffn/isa.hpp"
#include "ffn/presets.hpp"
#include "ffn/roofs.hpp"
#include "format.hpp"
#include "machine.hpp"

namespace ffn::cli {
namespace {

struct BenchOptions {
  std::string preset;
  std::string variant = "swiglu";
  std::optional<int64_t> d;
  std::optional<int64_t> hidden;
  std::string dtypes = "f32";
  std::string tokens = "1,4,16,64,256,1024";
  int threads = ThreadPool::default_threads();
  int reps = 5;
  bool backward = false;
  bool peers = false;
  std::string json_path;
  bool tp = false;
};

// Resident memory now (Linux /proc/self/statm: resident pages in the second field).
double rss_mb() {
  std::ifstream statm("/proc/self/statm");
  long long total = 0, resident = 0;
  statm >> total >> resident;
  return double(resident) * double(sysconf(_SC_PAGESIZE)) / 1e6;
}

struct MeasuredRoofs {
  double compute = 0;   // GFLOP/s of f32 FMA chains
  double memory = 0;    // GB/s of a streaming read
  double bf16_dot = 0;  // GFLOP/s of vdpbf16ps chains; 0 unless asked for and present
};

// The memory roof now: a 1 GiB streaming read (far beyond any last-level cache), best of
// `reps` rounds.
double measure_memory_roof(ThreadPool& pool, int reps) {
  const Matrix big(1 << 14, 1 << 14);  // 1 GiB, zero-filled (so its pages exist) on allocation
  return measure_read_gbps(big.data(), size_t(big.size()) * 4, pool, reps);
}

// The roofs of this machine now: the compute loops, then the memory roof, each best of 5.
MeasuredRoofs measure_roofs(ThreadPool& pool, bool bf16_dot) {
  MeasuredRoofs r;
  r.compute = measure_compute_roof_gflops(pool, 5);
  r.memory = measure_memory_roof(pool, 5);
  if (bf16_dot) r.bf16_dot = measure_bf16_dot_roof_gflops(pool, 5);
  return r;
}

// The roofs beside each forward row: the memory roof and the row's compute roof (the FMA
// chains', or vdpbf16ps's for bf16 dot rows) measured again just after the row (best of 3),
// and the row judged against the mean of that and the one just before it (the previous
// row's of the same kind, or the run's first). Memory bandwidth drifts most on this shared
// machine (28–84 GB/s within an hour), but a busy neighbour can take the FMA ports too: a
// run's bf16 roof once read 581 GFLOP/s at its start against 900 at its end.
constexpr int kBesideReps = 3;

// Warm-up: at least one forward and at least kWarmUpMs of them. After another process
// has had the cores (a peer), the scheduler may leave two of the pool's threads on one
// core for a few tens of ms (measured: 20–32 ms at d = 256), which the first timings
// would otherwise carry.
constexpr double kWarmUpMs = 100;

double median_ms(const InferenceBlock& block, const Matrix& x, Matrix& y, ThreadPool& pool, int reps) {
  const auto warm_up_start = std::chrono::steady_clock::now();
  do block.forward(x.view(), y.view(), &pool);
  while (std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - warm_up_start).count() <
         kWarmUpMs);
  std::vector<double> ms;
  for (int r = 0; r < reps; ++r) {
    const auto start = std::chrono::steady_clock::now();
    block.forward(x.view(), y.view(), &pool);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// The input of every row at T tokens: uniform in [-1, 1), the same for every type and run.
Matrix bench_input(int64_t T, int64_t D) {
  Matrix x(T, D);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int64_t i = 0; i < x.size(); ++i) x.data()[i] = dist(rng);
  return x;
}

void run_bench(const BenchOptions& o) {
  BlockConfig config;
  std::string label;
  if (!o.preset.empty()) {
    config = find_preset(o.preset).config();
    label = o.preset;
  } else {
    if (!o.d) throw Error("bench: give --preset P, or --d N (with --variant V)");
    config = resolve({parse_variant(o.variant), *o.d, o.hidden, {}, false});
    label = variant_name(config.variant);
  }
  std::vector<WeightType> types;
  for (const auto& t : split_list(o.dtypes)) types.push_back(parse_weight_type(t));
  std::vector<int64_t> token_counts;
  for (const auto& t : split_list(o.tokens)) {
    int64_t v = 0;
    try {
      v = std::stoll(t);
    } catch (const std::exception&) {
      throw Error("tokens = '" + t + "': not a number");
    }
    if (v < 1 || v > 65536) throw Error("tokens = " + t + ": must be in [1, 65536]");
    token_counts.push_back(v);
  }
  // The results are written at the end of a run of minutes: a path that cannot be written fails now.
  if (!o.json_path.empty()) check_file_writable(o.json_path, "--json");
  if (o.tp) return run_bench_across_processes({config, label, token_counts, o.threads, o.reps, o.json_path});
  ThreadPool pool(o.threads);
  const MachineDescription machine = describe_machine();
  const Accounting acc = account(config);
  std::printf("ffn bench — %s: %s, d_model %lld, hidden %lld; %d thread%s, kernels %s\n", label.c_str(),
              variant_name(config.variant).c_str(), static_cast<long long>(config.d_model),
              static_cast<long long>(config.hidden), o.threads, o.threads == 1 ? "" : "s",
              std::string(isa_name(active_isa())).c_str());
  std::printf("%s\n", machine_line(machine).c_str());
  std::fflush(stdout);

  // Packed bf16 blocks on AVX512_BF16 run bf16 dot products: their rows are judged against
  // that instruction's roof (twice the FMA's FLOPs per instruction), measured likewise.
  const bool bf16_rows = std::find(types.begin(), types.end(), WeightType::bf16) != types.end();
  const MeasuredRoofs start = measure_roofs(pool, bf16_rows);
  const double compute = start.compute, memory = start.memory, bf16_compute = start.bf16_dot;
  std::printf(
      "roofs (this run): compute %s GFLOP/s (independent FMA chains on every thread, best of 5), memory %s GB/s "
      "(streaming read of 1 GiB, best of 5 rounds of 3 read patterns)\n"
      "efficiency: against these roofs; beside: against the memory roof and the row's compute roof measured again "
      "just before and just after the row (mean of the two, best of 3 rounds each)\n\n",
      fixed(compute, 1).c_str(), fixed(memory, 1).c_str());
  const Roofs roofs{compute, memory};
  if (bf16_compute > 0)
    std::printf("bf16 rows: activations rounded to bf16 and dotted by vdpbf16ps (AVX512_BF16; FFN_ISA=avx512 keeps "
                "them f32), judged against its roof: %s GFLOP/s (the same chains, best of 5)\n\n",
                fixed(bf16_compute, 1).c_str());
  print_bench_header();

  nlohmann::json rows = nlohmann::json::array();
  // Made once for inference, as `ffn forward` and ffn.load run it.
  auto typed_block = [&](WeightType type) { return InferenceBlock(Block::random(config, 1, &pool), type, &pool); };
  const int64_t t_max = *std::max_element(token_counts.begin(), token_counts.end());
  std::string workspace;  // per type, at t_max tokens
  double peak_rss = 0;  // sampled after every row, before the memory roof's 1 GiB buffer exists
  double memory_before = memory, compute_before = compute, bf16_compute_before = bf16_compute;
  for (WeightType type : types) {
    const auto bytes = weight_bytes(config, type);
    if (!bytes) {
      std::printf("%-6s  skipped: rows of %lld or %lld are not whole blocks of 32\n",
                  std::string(weight_type_info(type).name).c_str(), static_cast<long long>(config.d_model),
                  static_cast<long long>(config.hidden));
      continue;
    }
    const InferenceBlock typed = typed_block(type);
    const std::string path = typed.describe();
    workspace += (workspace.empty() ? "" : "; ") + std::string(weight_type_name(type)) + " " +
                 fixed(double(typed.workspace_bytes(t_max, o.threads)) / 1e6, 1) + " MB";
    for (int64_t T : token_counts) {
      const Matrix x = bench_input(T, config.d_model);
      Matrix y(T, config.d_model);
      const double ms = median_ms(typed, x, y, pool, o.reps);
      const double row_rss = rss_mb();
      peak_rss = std::max(peak_rss, row_rss);
      const bool dot = type == WeightType::bf16 && bf16_compute > 0;
      const double memory_after = measure_memory_roof(pool, kBesideReps);
      const double memory_beside = 0.5 * (memory_before + memory_after);
      memory_before = memory_after;
      double& compute_before_row = dot ? bf16_compute_before : compute_before;
      const double compute_after =
          dot ? measure_bf16_dot_roof_gflops(pool, kBesideReps) : measure_compute_roof_gflops(pool, kBesideReps);
      const double compute_beside = 0.5 * (compute_before_row + compute_after);
      compute_before_row = compute_after;
      BenchRow r;
      r.dtype = std::string(weight_type_info(type).name);
      r.pass = "forward";
      r.tokens = T;
      r.ms = ms;
      r.flops = double(acc.matmul_flops_forward) * double(T);
      r.weight_bytes = double(*bytes);
      r.moved_bytes = double(*bytes) + 8.0 * double(T * config.d_model);
      r.path = path;
      const double row_compute = dot ? bf16_compute : compute;
      const Roofs beside{compute_beside, memory_beside};
      rows.push_back(print_bench_row(r, Roofs{row_compute, memory}, config, o.threads, &beside));
      rows.back()["rss_mb"] = row_rss;
    }
  }
  if (o.peers) {
    // The row's block again (the same seed), one type at a time, so that no block is kept
    // through the other types' rows (peak RSS stays theirs).
    std::optional<InferenceBlock> block;
    std::string block_type;
    report_peers(config, o.threads, o.reps, rows, [&](const std::string& dtype, int64_t T) {
      if (dtype != block_type) {
        block.reset();
        block = typed_block(parse_weight_type(dtype));
        block_type = dtype;
      }
      const Matrix x = bench_input(T, config.d_model);
      Matrix y(T, config.d_model);
      return median_ms(*block, x, y, pool, o.reps);
    });
  }
  if (o.backward) {
    std::printf(
        "\ntraining step (forward_train + backward), f32; useful FLOPs 6·W per token; kept for backward per "
        "token: %s bytes saved mode, %s bytes recompute mode\n",
        grouped(saved_bytes_per_token(config, false)).c_str(), grouped(saved_bytes_per_token(config, true)).c_str());
    print_bench_header();
    bench_backward(Block::random(config, 1, &pool), token_counts, roofs, pool, o.reps, rows);
    peak_rss = std::max(peak_rss, rss_mb());
  }
  // Forward keeps the hidden values, a tile per thread, and x and h in the formats the
  // kernels take (InferenceBlock::workspace_bytes), beyond the weights, x and y.
  std::printf("\npeak RSS over the rows %s MB; workspace beyond the weights at T = %lld: %s\n",
              fixed(peak_rss, 0).c_str(), static_cast<long long>(t_max), workspace.c_str());
  // The roofs again: a machine that was busier at the start than later (others share it)
  // measured roofs too low there, and every efficiency of the run is overstated.
  const MeasuredRoofs end = measure_roofs(pool, bf16_rows);
  std::printf("roofs at the end of the run: compute %s GFLOP/s, memory %s GB/s", fixed(end.compute, 1).c_str(),
              fixed(end.memory, 1).c_str());
  if (end.bf16_dot > 0) std::printf(", bf16 dot %s GFLOP/s", fixed(end.bf16_dot, 1).c_str());
  std::printf("\n");
  const double drift =
      std::max({end.compute / compute, end.memory / memory, bf16_compute > 0 ? end.bf16_dot / bf16_compute : 0.0});
  if (drift > 1.1)
    std::printf("WARNING: a roof measured %s%% higher at the end than at the start: the machine was busier then, so "
                "this run's efficiencies are overstated; run it again when the machine is quiet\n",
                fixed(100.0 * (drift - 1.0), 0).c_str());
  if (!o.json_path.empty()) {
    nlohmann::json roofs_json{{"compute_gflops", compute}, {"memory_gbps", memory}};
    if (bf16_compute > 0) roofs_json["bf16_dot_gflops"] = bf16_compute;
    roofs_json["at_end"] = {{"compute_gflops", end.compute}, {"memory_gbps", end.memory}};
    if (end.bf16_dot > 0) roofs_json["at_end"]["bf16_dot_gflops"] = end.bf16_dot;
    nlohmann::json out{{"roofs", roofs_json},
                       {"isa", std::string(isa_name(active_isa()))},
                       {"machine", machine_json(machine)},
                       {"rows", rows}};
    write_file_atomically(o.json_path, out.dump(2) + "\n");
  }
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("bench", "Forward speed against this machine's roofline, measured in the same run");
  auto o = std::make_shared<BenchOptions>();
  auto* preset = cmd->add_option("--preset", o->preset, "a real model's MLP shape, e.g. llama2-7b");
  auto* variant = cmd->add_option("--variant", o->variant, "block variant")->capture_default_str();
  auto* d = cmd->add_option("--d", o->d, "model width");
  auto* hidden = cmd->add_option("--hidden", o->hidden, "hidden width (default: the variant's rule)");
  for (auto* opt : {variant, d, hidden}) preset->excludes(opt);
  cmd->add_option("--dtype", o->dtypes, "comma-separated weight types: f32,bf16,f16,q8_0,q4_0")->capture_default_str();
  cmd->add_option("--tokens", o->tokens, "comma-separated token counts")->capture_default_str();
  cmd->add_option("--threads", o->threads, "worker threads")->check(CLI::Range(1, 4096))->capture_default_str();
  cmd->add_option("--reps", o->reps, "timed repetitions per row (median shown)")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  cmd->add_flag("--peers", o->peers,
                "also time the same block with oneDNN's matmul (f32 rows) and PyTorch (the seeds' module; f32 "
                "and bf16 rows), each between two fresh timings of ffn's row");
  cmd->add_flag("--backward", o->backward,
                "also time the training step (forward_train + backward, f32, saved and recompute modes)");
  cmd->add_option("--json", o->json_path, "also write the results as JSON to this file");
  cmd->add_flag("--tp", o->tp,
                "under mpirun: split the block across the processes (f32) and report the all-reduce's share");
  cmd->callback([o] { run_bench(*o); });
}

}  // namespace ffn::cli
