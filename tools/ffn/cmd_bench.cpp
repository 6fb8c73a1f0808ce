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
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "across_processes.hpp"
#include "bench_backward.hpp"
#include "bench_moe.hpp"
#include "bench_peers.hpp"
#include "bench_roofs.hpp"
#include "bench_rows.hpp"
#include "bench_sparsity.hpp"
#include "commands.hpp"
#include "ffn/accounting.hpp"
#include "ffn/backward.hpp"
#include "ffn/block.hpp"
#include "ffn/checkpoint.hpp"
#include "ffn/error.hpp"
#include "ffn/inference_block.hpp"
#include "ffn/isa.hpp"
#include "ffn/presets.hpp"
#include "format.hpp"
#include "io/atomic_file.hpp"
#include "machine.hpp"
#include "measure/roofs.hpp"
#include "roofline_svg.hpp"
#include "timing.hpp"

namespace ffn::cli {
namespace {

// --sparsity's token counts unless --tokens gives others: decode, one token to a few, where
// the sparse path is meant to run and where dense overtakes it. The bench forces every T
// through the sparse path, which from a few tokens reads nearly every row scattered, a token
// at a time: the usual counts up to 1024 took over ten minutes at the 7B shape, their rows
// from 256 tokens 3–3.8× the dense time.
constexpr const char* kSparsityTokens = "1,2,4,8";

struct BenchOptions {
  std::string preset;
  std::string weights;  // a checkpoint instead of a shape
  int64_t layer = 0;
  std::string variant_given;  // --variant when given (a checkpoint's own activation otherwise)
  bool dtype_given = false;
  std::string variant = "swiglu";
  std::optional<int64_t> d;
  std::optional<int64_t> hidden;
  std::string dtypes = "f32";
  std::string tokens = "1,4,16,64,256,1024";  // kSparsityTokens with --sparsity
  int threads = ThreadPool::default_threads();
  int reps = 5;
  bool backward = false;
  bool peers = false;
  double peer_budget_s = 20;  // per peer row: the peer's warm-up, then as many repetitions as fit
  std::string json_path;
  std::string svg_path;
  bool tp = false;
  std::string sparsity;                 // --sparsity: targets, sparse decode against dense instead of the usual rows
  std::optional<double> down_sparsity;  // --down-sparsity: with --sparsity, the down threshold's share
};

// Resident memory now (Linux /proc/self/statm: resident pages in the second field).
double rss_mb() {
  std::ifstream statm("/proc/self/statm");
  long long total = 0, resident = 0;
  statm >> total >> resident;
  return double(resident) * double(sysconf(_SC_PAGESIZE)) / 1e6;
}

// The roofs beside each forward row: the memory roof and the row's compute roof (the FMA
// chains', or vdpbf16ps's for bf16 dot rows) measured again just after the row (best of 3),
// and the row judged against the mean of that and the one just before it (the previous
// row's of the same kind, or the run's first). Memory bandwidth drifts most on this shared
// machine (28–84 GB/s within an hour), but a busy neighbour can take the FMA ports too: a
// run's bf16 roof once read 581 GFLOP/s at its start against 900 at its end.
constexpr int kBesideReps = 3;

// What a run measures: the block's shape, and one entry per set of weight types.
struct BenchPlan {
  BlockConfig config;
  std::string label;
  std::vector<int64_t> token_counts;
  // Each row set: its name, and how its block is made (random weights, or the checkpoint's),
  // dense or with a sparse decode.
  struct Rows {
    std::string dtype;
    MatrixTypes types;
    std::function<InferenceBlock(const SparseDecode&)> make;
  };
  std::vector<Rows> rows;
};

std::vector<int64_t> parse_token_counts(const std::string& list) {
  std::vector<int64_t> out;
  for (const auto& t : split_list(list)) {
    int64_t v = 0;
    try {
      v = std::stoll(t);
    } catch (const std::exception&) {
      throw Error("tokens = '" + t + "': not a number");
    }
    if (v < 1 || v > 65536) throw Error("tokens = " + t + ": must be in [1, 65536]");
    out.push_back(v);
  }
  return out;
}

// The block of --preset / --variant --d (random weights, in each --dtype), or of
// --weights (the layer's matrices in the types its file stores, or in each --dtype given).
BenchPlan plan_bench(const BenchOptions& o, ThreadPool& pool) {
  BenchPlan plan;
  plan.token_counts = parse_token_counts(o.tokens);
  std::vector<WeightType> types;
  if (o.dtype_given)
    for (const auto& t : split_list(o.dtypes)) types.push_back(parse_weight_type(t));
  if (!o.weights.empty()) {
    if (o.peers) throw Error("bench: --peers times random weights of a shape; give --preset or --d, not --weights");
    LoadOptions load;
    load.layer = o.layer;
    if (!o.variant_given.empty()) load.variant = parse_variant(o.variant_given);
    auto checkpoint = std::make_shared<Checkpoint>(o.weights);
    const LayerInfo info = checkpoint->inspect(load);
    if (info.is_moe())
      throw Error("bench: layer " + std::to_string(o.layer) + " of " + o.weights +
                  " is a mixture of experts; ffn bench --weights times dense layers");
    plan.config = std::get<BlockConfig>(info.config);
    plan.label = o.weights + " layer " + std::to_string(o.layer);
    const bool gated = plan.config.variant.gated;
    auto from_file = [checkpoint, load, &pool](std::optional<WeightType> t) {
      return [checkpoint, load, t, &pool](const SparseDecode& sparse) {
        LoadOptions in_type = load;
        in_type.type = t;
        in_type.sparse = sparse;
        Layer layer = checkpoint->load_layer(in_type, &pool);
        return std::get<InferenceBlock>(std::move(layer.block));
      };
    };
    if (!o.dtype_given)
      plan.rows.push_back({matrix_types_name(info.file_types, gated), info.file_types, from_file(std::nullopt)});
    for (WeightType t : types)
      plan.rows.push_back({std::string(weight_type_name(t)), MatrixTypes::all(t), from_file(t)});
    return plan;
  }
  if (!o.preset.empty()) {
    plan.config = find_preset(o.preset).config();
    plan.label = o.preset;
  } else {
    if (!o.d) throw Error("bench: give --preset P, or --d N (with --variant V), or --weights FILE");
    plan.config = resolve({parse_variant(o.variant), *o.d, o.hidden, {}, false});
    plan.label = variant_name(plan.config.variant);
  }
  if (types.empty()) types.push_back(WeightType::f32);
  for (WeightType t : types) {
    const BlockConfig c = plan.config;
    plan.rows.push_back(
        {std::string(weight_type_name(t)), MatrixTypes::all(t), [c, t, &pool](const SparseDecode& sparse) {
           return InferenceBlock(Block::random(c, 1, &pool), t, &pool, sparse);
         }});
  }
  return plan;
}

// The roofs a run's rows are judged against: those of its start, and those measured beside
// the previous row (the "before" half of each row's beside figure; the start's until then).
struct RunRoofs {
  MemoryRoof memory;  // the memory roof's buffer, kept for the run
  MeasuredRoofs start, before;
};

// "llama2-7b: swiglu, d_model 4096, hidden 11008": the header's and the picture's title.
std::string shape_line(const BenchPlan& plan) {
  return plan.label + ": " + variant_name(plan.config.variant) + ", d_model " + std::to_string(plan.config.d_model) +
         ", hidden " + std::to_string(plan.config.hidden);
}

void print_run_header(const BenchPlan& plan, const BenchOptions& o, const MachineDescription& machine,
                      const MeasuredRoofs& r) {
  std::printf("ffn bench — %s; %d thread%s, kernels %s\n", shape_line(plan).c_str(), o.threads,
              o.threads == 1 ? "" : "s", std::string(isa_name(active_isa())).c_str());
  std::printf("%s\n", machine_line(machine).c_str());
  std::printf(
      "roofs (this run): compute %s GFLOP/s (independent FMA chains on every thread, best of 5), memory %s GB/s "
      "(streaming read of 1 GiB, best of 5 rounds of 3 read patterns)\n"
      "efficiency: against these roofs; beside: against the memory roof and the row's compute roof measured again "
      "just before and just after the row (mean of the two, best of 3 rounds each)\n"
      "roof loops (those of the kernels' ISA, so FFN_ISA=avx2 is judged against AVX2's roofs): %s\n\n",
      fixed(r.compute, 1).c_str(), fixed(r.memory, 1).c_str(), roof_loops_description().c_str());
  print_dot_roofs(r);
}

// How many copies of a row set's block its rows time in turn. A block timed again and again
// keeps part of its weights in the last-level cache from one forward to the next (the
// cache's replacement keeps some lines of a stream several times its size), which a
// model's decode step — the other layers' weights passing through between two forwards of a
// layer — never has: on the Zen 4 development machine (32 MiB L3) one 7B SwiGLU block timed
// alone read 1.25× (q4_0) and 1.1× (q8_0) the bytes per second of three copies in turn
// (docs/performance.md). So the copies span at least 16× the largest cache Linux reports
// (32 MiB where it reports none), at most kMaxBlockCopies of them.
constexpr int kMaxBlockCopies = 8;
// The largest cache Linux reports, or 32 MiB where it reports none.
int64_t largest_cache_bytes(const MachineDescription& machine) {
  int64_t cache = 0;
  for (const CacheLevel& c : machine.caches) cache = std::max(cache, c.bytes);
  return cache > 0 ? cache : int64_t(32) << 20;
}
int block_copies(int64_t weight_bytes, const MachineDescription& machine) {
  const int64_t cache = largest_cache_bytes(machine);
  const int64_t wanted = (16 * cache + weight_bytes - 1) / std::max<int64_t>(weight_bytes, 1);
  return int(std::clamp<int64_t>(wanted, 1, kMaxBlockCopies));
}

// One forward row: timed (the copies of the block in turn, one forward each), then judged
// against the run's roofs and those beside it.
nlohmann::json forward_row(const BenchPlan& plan, const BenchPlan::Rows& spec,
                           const std::vector<InferenceBlock>& blocks, int64_t T, const BenchOptions& o, RunRoofs& roofs,
                           ThreadPool& pool) {
  const BlockConfig& config = plan.config;
  const InferenceBlock& block = blocks.front();
  const Matrix x = bench_tokens(T, config.d_model);
  Matrix y(T, config.d_model);
  size_t next = 0;
  const double ms = median_ms(
      [&] {
        blocks[next].forward(x.view(), y.view(), &pool);
        next = (next + 1) % blocks.size();
      },
      o.reps);
  // Judged against the compute roof of the instruction the row's kernels multiply with
  // (compute_roof_of), measured likewise.
  const ComputeRoof* roof = &compute_roof_of(spec.types, roofs.start);
  const double memory_after = roofs.memory.measure(pool, kBesideReps);
  const double memory_beside = 0.5 * (roofs.before.memory + memory_after);
  roofs.before.memory = memory_after;
  double& compute_before = roofs.before.*roof->value;
  const double compute_after = roof->measure(pool, kBesideReps);
  const double compute_beside = 0.5 * (compute_before + compute_after);
  compute_before = compute_after;
  BenchRow r;
  r.dtype = spec.dtype;
  r.pass = "forward";
  r.tokens = T;
  r.ms = ms;
  r.flops = double(account(config).matmul_flops_forward) * double(T);
  r.weight_bytes = double(block.weight_bytes());
  r.moved_bytes = r.weight_bytes + 8.0 * double(T * config.d_model);
  r.path = block.describe();
  const Roofs beside{compute_beside, memory_beside};
  const Roofs run{roofs.start.*roof->value, roofs.start.memory};
  nlohmann::json row = print_bench_row(r, run, config, o.threads, &beside);
  row["block_copies"] = blocks.size();
  row["compute_roof"] = roof->name;
  return row;
}

// The roofs again at the end: a machine that was busier at the start than later (others
// share it) measured roofs too low there, and every efficiency of the run is overstated.
MeasuredRoofs report_end_roofs(const MeasuredRoofs& start, const MemoryRoof& memory, ThreadPool& pool) {
  const MeasuredRoofs end = measure_roofs(pool, memory, start.bf16_dot > 0, start.int8_dot > 0);
  std::printf("roofs at the end of the run: compute %s GFLOP/s, memory %s GB/s", fixed(end.compute, 1).c_str(),
              fixed(end.memory, 1).c_str());
  if (end.bf16_dot > 0) std::printf(", bf16 dot %s GFLOP/s", fixed(end.bf16_dot, 1).c_str());
  if (end.int8_dot > 0) std::printf(", integer dot %s Gop/s", fixed(end.int8_dot, 1).c_str());
  std::printf("\n");
  const double drift = std::max({end.compute / start.compute, end.memory / start.memory,
                                 start.bf16_dot > 0 ? end.bf16_dot / start.bf16_dot : 0.0,
                                 start.int8_dot > 0 ? end.int8_dot / start.int8_dot : 0.0});
  if (drift > 1.1)
    std::printf(
        "WARNING: a roof measured %s%% higher at the end than at the start: the machine was busier then, so "
        "this run's efficiencies are overstated; run it again when the machine is quiet\n",
        fixed(100.0 * (drift - 1.0), 0).c_str());
  return end;
}

// The run's roofs as --json writes them: those of the start, and at_end.
nlohmann::json roofs_json(const MeasuredRoofs& start, const MeasuredRoofs& end) {
  nlohmann::json roofs{
      {"compute_gflops", start.compute}, {"memory_gbps", start.memory}, {"loops", roof_loops_description()}};
  if (start.bf16_dot > 0) roofs["bf16_dot_gflops"] = start.bf16_dot;
  if (start.int8_dot > 0) {
    roofs["int8_dot_gops"] = start.int8_dot;
    roofs["int8_dot_loop"] = int8_roof_loop_description();
  }
  roofs["at_end"] = {{"compute_gflops", end.compute}, {"memory_gbps", end.memory}};
  if (end.bf16_dot > 0) roofs["at_end"]["bf16_dot_gflops"] = end.bf16_dot;
  if (end.int8_dot > 0) roofs["at_end"]["int8_dot_gops"] = end.int8_dot;
  return roofs;
}

void write_bench_json(const BenchOptions& o, const nlohmann::json& roofs, const MachineDescription& machine,
                      const nlohmann::json& rows) {
  nlohmann::json out{{"roofs", roofs},
                     {"isa", std::string(isa_name(active_isa()))},
                     {"machine", machine_json(machine)},
                     {"rows", rows}};
  if (o.peers) {
    out["peer_budget_s"] = o.peer_budget_s;
    const std::string ceiling = peer_isa_ceiling();
    out["peer_isa_ceiling"] = ceiling.empty() ? nlohmann::json(nullptr) : nlohmann::json(ceiling);
  }
  write_file_atomically(o.json_path, out.dump(2) + "\n");
}

// --sparsity: the roofs, then sparse decode against dense (bench_sparsity.cpp).
void run_sparsity_bench(const BenchOptions& o, const BenchPlan& plan, const MachineDescription& machine,
                        ThreadPool& pool) {
  if (o.peers || o.backward || !o.svg_path.empty())
    throw Error("bench: --sparsity times sparse decode against dense; not with --peers, --backward or --svg");
  SparsityBench b{plan.config, {}, parse_sparsity_targets(o.sparsity), plan.token_counts, o.reps};
  if (o.down_sparsity && *o.down_sparsity > 0) {
    if (!plan.config.variant.gated)
      throw Error("bench: --down-sparsity thresholds h, the input of down, apart from the gate; a " +
                  variant_name(plan.config.variant) + " block's h is the activation --sparsity judges already");
    b.down_target = *o.down_sparsity;
  }
  for (const auto& spec : plan.rows) b.sets.push_back({spec.dtype, spec.make});
  b.flush_bytes = 4 * largest_cache_bytes(machine);
  const MemoryRoof memory;
  const MeasuredRoofs start = measure_roofs(pool, memory, false, false);
  print_run_header(plan, o, machine, start);
  nlohmann::json rows = nlohmann::json::array();
  bench_sparsity(b, pool, start.memory, rows);
  const MeasuredRoofs end = report_end_roofs(start, memory, pool);
  if (!o.json_path.empty()) write_bench_json(o, roofs_json(start, end), machine, rows);
}

void run_bench(const BenchOptions& o) {
  if (const MoePreset* moe = find_moe_preset(o.preset)) {
    if (o.peers || o.backward || o.tp || !o.svg_path.empty() || !o.sparsity.empty())
      throw Error(
          "bench: --peers, --backward, --tp, --svg and --sparsity are not available for mixture-of-experts presets "
          "yet");
    return run_moe_bench(*moe, {split_list(o.dtypes), parse_token_counts(o.tokens), o.threads, o.reps, o.json_path});
  }
  if (o.down_sparsity && o.sparsity.empty())
    throw Error("bench: --down-sparsity sets the down threshold of --sparsity's sparse blocks; give --sparsity too");
  ThreadPool pool(o.threads);
  const BenchPlan plan = plan_bench(o, pool);
  // The results are written at the end of a run of minutes: a path that cannot be written fails now.
  if (!o.json_path.empty()) check_file_writable(o.json_path, "--json");
  if (!o.svg_path.empty()) check_file_writable(o.svg_path, "--svg");
  if (o.tp && !o.svg_path.empty()) throw Error("bench: --svg draws the rows of one process; not with --tp");
  if (o.tp && !o.sparsity.empty()) throw Error("bench: --sparsity times one process's block; not with --tp");
  if (o.tp)
    return run_bench_across_processes({plan.config, plan.label, plan.token_counts, o.threads, o.reps, o.json_path});
  const MachineDescription machine = describe_machine();
  if (!o.sparsity.empty()) return run_sparsity_bench(o, plan, machine, pool);
  auto any_rows_on = [&](const ComputeRoof& roof) {
    return std::any_of(plan.rows.begin(), plan.rows.end(),
                       [&](const BenchPlan::Rows& r) { return &compute_roof_of(r.types) == &roof; });
  };
  RunRoofs roofs;
  roofs.start = measure_roofs(pool, roofs.memory, any_rows_on(kBf16DotRoof), any_rows_on(kInt8DotRoof));
  roofs.before = roofs.start;
  print_run_header(plan, o, machine, roofs.start);
  std::fflush(stdout);
  print_bench_header();

  nlohmann::json rows = nlohmann::json::array();
  const int64_t t_max = *std::max_element(plan.token_counts.begin(), plan.token_counts.end());
  std::string workspace;  // per row set, at t_max tokens
  // Resident memory after each row, less the memory roof's buffer: the weights, the workspace,
  // x and y, and the process itself.
  auto row_rss_mb = [&] { return rss_mb() - roofs.memory.resident_mb(); };
  double peak_rss = 0;
  for (const auto& spec : plan.rows) {
    if (!weight_bytes(plan.config, spec.types)) {
      std::printf("%-6s  skipped: rows of %lld or %lld are not whole blocks of 32\n", spec.dtype.c_str(),
                  static_cast<long long>(plan.config.d_model), static_cast<long long>(plan.config.hidden));
      continue;
    }
    std::vector<InferenceBlock> blocks;
    blocks.push_back(spec.make(SparseDecode{}));
    const int copies = block_copies(blocks.front().weight_bytes(), machine);
    if (copies > 1) {
      std::printf(
          "%-6s  %d copies of the block (%s MB of weights) timed in turn, so that a forward reads its "
          "weights from memory as in a model, not from the last-level cache\n",
          spec.dtype.c_str(), copies, fixed(double(copies) * double(blocks.front().weight_bytes()) / 1e6, 0).c_str());
      std::fflush(stdout);
    }
    while (int(blocks.size()) < copies) blocks.push_back(spec.make(SparseDecode{}));
    workspace += (workspace.empty() ? "" : "; ") + spec.dtype + " " +
                 fixed(double(blocks.front().workspace_bytes(t_max, o.threads)) / 1e6, 1) + " MB";
    for (int64_t T : plan.token_counts) {
      rows.push_back(forward_row(plan, spec, blocks, T, o, roofs, pool));
      const double row_rss = row_rss_mb();
      peak_rss = std::max(peak_rss, row_rss);
      rows.back()["rss_mb"] = row_rss;
    }
  }
  if (o.peers) {
    // The row's block again (the same seed), one type at a time, so that no block is kept
    // through the other types' rows (peak RSS stays theirs).
    std::optional<InferenceBlock> block;
    std::string block_type;
    report_peers(plan.config, o.threads, o.reps, o.peer_budget_s, rows, [&](const std::string& dtype, int64_t T) {
      if (dtype != block_type) {
        block.reset();
        block = InferenceBlock(Block::random(plan.config, 1, &pool), parse_weight_type(dtype), &pool);
        block_type = dtype;
      }
      const Matrix x = bench_tokens(T, plan.config.d_model);
      Matrix y(T, plan.config.d_model);
      return median_ms([&] { block->forward(x.view(), y.view(), &pool); }, o.reps);
    });
  }
  if (o.backward) {
    std::printf(
        "\ntraining step (forward_train + backward), f32; useful FLOPs 6·W per token; kept for backward per "
        "token: %s bytes saved mode, %s bytes recompute mode\n",
        grouped(saved_bytes_per_token(plan.config, false)).c_str(),
        grouped(saved_bytes_per_token(plan.config, true)).c_str());
    print_bench_header();
    bench_backward(Block::random(plan.config, 1, &pool), plan.token_counts,
                   Roofs{roofs.start.compute, roofs.start.memory}, pool, o.reps, rows);
    peak_rss = std::max(peak_rss, row_rss_mb());
  }
  // Forward keeps the hidden values, a tile per thread, and x and h in the formats the
  // kernels take (InferenceBlock::workspace_bytes), beyond the weights, x and y.
  std::printf("\npeak RSS over the rows %s MB; workspace beyond the weights at T = %lld: %s\n",
              fixed(peak_rss, 0).c_str(), static_cast<long long>(t_max), workspace.c_str());
  const MeasuredRoofs end = report_end_roofs(roofs.start, roofs.memory, pool);
  const nlohmann::json roofs_out = roofs_json(roofs.start, end);
  if (!o.json_path.empty()) write_bench_json(o, roofs_out, machine, rows);
  if (!o.svg_path.empty()) {
    const std::string isa(isa_name(active_isa()));
    write_file_atomically(
        o.svg_path, roofline_svg(roofline_chart("ffn bench — " + shape_line(plan), isa, o.threads, roofs_out, rows)));
    std::printf("roofline picture written to %s\n", o.svg_path.c_str());
  }
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("bench", "Forward speed against this machine's roofline, measured in the same run");
  auto o = std::make_shared<BenchOptions>();
  auto* preset = cmd->add_option("--preset", o->preset,
                                 "a real model's MLP shape, e.g. llama2-7b; or a mixture-of-experts layer "
                                 "(mixtral-8x7b, qwen3-30b-a3b, deepseek-v3, ...: `ffn info --preset`)");
  auto* variant = cmd->add_option("--variant", o->variant, "block variant")->capture_default_str();
  auto* d = cmd->add_option("--d", o->d, "model width");
  auto* hidden = cmd->add_option("--hidden", o->hidden, "hidden width (default: the variant's rule)");
  for (auto* opt : {variant, d, hidden}) preset->excludes(opt);
  auto* weights = cmd->add_option("--weights", o->weights,
                                  "a checkpoint (as ffn forward takes): time its layer's MLP, in the types its file "
                                  "stores unless --dtype is given")
                      ->check(CLI::ExistingPath);
  weights->excludes(preset);
  weights->excludes(d);
  weights->excludes(hidden);
  cmd->add_option("--layer", o->layer, "with --weights: the layer")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  std::string type_names;
  for (const auto& t : weight_types()) type_names += (type_names.empty() ? "" : ",") + std::string(t.name);
  auto* dtype = cmd->add_option("--dtype", o->dtypes,
                                "comma-separated weight types (`ffn types`): " + type_names +
                                    "; default f32, or with --weights the file's own types")
                    ->capture_default_str();
  auto* tokens = cmd->add_option("--tokens", o->tokens,
                                 "comma-separated token counts (with --sparsity: " + std::string(kSparsityTokens) + ")")
                     ->capture_default_str();
  cmd->add_option("--threads", o->threads, "worker threads")->check(CLI::Range(1, 4096))->capture_default_str();
  cmd->add_option("--reps", o->reps, "timed repetitions per row (median shown)")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  cmd->add_flag("--peers", o->peers,
                "also time the same block with oneDNN's matmul (f32 rows) and PyTorch (the seeds' module; f32 "
                "and bf16 rows), each between two fresh timings of ffn's row");
  cmd->add_option("--peer-budget", o->peer_budget_s,
                  "with --peers: seconds each peer row may spend timing (after its warm-up forward: as many "
                  "--reps as fit; a row whose one forward is longer is skipped, noted, and so are its larger T; a "
                  "peer still running 2 x budget + 15 s after its warm-up began is killed)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_flag("--backward", o->backward,
                "also time the training step (forward_train + backward, f32, saved and recompute modes)");
  cmd->add_option("--json", o->json_path, "also write the results as JSON to this file");
  cmd->add_option("--svg", o->svg_path,
                  "also draw the run as a roofline (log-log: FLOP/byte against GFLOP/s, the run's compute and "
                  "memory roofs, a point per row and per peer) into this SVG file");
  cmd->add_option("--sparsity", o->sparsity,
                  "instead of the usual rows: activation-sparse decode against the dense block, per target share "
                  "of hidden channels dropped (e.g. 0,0.5,0.7,0.95; a threshold calibrated to each on other tokens); "
                  "f32, f16 and bf16 (--dtype) read up and down as stored, the block types as q8_0 copies along "
                  "d_model");
  cmd->add_option("--down-sparsity", o->down_sparsity,
                  "with --sparsity, gated blocks: each sparse block also drops from down the channels whose |h| = "
                  "|act(gate)·up| is at most a threshold calibrated to drop this share P in [0, 1) by |h| alone "
                  "(SparseDecode::down_threshold; their up rows are read, their down rows not), and takes the sparse "
                  "path whatever share the gate keeps (max_kept_share 1)")
      ->check(CLI::Range(0.0, 0.999999));
  cmd->add_flag("--tp", o->tp,
                "under mpirun: split the block across the processes (f32) and report the all-reduce's share");
  cmd->callback([o, dtype, variant, tokens] {
    o->dtype_given = dtype->count() > 0;
    if (!o->sparsity.empty() && tokens->count() == 0) o->tokens = kSparsityTokens;
    if (variant->count() > 0) o->variant_given = o->variant;
    run_bench(*o);
  });
}

}  // namespace ffn::cli
