#include "ffn/roofs.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/kernels.hpp"

namespace ffn {

namespace {

// Best GFLOP/s of `loop` (one of the kernels' roof loops) on every thread of the pool,
// which executes flops_per_iteration FLOPs per iteration on each thread.
double best_roof_gflops(kernels::F32FmaRoof loop, double flops_per_iteration, ThreadPool& pool, int reps) {
  // Calibrate to at least 0.05 s per run so that start-up and wake-up costs vanish.
  int64_t iterations = 1 << 16;
  std::vector<float> sinks(static_cast<size_t>(pool.size()));
  auto run = [&](int64_t its) {
    const auto start = std::chrono::steady_clock::now();
    pool.run([&](int ith, int) { sinks[static_cast<size_t>(ith)] = loop(its); });
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  while (run(iterations) < 0.05 && iterations < (int64_t{1} << 34)) iterations *= 4;
  double best = 0.0;
  for (int r = 0; r < reps; ++r) {
    const double s = run(iterations);
    best = std::max(best, double(iterations) * flops_per_iteration * pool.size() / s / 1e9);
  }
  volatile float keep = 0;
  for (float v : sinks) keep = keep + v;
  return best;
}

}  // namespace

double measure_compute_roof_gflops(ThreadPool& pool, int reps) {
  const auto& k = kernels::active_kernels();
  return best_roof_gflops(k.f32_fma_roof, double(k.f32_roof_chains) * double(k.f32_lanes) * 2.0, pool, reps);
}

double measure_bf16_dot_roof_gflops(ThreadPool& pool, int reps) {
  const auto& k = kernels::active_kernels();
  if (!k.bf16_dot_roof) return 0.0;
  return best_roof_gflops(k.bf16_dot_roof, double(k.f32_roof_chains) * double(k.f32_lanes) * 4.0, pool, reps);
}

double measure_read_gbps(const void* data, size_t bytes, ThreadPool& pool, int reps) {
  const size_t words = bytes / sizeof(uint64_t);
  const auto* w = static_cast<const uint64_t*>(data);
  std::vector<uint64_t> sinks(static_cast<size_t>(pool.size()));
  double best = 0.0;
  for (int r = 0; r < reps; ++r) {
    const auto start = std::chrono::steady_clock::now();
    pool.run([&](int ith, int nth) {
      const auto [i0, i1] = split_range(static_cast<int64_t>(words), ith, nth, 64);
      // Integer sums vectorise without reassociating floating point; 4 independent chains.
      uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
      int64_t i = i0;
      for (; i + 4 <= i1; i += 4) {
        s0 += w[i];
        s1 += w[i + 1];
        s2 += w[i + 2];
        s3 += w[i + 3];
      }
      for (; i < i1; ++i) s0 += w[i];
      sinks[static_cast<size_t>(ith)] = s0 + s1 + s2 + s3;
    });
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = std::max(best, static_cast<double>(words * sizeof(uint64_t)) / s / 1e9);
  }
  // Keep the sums observable so the reads cannot be optimised away.
  volatile uint64_t keep = 0;
  for (uint64_t s : sinks) keep = keep + s;
  return best;
}

}  // namespace ffn
