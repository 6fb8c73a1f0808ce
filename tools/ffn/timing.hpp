// Timing of the benchmarks' rows: medians of repeated runs after a warm-up.
#pragma once

#include <algorithm>
#include <chrono>
#include <utility>
#include <vector>

namespace ffn::cli {

// The middle value (the upper one of the two for an even count); v is not empty.
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Warm-up: at least one call and at least kWarmUpMs of them. After another process has had
// the cores (a peer), the scheduler may leave two of the pool's threads on one core for a
// few tens of ms (measured: 20–32 ms at d = 256), which the first timings would carry.
inline constexpr double kWarmUpMs = 100;

// The median wall time in ms of `reps` calls of run(), after the warm-up, each call
// preceded by an untimed before() (e.g. reading a buffer that evicts run's data from the
// caches).
template <class Run, class Before>
double median_ms(Run&& run, Before&& before, int reps) {
  using Clock = std::chrono::steady_clock;
  auto ms_since = [](Clock::time_point t) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
  };
  const auto warm_up_start = Clock::now();
  do {
    before();
    run();
  } while (ms_since(warm_up_start) < kWarmUpMs);
  std::vector<double> ms;
  for (int r = 0; r < reps; ++r) {
    before();
    const auto start = Clock::now();
    run();
    ms.push_back(ms_since(start));
  }
  return median(std::move(ms));
}

// The median wall time in ms of `reps` calls of run(), after the warm-up.
template <class Run>
double median_ms(Run&& run, int reps) {
  return median_ms(
      std::forward<Run>(run), [] {}, reps);
}

}  // namespace ffn::cli
