// ffn demo — the main job: the seeds' table, then a GELU MLP and SwiGLU at d = 4096 with
// random weights, run at T = 1 (decode) and T = 64, each checked against the double-
// precision reference on sampled rows, with time and bytes per token judged against the
// roofline of this machine measured in the same run — max(bytes / memory roof, FLOPs /
// compute roof), as ffn bench judges its rows: decode is bound by the weights' bytes, T = 64
// by the products.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

#include "block/reference.hpp"
#include "commands.hpp"
#include "ffn/accounting.hpp"
#include "ffn/block.hpp"
#include "ffn/error.hpp"
#include "ffn/inference_block.hpp"
#include "ffn/isa.hpp"
#include "format.hpp"
#include "measure/roofs.hpp"
#include "timing.hpp"

namespace ffn::cli {
namespace {

struct DemoOptions {
  int64_t d = 4096;
  int threads = ThreadPool::default_threads();
  uint64_t seed = 1;
  int reps = 5;
};

struct Measurement {
  double ms = 0;               // median time of one forward
  double worst_bound_ratio = 0;  // max |y − reference| / error bound over the checked rows
  int rows_checked = 0;
};

std::string ratio_text(double r) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1e", r);
  return buf;
}


Matrix random_tokens(int64_t T, int64_t D, uint64_t seed) {
  Matrix x(T, D);
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (int64_t i = 0; i < x.size(); ++i) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;  // xorshift64
    x.data()[i] = static_cast<float>(static_cast<double>(s >> 40) * 0x1p-24 * 2.0 - 1.0);
  }
  return x;
}

// Times `fast` (the block made for inference, as `ffn forward` runs it) and checks its
// rows against the reference computed from `block`'s f32 weights.
Measurement measure(const Block& block, const InferenceBlock& fast, int64_t T, const DemoOptions& o, ThreadPool& pool) {
  const int64_t D = block.config().d_model;
  const Matrix x = random_tokens(T, D, o.seed + static_cast<uint64_t>(T));
  Matrix y(T, D);
  fast.forward(x.view(), y.view(), &pool);  // warm-up
  std::vector<double> times;
  for (int r = 0; r < o.reps; ++r) {
    const auto start = std::chrono::steady_clock::now();
    fast.forward(x.view(), y.view(), &pool);
    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  Measurement m;
  m.ms = median(times);
  std::vector<double> ref(static_cast<size_t>(D)), bound(static_cast<size_t>(D));
  std::vector<int64_t> rows{0};  // first, middle and last token
  for (int64_t t : {T / 2, T - 1})
    if (std::find(rows.begin(), rows.end(), t) == rows.end()) rows.push_back(t);
  for (int64_t t : rows) {
    reference_forward_token(block, x.row(t), ref.data(), bound.data());
    for (int64_t i = 0; i < D; ++i) {
      const double err = std::fabs(static_cast<double>(y.row(t)[i]) - ref[static_cast<size_t>(i)]);
      m.worst_bound_ratio = std::max(m.worst_bound_ratio, err / bound[static_cast<size_t>(i)]);
      if (std::isnan(err)) m.worst_bound_ratio = INFINITY;
    }
    ++m.rows_checked;
  }
  return m;
}

void run_demo(const DemoOptions& o) {
  std::printf("ffn.cpp demo — the feed-forward block of a transformer: GELU MLP against SwiGLU at d = %lld\n\n",
              static_cast<long long>(o.d));
  print_params_table(o.d, 256);

  ThreadPool pool(o.threads);
  std::printf("\nForward with random weights (seed %llu), f32, %d thread%s, kernels: %s.\n",
              static_cast<unsigned long long>(o.seed), o.threads, o.threads == 1 ? "" : "s",
              std::string(isa_name(active_isa())).c_str());
  std::printf("Each run is checked against the double-precision reference on sampled rows: 'error/bound' is\n"
              "the worst |y − reference| over the rigorous f32 error bound (must be ≤ 1).\n\n");

  const BlockSpec specs[] = {{{false, Activation::gelu}, o.d, std::nullopt, {}, false},
                             {{true, Activation::swish}, o.d, std::nullopt, {}, false}};
  const char* names[] = {"GELU MLP", "SwiGLU"};
  double roof_gbps = 0, roof_gflops = 0;
  double ms_at[2][2] = {};
  bool all_ok = true;
  for (int b = 0; b < 2; ++b) {
    const BlockConfig config = resolve(specs[b]);
    const Block block = Block::random(config, o.seed, &pool);
    const InferenceBlock fast(block, WeightType::f32, &pool);
    const Accounting a = account(config);
    const int64_t weight_bytes_f32 = *weight_bytes(config, WeightType::f32);
    if (b == 0) {
      roof_gbps = measure_read_gbps(block.weights().up.data(), static_cast<size_t>(block.weights().up.size()) * 4,
                                    pool, 5);
      roof_gflops = measure_compute_roof_gflops(pool, 5);
      std::printf("Roofs (%d threads, best of 5): memory %s GB/s (streaming read of %s of weights), compute %s "
                  "GFLOP/s (independent FMA chains)\n"
                  "'of roofline': the time the slower roof allows (bytes / memory roof or FLOPs / compute roof, "
                  "'bound' says which) over the time taken\n\n",
                  o.threads, fixed(roof_gbps, 1).c_str(), megabytes(block.weights().up.size() * 4).c_str(),
                  fixed(roof_gflops, 1).c_str());
      std::printf("%-9s %4s %11s %11s %13s %8s %9s %12s %8s %13s\n", "block", "T", "ms/forward", "ms/token",
                  "MB/token", "GB/s", "GFLOP/s", "of roofline", "bound", "error/bound");
    }
    int ti = 0;
    for (int64_t T : {int64_t{1}, int64_t{64}}) {
      const Measurement m = measure(block, fast, T, o, pool);
      const double bytes_per_token = static_cast<double>(weight_bytes_f32) / static_cast<double>(T) + 8.0 * static_cast<double>(o.d);
      const double gbps = bytes_per_token * static_cast<double>(T) / (m.ms * 1e-3) / 1e9;
      const double gflops = static_cast<double>(a.matmul_flops_forward) * static_cast<double>(T) / (m.ms * 1e-3) / 1e9;
      const bool ok = m.worst_bound_ratio <= 1.0;
      all_ok = all_ok && ok;
      ms_at[b][ti++] = m.ms;
      // The roofline time of the forward: its bytes over the memory roof or its FLOPs over the
      // compute roof, whichever is longer.
      const double memory_ms = bytes_per_token * static_cast<double>(T) / (roof_gbps * 1e9) * 1e3;
      const double compute_ms =
          static_cast<double>(a.matmul_flops_forward) * static_cast<double>(T) / (roof_gflops * 1e9) * 1e3;
      const double roofline_ms = std::max(memory_ms, compute_ms);
      std::printf("%-9s %4lld %11s %11s %13s %8s %9s %12s %8s %8s %s\n", names[b], static_cast<long long>(T),
                  fixed(m.ms, 2).c_str(), fixed(m.ms / static_cast<double>(T), 3).c_str(),
                  fixed(bytes_per_token / 1e6, 1).c_str(), fixed(gbps, 1).c_str(), fixed(gflops, 1).c_str(),
                  fixed(roofline_ms / m.ms, 2).c_str(), memory_ms >= compute_ms ? "memory" : "compute",
                  ratio_text(m.worst_bound_ratio).c_str(), ok ? "ok" : "FAIL");
      std::fflush(stdout);
    }
  }
  std::printf("\nSwiGLU / GELU MLP time per forward: %s at T = 1, %s at T = 64 (parameters: %s).\n",
              fixed(ms_at[1][0] / ms_at[0][0], 2).c_str(), fixed(ms_at[1][1] / ms_at[0][1], 2).c_str(),
              fixed(static_cast<double>(account(resolve(specs[1])).parameters) /
                        static_cast<double>(account(resolve(specs[0])).parameters), 4).c_str());
  std::printf("At T = 1 both blocks stream all their weights once per token, so the third matrix costs nothing\n"
              "extra: time follows bytes, and the bytes follow the parameter count. At T = 64 each weight is\n"
              "reused 64 times and the products (2 FLOPs per weight per token) set the time.\n");
  if (!all_ok) throw Error("demo: a forward pass disagreed with the reference beyond its error bound");
}

}  // namespace

void add_demo_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("demo", "GELU MLP vs SwiGLU: parameters, and a checked, timed forward at T = 1 and 64");
  auto o = std::make_shared<DemoOptions>();
  cmd->add_option("--d", o->d, "model width")->check(CLI::Range(int64_t{1}, int64_t{16384}))->capture_default_str();
  cmd->add_option("--threads", o->threads, "worker threads")->check(CLI::Range(1, 4096))->capture_default_str();
  cmd->add_option("--seed", o->seed, "seed of the random weights and tokens")->capture_default_str();
  cmd->add_option("--reps", o->reps, "timed repetitions per figure (the median is shown)")
      ->check(CLI::Range(1, 1000))->capture_default_str();
  cmd->callback([o] { run_demo(*o); });
}

}  // namespace ffn::cli
