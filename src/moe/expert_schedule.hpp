// How a MoE block's experts share the threads: each expert's tokens are one batch, and
// either every expert runs in turn on all the threads (few experts, many tokens each) or
// the experts are shared out among the threads, each run on one thread (many experts with
// few tokens each, where splitting one small product across threads costs more than it
// gains). Which thread takes which expert changes no bit as long as an expert's results do
// not depend on how many threads compute them — true of the dense forward and backward.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "ffn/thread_pool.hpp"

namespace ffn {

// Whether `active` experts with `pairs` (token, expert) pairs among them are shared out
// among `threads`: at least as many experts as threads, and at most `tokens_for_sharing`
// pairs an expert on average.
inline bool share_out_experts(int threads, int64_t active, int64_t pairs, int64_t tokens_for_sharing) {
  return threads > 1 && active >= threads && pairs <= tokens_for_sharing * active;
}

// Calls run(e, pool_for_e) for every e in `active`: shared out (share_out_experts), or each
// on the whole pool in turn.
template <class Run>
void run_experts(ThreadPool& pool, const std::vector<int32_t>& active, int64_t pairs, int64_t tokens_for_sharing,
                 Run&& run) {
  if (share_out_experts(pool.size(), int64_t(active.size()), pairs, tokens_for_sharing)) {
    std::atomic<size_t> next{0};
    pool.run([&](int, int) {
      ThreadPool alone(1);
      for (size_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < active.size();) run(active[i], alone);
    });
  } else {
    for (int32_t e : active) run(e, pool);
  }
}

}  // namespace ffn
