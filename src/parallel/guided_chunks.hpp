// Work items [0, n) shared out to the threads of one pool.run as they ask for them, in
// guided chunks (internal).
//
// Why: a static split gives each thread an equal share, and the job ends when the slower
// thread does. On a shared machine the cores rarely run at the same speed, so the faster
// thread idles for the difference (docs/performance.md). Here a thread that finishes a chunk takes the next one, and
// chunks shrink as the work runs out (guided self-scheduling: the remaining items /
// (2 · threads), at least a minimum the caller sets), so the threads end within about one
// such chunk of each other, while the first chunks stay long runs of consecutive items (a
// thread's panels stream from memory as one array, as in a static split).
//
// Segments: a chunk never crosses a multiple of `segment`, and each segment is shared out
// on its own — a chunk is the remaining items *of its segment* / (2 · threads) — so that
// the threads work through one segment together before the next. A caller whose items
// are (token block, panel) pairs thus gets chunks of one token block, and its threads
// share that block's activations in cache. (Sized from all remaining items instead, the
// first claims took whole token blocks, one per thread, and each thread swept the panels
// over a block of its own, and two blocks of h competed for the last-level cache.)
//
// Which thread computes an item changes nothing in the item's result, so callers whose
// items are computed independently (each output by one thread, as every forward kernel
// does) stay bit-identical for any thread count and any order of claims.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <utility>

#include "ffn/thread_pool.hpp"

namespace ffn {

class GuidedChunks {
 public:
  // n ≥ 0 items, `threads` ≥ 1 claiming them, within segments of `segment` ≥ 1 items;
  // chunks of at least `min_chunk` items (but for the last of a segment), a minimum never
  // above an even share of a segment, min(n, segment) / threads: a segment too small for
  // chunks of min_chunk is split evenly, one chunk a thread, with no more claims (each is
  // a cache line passed between cores) than that.
  GuidedChunks(int64_t n, int threads, int64_t segment, int64_t min_chunk = 1)
      : n_(n),
        divisor_(2 * int64_t(std::max(threads, 1))),
        segment_(std::max<int64_t>(segment, 1)),
        min_chunk_(std::max<int64_t>(1, std::min(min_chunk, 2 * std::min(n, segment_) / divisor_))) {}
  GuidedChunks(const GuidedChunks&) = delete;
  GuidedChunks& operator=(const GuidedChunks&) = delete;

  // The next chunk [begin, end) of items no thread has claimed; begin == end once all are.
  // Safe to call from any number of threads at once.
  std::pair<int64_t, int64_t> claim() {
    int64_t begin = next_.load(std::memory_order_relaxed), end = 0;
    do {
      if (begin >= n_) return {n_, n_};
      const int64_t segment_end = std::min(n_, (begin / segment_ + 1) * segment_);
      const int64_t want = std::max(min_chunk_, (segment_end - begin) / divisor_);
      end = std::min(begin + want, segment_end);
    } while (!next_.compare_exchange_weak(begin, end, std::memory_order_relaxed));
    return {begin, end};
  }

 private:
  const int64_t n_, divisor_, segment_, min_chunk_;
  std::atomic<int64_t> next_{0};
};

// One job on the pool: its threads claim chunks of [0, n) (as GuidedChunks, with every
// thread of the pool claiming, segment and min_chunk as there) and call body(begin, end)
// on each until none is left.
template <class Body>
void run_in_guided_chunks(ThreadPool& pool, int64_t n, int64_t segment, int64_t min_chunk, Body body) {
  GuidedChunks chunks(n, pool.size(), segment, min_chunk);
  pool.run([&](int, int) {
    for (;;) {
      const auto [begin, end] = chunks.claim();
      if (begin == end) return;
      body(begin, end);
    }
  });
}

}  // namespace ffn
