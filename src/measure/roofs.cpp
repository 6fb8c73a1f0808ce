// The roofs of measure/roofs.hpp, measured with the active ISA's roof loops (its
// kernel table's f32_fma_roof, bf16_dot_roof, int8_dot_roof and stream_read) on every
// thread of a pool.
// Measuring sits above both the kernels and the thread pool, so it is neither.
#include "measure/roofs.hpp"

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
  // Calibrate to at least 0.05 s per run so that start-up and wake-up costs vanish: scaled
  // from each short run's time to about 0.06 s (at most 64× a step, so that a run too short
  // to time well is not trusted far), so that a timed run is not up to 4× longer than it
  // needs to be, as growing by a fixed factor would leave it.
  int64_t iterations = 1 << 16;
  std::vector<float> sinks(static_cast<size_t>(pool.size()));
  auto run = [&](int64_t its) {
    const auto start = std::chrono::steady_clock::now();
    pool.run([&](int ith, int) { sinks[static_cast<size_t>(ith)] = loop(its); });
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  constexpr double kMinRunSeconds = 0.05, kAimSeconds = 0.06;
  for (double s = run(iterations); s < kMinRunSeconds && iterations < (int64_t{1} << 34); s = run(iterations))
    iterations = static_cast<int64_t>(double(iterations) * std::clamp(kAimSeconds / std::max(s, 1e-6), 1.25, 64.0));
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

double measure_int8_dot_roof_gops(ThreadPool& pool, int reps) {
  const auto& k = kernels::active_kernels();
  if (!k.int8_dot_roof) return 0.0;
  return best_roof_gflops(k.int8_dot_roof, double(k.int8_roof_chains) * double(k.int8_roof_lanes) * 8.0, pool, reps);
}

std::string int8_roof_loop_description() {
  const auto& k = kernels::active_kernels();
  if (!k.int8_dot_roof) return "";
  return std::string(k.int8_dot_roof.name) + ": " + std::to_string(k.int8_roof_chains) + " chains x " +
         std::to_string(k.int8_roof_lanes) + " int32 lanes";
}

std::string roof_loops_description() {
  const auto& k = kernels::active_kernels();
  const int64_t bits = k.f32_lanes * 32;
  const char* reg = bits == 512 ? "zmm" : bits == 256 ? "ymm" : "scalar";
  return std::string(k.f32_fma_roof.name) + ": " + std::to_string(k.f32_roof_chains) + " FMA chains x " +
         std::to_string(k.f32_lanes) + " f32 lanes (" + std::to_string(bits) + "-bit " + reg + "); " +
         k.stream_read.name + ": " + std::to_string(bits / 8) + "-byte loads";
}

double measure_bf16_dot_roof_gflops(ThreadPool& pool, int reps) {
  const auto& k = kernels::active_kernels();
  if (!k.bf16_dot_roof) return 0.0;
  return best_roof_gflops(k.bf16_dot_roof, double(k.f32_roof_chains) * double(k.f32_lanes) * 4.0, pool, reps);
}

double measure_read_gbps(const void* data, size_t bytes, ThreadPool& pool, int reps) {
  // Read as floats (the bytes' values do not matter: sums of any bit patterns never trap).
  const int64_t floats = static_cast<int64_t>(bytes / sizeof(float));
  const auto* f = static_cast<const float*>(data);
  const kernels::StreamRead read = kernels::active_kernels().stream_read;
  std::vector<float> sinks(static_cast<size_t>(pool.size()));
  double best = 0.0;
  for (int r = 0; r < reps; ++r)
    for (int pattern = 0; pattern < kernels::kReadPatterns; ++pattern) {
      const auto start = std::chrono::steady_clock::now();
      pool.run([&](int ith, int nth) {
        const auto [i0, i1] = split_range(floats, ith, nth, 1024);
        sinks[static_cast<size_t>(ith)] = i1 > i0 ? read(f + i0, i1 - i0, pattern) : 0.0f;
      });
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      best = std::max(best, static_cast<double>(floats) * sizeof(float) / s / 1e9);
    }
  // Keep the sums observable so the reads cannot be optimised away.
  volatile float keep = 0;
  for (float s : sinks) keep = keep + s;
  return best;
}

}  // namespace ffn
