#include "ffn/thread_pool.hpp"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ffn/error.hpp"

namespace ffn {

namespace {

// One step of a spin-wait: tells the core that this thread is waiting, so that it yields
// the pipeline to the other hardware thread and draws less power.
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#else
  std::this_thread::yield();
#endif
}

}  // namespace

struct ThreadPool::State {
  State(int n, bool spin) : n_threads_(n), spin_(spin) {}
  void worker_loop(int ith);
  void run(const std::function<void(int, int)>& fn);
  // Spins (when spin_) until done() holds or the spin time is over; returns done().
  template <class Done>
  bool spin_until(Done done) const;

  int n_threads_;
  bool spin_;  // n_threads_ ≤ the cores this process may use
  std::vector<std::thread> workers_;
  std::mutex run_mutex_;  // serialises run()
  // Guards the sleeping side of the hand-over and error_: a thread sleeps on a condition
  // variable only after checking, under mutex_, the atomic it waits for, and every change
  // of those atomics is followed by taking mutex_ and notifying, so no wake-up is lost.
  std::mutex mutex_;
  std::condition_variable start_cv_;
  std::condition_variable done_cv_;
  const std::function<void(int, int)>* job_ = nullptr;  // published by generation_
  std::atomic<uint64_t> generation_{0};                 // one more for every job
  std::atomic<int> pending_{0};                         // workers still in the job
  std::atomic<bool> stopping_{false};
  std::exception_ptr error_;
};

ThreadPool::ThreadPool(int n_threads) {
  if (n_threads < 1 || n_threads > 4096)
    throw Error("threads = " + std::to_string(n_threads) + ": must be in [1, 4096]");
  state_ = std::make_unique<State>(n_threads, n_threads <= default_threads());
  State& s = *state_;
  s.workers_.reserve(static_cast<size_t>(n_threads - 1));
  for (int i = 1; i < n_threads; ++i) s.workers_.emplace_back([&s, i] { s.worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  State& s = *state_;
  {
    std::lock_guard<std::mutex> lock(s.mutex_);
    s.stopping_.store(true, std::memory_order_release);
  }
  s.start_cv_.notify_all();
  for (auto& w : s.workers_) w.join();
}

int ThreadPool::size() const { return state_->n_threads_; }

void ThreadPool::run(const std::function<void(int, int)>& fn) { state_->run(fn); }

int ThreadPool::default_threads() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

template <class Done>
bool ThreadPool::State::spin_until(Done done) const {
  if (done()) return true;
  if (!spin_) return false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(kSpinMicroseconds);
  for (;;) {
    // The clock is read once every 64 polls: a poll takes tens of nanoseconds.
    for (int i = 0; i < 64; ++i) {
      if (done()) return true;
      cpu_relax();
    }
    if (std::chrono::steady_clock::now() >= deadline) return done();
    std::this_thread::yield();
  }
}

void ThreadPool::State::run(const std::function<void(int, int)>& fn) {
  std::lock_guard<std::mutex> run_lock(run_mutex_);
  if (n_threads_ == 1) {
    fn(0, 1);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = &fn;
    error_ = nullptr;
    pending_.store(n_threads_ - 1, std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_release);  // publishes job_ and pending_
  }
  start_cv_.notify_all();  // only the workers that stopped spinning sleep on it
  std::exception_ptr own_error;
  try {
    fn(0, n_threads_);
  } catch (...) {
    own_error = std::current_exception();
  }
  const auto all_done = [this] { return pending_.load(std::memory_order_acquire) == 0; };
  if (!spin_until(all_done)) {
    std::unique_lock<std::mutex> lock(mutex_);
    done_cv_.wait(lock, all_done);
  }
  job_ = nullptr;
  if (own_error) std::rethrow_exception(own_error);
  if (error_) std::rethrow_exception(error_);
}

void ThreadPool::State::worker_loop(int ith) {
  uint64_t seen = 0;
  for (;;) {
    const auto ready = [&] {
      return stopping_.load(std::memory_order_acquire) || generation_.load(std::memory_order_acquire) != seen;
    };
    if (!spin_until(ready)) {
      std::unique_lock<std::mutex> lock(mutex_);
      start_cv_.wait(lock, ready);
    }
    if (stopping_.load(std::memory_order_acquire)) return;
    // No job can follow this one before this worker has finished it, so this is the
    // generation that ready() saw.
    seen = generation_.load(std::memory_order_acquire);
    std::exception_ptr err;
    try {
      (*job_)(ith, n_threads_);
    } catch (...) {
      err = std::current_exception();
    }
    if (err) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!error_) error_ = err;
    }
    // The last worker out wakes a caller that stopped spinning; taking mutex_ first means
    // the caller is either asleep on done_cv_ or will see pending_ = 0 before it sleeps.
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      { std::lock_guard<std::mutex> lock(mutex_); }
      done_cv_.notify_one();
    }
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
