// One loaded block used from several threads at once. Block::forward and ffn::backward
// read the block's weights and write only their outputs (and, for backward, the caller's
// gradients), so a const Block may be shared; ThreadPool::run serialises concurrent calls
// on one pool. Each pattern below must give, bit for bit, what sequential calls give —
// and, under ThreadSanitizer (FFN_TSAN, scripts/test.sh), no data race.
//   (a) 4 std::threads, each with its own ThreadPool (sizes 1..4);
//   (b) 4 std::threads all on the process-wide default pool (pool = nullptr);
//   (c) 4 std::threads sharing one explicit pool of 2;
//   (d) backward from 4 threads, each with its own gradients and cache;
//   (e) inference blocks (f32, bf16, q4_0) from 4 threads, own pools and one shared pool, with
//       a different token count per thread so that each thread's scratch grows.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <random>
#include <thread>
#include <vector>

#include "ffn/backward.hpp"
#include "ffn/block.hpp"
#include "ffn/inference_block.hpp"
#include "ffn/thread_pool.hpp"
#include "same_bits.hpp"
#include "random_data.hpp"

namespace ffn {
namespace {

using test::random_matrix;

using test::same_bits;

constexpr int kThreads = 4;
constexpr int kRounds = 3;  // calls per thread: overlapping calls, not one lucky interleaving

struct Fixture {
  // d 40 and hidden 112: not multiples of the kernels' tiles, so edge tiles run too; 37
  // tokens take both the row-by-row and the packed paths' boundaries in turn.
  Block block = Block::random({{true, Activation::swish}, 40, 112, true}, 7);
  std::vector<Matrix> inputs;
  std::vector<Matrix> expected;
  Fixture() {
    ThreadPool one(1);
    for (int t = 0; t < kThreads; ++t) {
      inputs.push_back(random_matrix(37, 40, 100 + t));
      expected.emplace_back(37, 40);
      block.forward(inputs[t].view(), expected[t].view(), &one);
    }
  }
};

// Runs body(t) on kThreads std::threads at once.
void in_parallel(const std::function<void(int)>& body) {
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(body, t);
  for (auto& th : threads) th.join();
}

TEST(Concurrency, ForwardFromFourThreadsEachWithItsOwnPool) {
  Fixture f;
  std::vector<Matrix> y(kThreads);
  std::vector<int> matches(kThreads, 0);
  in_parallel([&](int t) {
    ThreadPool pool(1 + t);
    Matrix out(37, 40);
    for (int r = 0; r < kRounds; ++r) {
      f.block.forward(f.inputs[t].view(), out.view(), &pool);
      matches[t] += same_bits(out, f.expected[t]);
    }
  });
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(matches[t], kRounds) << "thread " << t;
}

TEST(Concurrency, ForwardFromFourThreadsOnTheDefaultPool) {
  Fixture f;
  std::vector<int> matches(kThreads, 0);
  in_parallel([&](int t) {
    Matrix out(37, 40);
    for (int r = 0; r < kRounds; ++r) {
      f.block.forward(f.inputs[t].view(), out.view());
      matches[t] += same_bits(out, f.expected[t]);
    }
  });
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(matches[t], kRounds) << "thread " << t;
}

TEST(Concurrency, ForwardFromFourThreadsSharingOnePool) {
  Fixture f;
  ThreadPool shared(2);
  std::vector<int> matches(kThreads, 0);
  in_parallel([&](int t) {
    Matrix out(37, 40);
    for (int r = 0; r < kRounds; ++r) {
      f.block.forward(f.inputs[t].view(), out.view(), &shared);
      matches[t] += same_bits(out, f.expected[t]);
    }
  });
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(matches[t], kRounds) << "thread " << t;
}

TEST(Concurrency, BackwardFromFourThreadsWithTheirOwnGradients) {
  Fixture f;
  const BlockConfig& c = f.block.config();
  // Sequential results first.
  std::vector<Matrix> dy, dx_expected;
  std::vector<BlockGradients> g_expected;
  ThreadPool one(1);
  for (int t = 0; t < kThreads; ++t) {
    dy.push_back(random_matrix(37, 40, 200 + t));
    Matrix y(37, 40);
    ForwardCache cache;
    forward_train(f.block, f.inputs[t].view(), y.view(), cache, false, &one);
    dx_expected.emplace_back(37, 40);
    g_expected.push_back(zero_gradients(c));
    backward(f.block, f.inputs[t].view(), cache, dy[t].view(), dx_expected[t].view(), g_expected[t], &one);
  }
  std::vector<int> matches(kThreads, 0);
  in_parallel([&](int t) {
    ThreadPool pool(2);
    for (int r = 0; r < kRounds; ++r) {
      Matrix y(37, 40), dx(37, 40);
      ForwardCache cache;
      BlockGradients g = zero_gradients(c);
      forward_train(f.block, f.inputs[t].view(), y.view(), cache, r % 2 == 1, &pool);
      backward(f.block, f.inputs[t].view(), cache, dy[t].view(), dx.view(), g, &pool);
      const auto& e = g_expected[t];
      matches[t] += same_bits(y, f.expected[t]) && same_bits(dx, dx_expected[t]) && same_bits(g.gate, e.gate) &&
                    same_bits(g.up, e.up) && same_bits(g.down, e.down) && same_bits(g.gate_bias, e.gate_bias) &&
                    same_bits(g.up_bias, e.up_bias) && same_bits(g.down_bias, e.down_bias);
    }
  });
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(matches[t], kRounds) << "thread " << t;
}

TEST(Concurrency, ThreadPoolRunFromSeveralThreadsIsSerialisedAndComplete) {
  // Every call's job runs exactly once per (ith) and calls never interleave on one pool:
  // each job counts its own calls; a job seeing another's counter change would break the
  // per-call totals.
  ThreadPool pool(3);
  std::vector<std::vector<int>> calls(kThreads, std::vector<int>(3, 0));
  in_parallel([&](int t) {
    for (int r = 0; r < 50; ++r)
      pool.run([&](int ith, int nth) {
        ASSERT_EQ(nth, 3);
        ++calls[t][ith];
      });
  });
  for (int t = 0; t < kThreads; ++t)
    for (int i = 0; i < 3; ++i) EXPECT_EQ(calls[t][i], 50) << "thread " << t << " ith " << i;
}

TEST(Concurrency, PackedBlocksFromFourThreads) {
  // bf16: on AVX512_BF16 its forward also rounds x and h into per-call scratch.
  for (const WeightType type : {WeightType::f32, WeightType::bf16, WeightType::q4_0}) {
    const InferenceBlock packed(Block::random({{true, Activation::swish}, 64, 96, true}, 5), type);
    std::vector<Matrix> inputs, expected;
    ThreadPool one(1);
    for (int t = 0; t < kThreads; ++t) {
      inputs.push_back(random_matrix(5 + 40 * t, 64, 300 + t));
      expected.emplace_back(5 + 40 * t, 64);
      packed.forward(inputs[t].view(), expected[t].view(), &one);
    }
    ThreadPool shared(2);
    std::vector<int> matches(kThreads, 0);
    in_parallel([&](int t) {
      ThreadPool own(1 + t % 2);
      Matrix out(5 + 40 * t, 64);
      for (int r = 0; r < kRounds; ++r) {
        packed.forward(inputs[t].view(), out.view(), r % 2 ? &own : &shared);
        matches[t] += same_bits(out, expected[t]);
      }
    });
    for (int t = 0; t < kThreads; ++t)
      EXPECT_EQ(matches[t], kRounds) << weight_type_info(type).name << " thread " << t;
  }
}

}  // namespace
}  // namespace ffn
