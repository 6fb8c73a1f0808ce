#include "ffn/thread_pool.hpp"

#include <sched.h>

#include <algorithm>
#include <string>

#include "ffn/error.hpp"

namespace ffn {

ThreadPool::ThreadPool(int n_threads) : n_threads_(n_threads) {
  if (n_threads < 1 || n_threads > 4096)
    throw Error("threads = " + std::to_string(n_threads) + ": must be in [1, 4096]");
  workers_.reserve(static_cast<size_t>(n_threads - 1));
  for (int i = 1; i < n_threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  start_cv_.notify_all();
  for (auto& w : workers_) w.join();
}

int ThreadPool::default_threads() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

void ThreadPool::run(const std::function<void(int, int)>& fn) {
  std::lock_guard<std::mutex> run_lock(run_mutex_);
  if (n_threads_ == 1) {
    fn(0, 1);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = &fn;
    pending_ = n_threads_ - 1;
    error_ = nullptr;
    ++generation_;
  }
  start_cv_.notify_all();
  std::exception_ptr own_error;
  try {
    fn(0, n_threads_);
  } catch (...) {
    own_error = std::current_exception();
  }
  std::unique_lock<std::mutex> lock(mutex_);
  done_cv_.wait(lock, [this] { return pending_ == 0; });
  job_ = nullptr;
  if (own_error) std::rethrow_exception(own_error);
  if (error_) std::rethrow_exception(error_);
}

void ThreadPool::worker_loop(int ith) {
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(int, int)>* job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      start_cv_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
      job = job_;
    }
    std::exception_ptr err;
    try {
      (*job)(ith, n_threads_);
    } catch (...) {
      err = std::current_exception();
    }
    std::lock_guard<std::mutex> lock(mutex_);
    if (err && !error_) error_ = err;
    if (--pending_ == 0) done_cv_.notify_one();
  }
}

std::pair<int64_t, int64_t> split_range(int64_t n, int ith, int nth, int64_t align) {
  // Split ceil(n / align) units of `align` items as evenly as possible; the last range
  // ends at n.
  const int64_t units = (n + align - 1) / align;
  const int64_t base = units / nth, extra = units % nth;
  const int64_t u0 = ith * base + std::min<int64_t>(ith, extra);
  const int64_t u1 = u0 + base + (ith < extra ? 1 : 0);
  return {std::min(n, u0 * align), std::min(n, u1 * align)};
}

}  // namespace ffn
