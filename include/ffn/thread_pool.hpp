// A persistent pool of worker threads running one job at a time in the ggml shape:
// fn(ith, nth) is called once for every ith in [0, nth), the calling thread taking ith = 0.
// run() returns when every call has returned, rethrowing the first exception thrown.
// Hand-over: a forward is a few jobs of tens of microseconds each, so waking a sleeping
// worker (a futex call and a trip through the scheduler: 10–40 µs on a virtual machine)
// would cost as much as the work. So a worker that finishes a job, and a caller waiting for
// its workers, first spin on an atomic for up to kSpinMicroseconds and only then sleep on
// a condition variable; a job that follows within that time starts without a system call.
// The price is up to that much CPU time per worker after each job. A pool with more
// threads than the process has cores never spins (a spinning thread would take the core
// a worker needs).
// Thread safety: run() may be called from several threads at once; the calls are
// serialised (one job at a time per pool), so threads may share a pool — the default pool
// included — and for parallel throughput each thread gives its own. fn must not call run()
// on the pool running it (it would wait for itself). Tested under ThreadSanitizer
// (tests/unit/test_concurrency.cpp); see docs/security.md.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <utility>

namespace ffn {

class ThreadPool {
 public:
  // n_threads ≥ 1 (throws ffn::Error otherwise); n_threads - 1 workers are started.
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  static constexpr int kSpinMicroseconds = 100;

  int size() const;
  void run(const std::function<void(int ith, int nth)>& fn);

  // One thread per core the process may use (sched_getaffinity), at least 1.
  static int default_threads();

 private:
  struct State;  // the workers and the hand-over (src/parallel/thread_pool.cpp)
  std::unique_ptr<State> state_;
};

// The range [begin, end) of n items that worker ith of nth takes: contiguous, in order,
// sizes differing by at most `align`, every boundary a multiple of `align` (except n).
std::pair<int64_t, int64_t> split_range(int64_t n, int ith, int nth, int64_t align = 1);

}  // namespace ffn
