// Block construction, deterministic initialisation and the process-wide thread pool.
#include <cmath>
#include <string>

#include "core/counter_random.hpp"
#include "ffn/block.hpp"
#include "ffn/error.hpp"

namespace ffn {

Block::Block(const BlockConfig& config) : config_(config) {
  validate(config_);
  const int64_t D = config_.d_model, H = config_.hidden;
  if (config_.variant.gated) weights_.gate = Matrix(H, D);
  weights_.up = Matrix(H, D);
  weights_.down = Matrix(D, H);
  if (config_.bias) {
    if (config_.variant.gated) weights_.gate_bias = Matrix(1, H);
    weights_.up_bias = Matrix(1, H);
    weights_.down_bias = Matrix(1, D);
  }
}

Block Block::random(const BlockConfig& config, uint64_t seed, ThreadPool* pool) {
  Block b(config);
  ThreadPool& p = pool ? *pool : default_thread_pool();
  // nn.Linear(in, out).reset_parameters(): weight and bias ~ U(-1/√in, 1/√in).
  const double in_bound = 1.0 / std::sqrt(static_cast<double>(config.d_model));
  const double down_bound = 1.0 / std::sqrt(static_cast<double>(config.hidden));
  auto& w = b.weights_;
  fill_uniform(w.gate, seed, 1, in_bound, &p);
  fill_uniform(w.up, seed, 2, in_bound, &p);
  fill_uniform(w.down, seed, 3, down_bound, &p);
  fill_uniform(w.gate_bias, seed, 4, in_bound, &p);
  fill_uniform(w.up_bias, seed, 5, in_bound, &p);
  fill_uniform(w.down_bias, seed, 6, down_bound, &p);
  return b;
}

ThreadPool& default_thread_pool() {
  static ThreadPool pool(ThreadPool::default_threads());
  return pool;
}

}  // namespace ffn
