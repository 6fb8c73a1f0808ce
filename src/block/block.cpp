// Block construction, deterministic initialisation and the process-wide thread pool.
#include <cmath>
#include <string>

#include "ffn/block.hpp"
#include "ffn/error.hpp"

namespace ffn {
namespace {

// splitmix64: a fast, well-mixed 64-bit hash; hashing (key + index) gives a counter-based
// generator, so any range of a tensor can be filled independently by any thread.
inline uint64_t splitmix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Fills m with uniform values in [-bound, bound): 24 random bits per value.
void fill_uniform(Matrix& m, uint64_t seed, uint64_t tensor_id, double bound, ThreadPool& pool) {
  if (m.empty()) return;
  const uint64_t key = splitmix64(seed ^ splitmix64(tensor_id));
  float* data = m.data();
  const int64_t n = m.size();
  pool.run([&](int ith, int nth) {
    auto [i0, i1] = split_range(n, ith, nth, 4096);
    for (int64_t i = i0; i < i1; ++i) {
      const double u01 = static_cast<double>(splitmix64(key + static_cast<uint64_t>(i)) >> 40) * 0x1p-24;
      data[i] = static_cast<float>(bound * (2.0 * u01 - 1.0));
    }
  });
}

}  // namespace

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
  fill_uniform(w.gate, seed, 1, in_bound, p);
  fill_uniform(w.up, seed, 2, in_bound, p);
  fill_uniform(w.down, seed, 3, down_bound, p);
  fill_uniform(w.gate_bias, seed, 4, in_bound, p);
  fill_uniform(w.up_bias, seed, 5, in_bound, p);
  fill_uniform(w.down_bias, seed, 6, down_bound, p);
  return b;
}

ThreadPool& default_thread_pool() {
  static ThreadPool pool(ThreadPool::default_threads());
  return pool;
}

}  // namespace ffn
