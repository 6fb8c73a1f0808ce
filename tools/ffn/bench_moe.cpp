// ffn bench --preset <a MoE preset>: one MoE layer at the real shapes with random weights,
// each row judged against the roofline of this run (its compute roof that of the instruction
// the dtype's kernels multiply with, as ffn bench's dense rows: bench_roofs.hpp):
//   bytes = the router (f32) + the experts the batch's routing actually touched (the mean
//           over the distinct batches the row cycles through) + the shared experts + x and y;
//   FLOPs = the active products (router, k experts, shared) per token.
// So decode (T = 1) is judged by the chosen experts' bytes alone, as a MoE's decode should
// be, and large T by the active FLOPs.
#include "bench_moe.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <set>

#include "bench_roofs.hpp"
#include "bench_rows.hpp"
#include "ffn/accounting.hpp"
#include "ffn/error.hpp"
#include "ffn/isa.hpp"
#include "format.hpp"
#include "io/atomic_file.hpp"
#include "measure/roofs.hpp"
#include "timing.hpp"

namespace ffn::cli {
namespace {

// The layer with every matrix stored as t: experts made one at a time (an f32 expert of
// Mixtral 8x7B is 705 MB), with progress on stderr.
MoeBlock make_layer(const MoeConfig& c, WeightType t, ThreadPool& pool) {
  MoeRouter router;
  // A router of nn.Linear's scale, so that the routing spreads over the experts.
  router.weight = Block::random(BlockConfig{{false, Activation::relu}, c.d_model(), c.experts, false, 0.0}, 7, &pool)
                      .weights()
                      .up.clone();
  if (c.router_bias) router.bias = Matrix(1, c.experts);
  if (c.choice_bias) router.choice_bias = Matrix(1, c.experts);
  if (c.shared_gate) router.shared_gate = Matrix(1, c.d_model());
  std::vector<InferenceBlock> experts;
  const bool terminal = isatty(STDERR_FILENO) != 0;  // a counter in place on a terminal, one line otherwise
  for (int64_t e = 0; e < c.experts; ++e) {
    if (terminal || e == 0)
      std::fprintf(stderr, "%smaking %s experts: %lld/%lld", terminal ? "\r" : "",
                   std::string(weight_type_name(t)).c_str(), static_cast<long long>(e + 1),
                   static_cast<long long>(c.experts));
    experts.emplace_back(Block::random(c.expert, 100 + static_cast<uint64_t>(e), &pool), t, &pool);
  }
  std::fprintf(stderr, terminal ? "\n" : " … done\n");
  std::optional<InferenceBlock> shared;
  if (c.shared_hidden > 0)
    shared.emplace(
        Block::random(BlockConfig{c.expert.variant, c.d_model(), c.shared_hidden, c.expert.bias, 0.0}, 99, &pool), t,
        &pool);
  return MoeBlock(c, std::move(router), std::move(experts), std::move(shared));
}

}  // namespace

void run_moe_bench(const MoePreset& p, const MoeBenchOptions& o) {
  const MoeConfig& c = p.config;
  ThreadPool pool(o.threads);
  // Each dtype's rows are judged against the roof of the instruction its kernels multiply
  // with (bench_roofs.hpp): the integer dot chains' for the block types.
  std::vector<WeightType> types;
  for (const std::string& dtype : o.dtypes) types.push_back(parse_weight_type(dtype));
  auto any_on = [&](const ComputeRoof& roof) {
    return std::any_of(types.begin(), types.end(),
                       [&](WeightType t) { return &compute_roof_of(MatrixTypes::all(t)) == &roof; });
  };
  const MeasuredRoofs start = measure_roofs(pool, MemoryRoof(), any_on(kBf16DotRoof), any_on(kInt8DotRoof));
  const MoeAccounting a = account(c);
  std::printf("ffn bench — %s (%s): %lld experts of d_model %lld, hidden %lld, top %lld by %s%s; %d threads, %s\n",
              p.name.c_str(), p.model.c_str(), static_cast<long long>(c.experts), static_cast<long long>(c.d_model()),
              static_cast<long long>(c.expert.hidden), static_cast<long long>(c.top_k),
              std::string(router_scoring_name(c.scoring)).c_str(),
              c.shared_hidden > 0 ? (", shared hidden " + std::to_string(c.shared_hidden)).c_str() : "", o.threads,
              std::string(isa_name(active_isa())).c_str());
  std::printf("roofs of this run: compute %s GFLOP/s (f32 FMA chains), memory %s GB/s (streaming read)\n",
              fixed(start.compute, 1).c_str(), fixed(start.memory, 1).c_str());
  print_dot_roofs(start);
  std::printf(
      "bytes: router + the experts this batch's routing touched + shared + x, y; FLOPs: %s per token "
      "(router, %lld experts, shared)\n\n",
      grouped(a.active_matmul_flops).c_str(), static_cast<long long>(c.top_k));
  print_bench_header();
  nlohmann::json rows = nlohmann::json::array();
  for (size_t i = 0; i < types.size(); ++i) {
    const std::string& dtype = o.dtypes[i];
    const WeightType t = types[i];
    const ComputeRoof& roof = compute_roof_of(MatrixTypes::all(t), start);
    const Roofs roofs{start.*roof.value, start.memory};
    if (!weight_bytes(c.expert, t)) {
      std::printf("%-6s  skipped: rows of %lld or %lld are not whole blocks of %s\n", dtype.c_str(),
                  static_cast<long long>(c.d_model()), static_cast<long long>(c.expert.hidden), dtype.c_str());
      continue;
    }
    const MoeBlock m = make_layer(c, t, pool);
    for (int64_t T : o.tokens) {
      // A new batch each forward, as in generation, where each token picks its own experts:
      // timing one batch again and again would read its experts from the last-level cache
      // whenever they fit there (Qwen3-30B-A3B's 8 experts at T = 1 are 22 MB in q4_K).
      const int64_t batches = std::clamp<int64_t>(256 / T, 1, 16);
      std::vector<Matrix> xs;
      double touched = 0;
      for (int64_t b = 0; b < batches; ++b) {
        xs.push_back(bench_tokens(T, c.d_model(), static_cast<uint32_t>(16 * T + b)));
        const Routing r = m.route(xs.back().view(), &pool);
        touched += double(std::set<int32_t>(r.experts.begin(), r.experts.end()).size()) / double(batches);
      }
      Matrix y(T, c.d_model());
      size_t next = 0;
      BenchRow row;
      row.dtype = dtype;
      row.pass = "moe forward";
      row.tokens = T;
      row.ms = median_ms([&] { m.forward(xs[next++ % xs.size()].view(), y.view(), &pool); }, o.reps);
      row.flops = double(a.active_matmul_flops) * double(T);
      row.weight_bytes = 4.0 * double(a.router_parameters) + touched * double(m.expert(0).weight_bytes()) +
                         (m.shared() ? double(m.shared()->weight_bytes()) : 0.0);
      row.moved_bytes = row.weight_bytes + 8.0 * double(T * c.d_model());
      row.path =
          fixed(touched, 1) + " experts touched (mean of " + std::to_string(batches) + " batches); " + m.describe();
      nlohmann::json j = print_bench_row(row, roofs, c.expert, o.threads);
      j["compute_roof"] = roof.name;
      j["moe_preset"] = p.name;
      j["experts_touched"] = touched;
      j["batches"] = batches;
      rows.push_back(j);
    }
  }
  if (!o.json_path.empty()) {
    nlohmann::json roofs{{"compute_gflops", start.compute}, {"memory_gbps", start.memory}};
    if (start.bf16_dot > 0) roofs["bf16_dot_gflops"] = start.bf16_dot;
    if (start.int8_dot > 0) roofs["int8_dot_gops"] = start.int8_dot;
    nlohmann::json out{{"roofs", roofs}, {"isa", std::string(isa_name(active_isa()))}, {"rows", rows}};
    write_file_atomically(o.json_path, out.dump(2) + "\n");
  }
}

}  // namespace ffn::cli
