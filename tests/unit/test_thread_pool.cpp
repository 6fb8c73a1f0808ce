#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "ffn/error.hpp"
#include "ffn/thread_pool.hpp"
#include "parallel/guided_chunks.hpp"

namespace ffn {
namespace {

TEST(SplitRange, CoversInOrderWithAlignedBoundaries) {
  for (int64_t n : {0, 1, 15, 16, 17, 100, 4096, 11008})
    for (int nth : {1, 2, 3, 7, 64})
      for (int64_t align : {1, 16, 64}) {
        int64_t expected_begin = 0;
        for (int ith = 0; ith < nth; ++ith) {
          const auto [b, e] = split_range(n, ith, nth, align);
          ASSERT_EQ(b, expected_begin);
          ASSERT_LE(b, e);
          if (e != n) {
            ASSERT_EQ(e % align, 0);
          }
          expected_begin = e;
        }
        ASSERT_EQ(expected_begin, n);
      }
  // Evenness: 100 units over 3 threads → 34, 33, 33.
  EXPECT_EQ(split_range(100, 0, 3).second, 34);
  EXPECT_EQ(split_range(100, 2, 3).first, 67);
}

// One thread: the chunks are the guided sequence itself — the remaining items of the
// segment / (2 · threads), at least min_chunk, cut at segment ends — covering [0, n) in
// order.
TEST(GuidedChunks, ShrinkAsWorkRunsOutAndStopAtSegmentEnds) {
  GuidedChunks chunks(100, 2, 60, 1);
  std::vector<std::pair<int64_t, int64_t>> got;
  for (auto c = chunks.claim(); c.first < c.second; c = chunks.claim()) got.push_back(c);
  // Segment [0, 60): 60 / 4 = 15, 45 / 4 = 11, 34 / 4 = 8, 26 / 4 = 6, 20 / 4 = 5, …
  const std::pair<int64_t, int64_t> first[] = {{0, 15}, {15, 26}, {26, 34}, {34, 40}, {40, 45}};
  ASSERT_GE(got.size(), 5u);
  for (size_t i = 0; i < 5; ++i) EXPECT_EQ(got[i], first[i]) << "chunk " << i;
  int64_t expected_begin = 0;
  bool second_segment_seen = false;
  for (const auto& [b, e] : got) {
    ASSERT_EQ(b, expected_begin);
    ASSERT_LT(b, e);
    ASSERT_EQ(b / 60, (e - 1) / 60) << "a chunk crosses a segment end";
    // … then [60, 100) is shared out on its own: 40 / 4 = 10 first.
    if (b == 60) {
      EXPECT_EQ(e, 70);
      second_segment_seen = true;
    }
    expected_begin = e;
  }
  EXPECT_TRUE(second_segment_seen);
  EXPECT_EQ(expected_begin, 100);
  EXPECT_EQ(chunks.claim(), std::make_pair(int64_t(100), int64_t(100)));

  GuidedChunks none(0, 4, 1);
  EXPECT_EQ(none.claim().first, none.claim().second);
  // A minimum chunk holds but for a segment's end: 50 / 4 = 12, then 38 / 4 = 9 → 10, 10,
  // 10, 8 to the end of the segment; the next segment starts again from 50 / 4.
  GuidedChunks at_least(100, 2, 50, 10);
  const std::pair<int64_t, int64_t> minimum[] = {{0, 12}, {12, 22}, {22, 32}, {32, 42}, {42, 50}, {50, 62}};
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(at_least.claim(), minimum[i]) << "chunk " << i;
  // … and is never above an even share of a segment (12 / 2 = 6; 100 / 2 = 50): too few
  // items for it, one chunk a thread per segment.
  GuidedChunks few(12, 2, 12, 100);
  EXPECT_EQ(few.claim(), std::make_pair(int64_t(0), int64_t(6)));
  EXPECT_EQ(few.claim(), std::make_pair(int64_t(6), int64_t(12)));
  EXPECT_EQ(few.claim().first, 12);
  GuidedChunks few_a_segment(400, 2, 100, 1000);
  for (int64_t b = 0; b < 400; b += 50) EXPECT_EQ(few_a_segment.claim(), std::make_pair(b, b + 50));
}

// The forward's items, (token block, panel) pairs with one segment a token block: the
// threads' first claims share the first block (its activations in cache once), rather than
// each taking a whole block of its own.
TEST(GuidedChunks, ThreadsStartTogetherInTheFirstSegment) {
  constexpr int64_t kPanels = 256, kBlocks = 4;
  GuidedChunks chunks(kBlocks * kPanels, 2, kPanels, 1);
  const auto a = chunks.claim(), b = chunks.claim();
  EXPECT_EQ(a, std::make_pair(int64_t(0), int64_t(64)));
  EXPECT_EQ(b, std::make_pair(int64_t(64), int64_t(112)));
  EXPECT_LT(b.second, kPanels);
}

// Threads claiming at once (run_in_guided_chunks; an oversubscribed pool, so that claims
// interleave): every item is taken exactly once, whichever thread takes it.
TEST(GuidedChunks, EveryItemOnceAcrossThreads) {
  for (int threads : {2, 3, 8}) {
    ThreadPool pool(threads);
    for (int64_t n : {1, 7, 1000, 20000}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      std::atomic<bool> crossed{false};
      run_in_guided_chunks(pool, n, 257, 3, [&](int64_t begin, int64_t end) {
        if (begin / 257 != (end - 1) / 257) crossed = true;
        for (int64_t i = begin; i < end; ++i) hits[size_t(i)].fetch_add(1);
      });
      EXPECT_FALSE(crossed) << "a chunk crossed a segment end, n = " << n;
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[size_t(i)].load(), 1) << "item " << i << " of " << n;
    }
  }
}

TEST(ThreadPool, RunsEveryIndexOnceOnDistinctThreads) {
  ThreadPool pool(4);
  for (int round = 0; round < 100; ++round) {
    std::vector<std::atomic<int>> hits(4);
    std::vector<std::thread::id> ids(4);
    pool.run([&](int ith, int nth) {
      ASSERT_EQ(nth, 4);
      hits[size_t(ith)]++;
      ids[size_t(ith)] = std::this_thread::get_id();
    });
    for (auto& h : hits) ASSERT_EQ(h.load(), 1);
    EXPECT_EQ(std::set<std::thread::id>(ids.begin(), ids.end()).size(), 4u);
  }
}

TEST(ThreadPool, RethrowsAWorkersException) {
  ThreadPool pool(3);
  EXPECT_THROW(pool.run([](int ith, int) {
    if (ith == 2) throw std::runtime_error("worker failed");
  }), std::runtime_error);
  // The pool is still usable afterwards.
  std::atomic<int> calls{0};
  pool.run([&](int, int) { calls++; });
  EXPECT_EQ(calls.load(), 3);
}

TEST(ThreadPool, ConcurrentCallersAreSerialised) {
  ThreadPool pool(2);
  std::atomic<int> total{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 4; ++c)
    callers.emplace_back([&] {
      for (int i = 0; i < 50; ++i) pool.run([&](int, int) { total++; });
    });
  for (auto& t : callers) t.join();
  EXPECT_EQ(total.load(), 4 * 50 * 2);
}

// Jobs back to back: the workers are still spinning when the next job is published, so
// this is the hand-over without a system call. Every job must run once on every index and
// see what the caller wrote before run().
TEST(ThreadPool, BackToBackJobsRunOnceAndSeeTheCallersWrites) {
  ThreadPool pool(2);
  constexpr int kJobs = 20000;
  std::vector<int> runs(2, 0);  // each index writes only its own element
  int published = -1;
  int mismatches = 0;  // written by index 1 only
  for (int job = 0; job < kJobs; ++job) {
    published = job;
    pool.run([&](int ith, int) {
      runs[size_t(ith)]++;
      if (ith == 1 && published != job) mismatches++;
    });
  }
  EXPECT_EQ(runs[0], kJobs);
  EXPECT_EQ(runs[1], kJobs);
  EXPECT_EQ(mismatches, 0);
}

// Jobs further apart than the spin time: the workers have gone to sleep on the condition
// variable and must be woken (a lost wake-up would hang here).
TEST(ThreadPool, WakesWorkersThatStoppedSpinning) {
  ThreadPool pool(2);
  std::atomic<int> calls{0};
  for (int job = 0; job < 20; ++job) {
    std::this_thread::sleep_for(std::chrono::microseconds(5 * ThreadPool::kSpinMicroseconds));
    pool.run([&](int, int) { calls++; });
  }
  EXPECT_EQ(calls.load(), 40);
}

// A caller whose workers take longer than the spin time sleeps until the last one is done.
TEST(ThreadPool, CallerWaitsForASlowWorker) {
  ThreadPool pool(3);
  std::atomic<int> finished{0};
  pool.run([&](int ith, int) {
    if (ith == 2) std::this_thread::sleep_for(std::chrono::microseconds(20 * ThreadPool::kSpinMicroseconds));
    finished++;
  });
  EXPECT_EQ(finished.load(), 3);
}

// More threads than cores (the pool does not spin then) and pools destroyed while their
// workers may still be spinning after a job.
TEST(ThreadPool, OversubscribedAndShortLivedPools) {
  const int n = ThreadPool::default_threads() + 2;
  ThreadPool big(n);
  std::atomic<int> calls{0};
  for (int job = 0; job < 100; ++job) big.run([&](int, int) { calls++; });
  EXPECT_EQ(calls.load(), 100 * n);
  for (int i = 0; i < 200; ++i) {
    ThreadPool pool(2);
    std::atomic<int> c{0};
    pool.run([&](int, int) { c++; });
    ASSERT_EQ(c.load(), 2);
  }
}

TEST(ThreadPool, RejectsAbsurdSizes) {
  EXPECT_THROW(ThreadPool(0), Error);
  EXPECT_THROW(ThreadPool(-1), Error);
  EXPECT_GE(ThreadPool::default_threads(), 1);
}

}  // namespace
}  // namespace ffn
