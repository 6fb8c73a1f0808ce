// ffn bench --backward (see bench_backward.hpp).
#include "bench_backward.hpp"

#include <algorithm>
#include <chrono>
#include <random>

#include "ffn/accounting.hpp"
#include "ffn/backward.hpp"
#include "ffn/isa.hpp"

namespace ffn::cli {
namespace {

struct TrainingStep {
  const Block& block;
  Matrix x, y, dy, dx;
  ForwardCache cache;
  BlockGradients grads;
  TrainingStep(const Block& b, int64_t T)
      : block(b),
        x(T, b.config().d_model),
        y(T, b.config().d_model),
        dy(T, b.config().d_model),
        dx(T, b.config().d_model),
        grads(zero_gradients(b.config())) {
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    for (int64_t i = 0; i < x.size(); ++i) x.data()[i] = dist(rng);
    for (int64_t i = 0; i < dy.size(); ++i) dy.data()[i] = 1e-3f * dist(rng);
  }
  void run(bool recompute, ThreadPool& pool) {
    forward_train(block, x.view(), y.view(), cache, recompute, &pool);
    backward(block, x.view(), cache, dy.view(), dx.view(), grads, &pool);
  }
};

double median_step_ms(TrainingStep& step, bool recompute, ThreadPool& pool, int reps) {
  step.run(recompute, pool);  // warm-up (and the cache's allocation)
  std::vector<double> ms;
  for (int r = 0; r < reps; ++r) {
    const auto start = std::chrono::steady_clock::now();
    step.run(recompute, pool);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace

void bench_backward(const Block& block, const std::vector<int64_t>& token_counts, const Roofs& roofs, ThreadPool& pool,
                    int reps, nlohmann::json& rows) {
  const BlockConfig& config = block.config();
  const Accounting acc = account(config);
  const double w_bytes = double(*weight_bytes(config, WeightType::f32));
  const std::string path = "f32 kernels (" + std::string(isa_name(active_isa())) + ")";
  for (bool recompute : {false, true}) {
    for (int64_t T : token_counts) {
      TrainingStep step(block, T);
      BenchRow r;
      r.dtype = "f32";
      r.pass = recompute ? "fwd+bwd (recompute)" : "fwd+bwd";
      r.tokens = T;
      r.ms = median_step_ms(step, recompute, pool, reps);
      r.flops = 3.0 * double(acc.matmul_flops_forward) * double(T);
      r.weight_bytes = w_bytes;
      r.moved_bytes = 5.0 * w_bytes + 16.0 * double(T * config.d_model);
      r.path = path;
      rows.push_back(print_bench_row(r, roofs, config, pool.size()));
    }
  }
}

}  // namespace ffn::cli
