// Tensor-parallel slicing, in one process (no MPI needed): how H is cut across ranks, and
// that the slices' forwards and backwards, combined as the ranks combine them, give the
// whole block's results within the oracle's bound (tensor_parallel_checks.hpp says why
// that bound holds for a split sum). The same checks run across processes in tests/mpi/.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "expect_error.hpp"
#include "ffn/distributed.hpp"
#include "tensor_parallel_checks.hpp"
#include "random_data.hpp"

namespace ffn {
namespace {

using test::random_matrix;

using test::expect_error;

TEST(HiddenSlice, UnevenSplitIsContiguousInRankOrder) {
  EXPECT_EQ(hidden_slice(100, 0, 3).begin, 0);
  EXPECT_EQ(hidden_slice(100, 0, 3).end, 34);
  EXPECT_EQ(hidden_slice(100, 1, 3).end, 67);
  EXPECT_EQ(hidden_slice(100, 2, 3).end, 100);
  // 3 blocks of 32 over 2 ranks: 64 and 32.
  EXPECT_EQ(hidden_slice(96, 0, 2, 32).end, 64);
  EXPECT_EQ(hidden_slice(96, 1, 2, 32).begin, 64);
}

TEST(HiddenSlice, EverySplitCoversHOnceInWholeGranules) {
  for (int64_t granule : {1, 32})
    for (int64_t units : {1, 2, 3, 7, 100, 896})
      for (int ranks = 1; ranks <= 8 && ranks <= units; ++ranks) {
        const int64_t H = units * granule;
        int64_t next = 0, smallest = H, largest = 0;
        for (int r = 0; r < ranks; ++r) {
          const HiddenSlice s = hidden_slice(H, r, ranks, granule);
          EXPECT_EQ(s.begin, next) << "H=" << H << " P=" << ranks << " rank " << r;
          EXPECT_EQ(s.begin % granule, 0);
          EXPECT_GE(s.size(), granule);
          smallest = std::min(smallest, s.size());
          largest = std::max(largest, s.size());
          next = s.end;
        }
        EXPECT_EQ(next, H);
        EXPECT_LE(largest - smallest, granule);
      }
}

TEST(HiddenSlice, BlockTypesNeedWholeBlocksOnEveryRank) {
  EXPECT_EQ(hidden_granule(WeightType::f32), 1);
  EXPECT_EQ(hidden_granule(WeightType::bf16), 1);
  EXPECT_EQ(hidden_granule(WeightType::q8_0), 32);
  EXPECT_EQ(hidden_granule(WeightType::q4_0), 32);
  expect_error([] { hidden_slice(100, 0, 2, 32); }, {"hidden = 100", "multiple of 32"});
  expect_error([] { hidden_slice(64, 0, 3, 32); }, {"hidden = 64", "3 ranks", "at most 2 ranks"});
  expect_error([] { hidden_slice(2, 0, 3); }, {"hidden = 2", "at most 2 ranks"});
  expect_error([] { hidden_slice(10, 3, 3); }, {"rank 3 of 3"});
}

TEST(SliceBlock, ExtractsRowsColumnsAndBiases) {
  const Block full = Block::random({parse_variant("swiglu"), 5, 9, true}, 3);
  const HiddenSlice s{3, 7};
  for (bool keep : {true, false}) {
    const Block b = slice_block(full, s, keep);
    EXPECT_EQ(b.config().hidden, 4);
    for (int64_t j = 0; j < 4; ++j) {
      for (int64_t i = 0; i < 5; ++i) {
        EXPECT_EQ(b.weights().gate.row(j)[i], full.weights().gate.row(j + 3)[i]);
        EXPECT_EQ(b.weights().up.row(j)[i], full.weights().up.row(j + 3)[i]);
        EXPECT_EQ(b.weights().down.row(i)[j], full.weights().down.row(i)[j + 3]);
      }
      EXPECT_EQ(b.weights().gate_bias.data()[j], full.weights().gate_bias.data()[j + 3]);
      EXPECT_EQ(b.weights().up_bias.data()[j], full.weights().up_bias.data()[j + 3]);
    }
    for (int64_t i = 0; i < 5; ++i)
      EXPECT_EQ(b.weights().down_bias.data()[i], keep ? full.weights().down_bias.data()[i] : 0.0f);
  }
  expect_error([&] { slice_block(full, {5, 10}, true); }, {"[5, 10)", "hidden 9"});
}

struct Case {
  const char* variant;
  int64_t d, hidden, tokens;
  bool bias;
  int ranks;
};
const Case kCases[] = {{"swiglu", 24, 100, 7, true, 3},
                       {"gelu", 16, 37, 5, true, 2},
                       {"reglu", 33, 100, 70, false, 3},
                       {"geglu", 8, 96, 3, false, 4}};

// The slices' forwards summed in rank order, as the all-reduce does.
TEST(SliceBlock, PartialOutputsSumToTheBlock) {
  for (const Case& c : kCases) {
    const Block full = Block::random({parse_variant(c.variant), c.d, c.hidden, c.bias}, 11);
    const Matrix x = random_matrix(c.tokens, c.d, 5);
    Matrix y(c.tokens, c.d), part(c.tokens, c.d);
    for (int r = 0; r < c.ranks; ++r) {
      slice_block(full, hidden_slice(c.hidden, r, c.ranks), r == 0).forward(x.view(), part.view());
      for (int64_t i = 0; i < y.size(); ++i) y.data()[i] += part.data()[i];
    }
    test::expect_forward_within_bound(full, x.view(), y.view(),
                                      std::string(c.variant) + " over " + std::to_string(c.ranks));
  }
}

// A bias added on every rank instead of once is caught by the same bound.
TEST(SliceBlock, DownBiasOnEveryRankIsCaught) {
  const Block full = Block::random({parse_variant("swiglu"), 24, 100, true}, 11);
  const Matrix x = random_matrix(3, 24, 5);
  Matrix y(3, 24), part(3, 24);
  for (int r = 0; r < 3; ++r) {
    slice_block(full, hidden_slice(100, r, 3), true).forward(x.view(), part.view());
    for (int64_t i = 0; i < y.size(); ++i) y.data()[i] += part.data()[i];
  }
  EXPECT_NONFATAL_FAILURE(test::expect_forward_within_bound(full, x.view(), y.view(), "doubled bias"), "doubled bias");
}

TEST(SliceBlock, BackwardOfSlicesGivesTheBlocksGradients) {
  for (const Case& c : kCases) {
    const Block full = Block::random({parse_variant(c.variant), c.d, c.hidden, c.bias}, 11);
    const Matrix x = random_matrix(c.tokens, c.d, 5), dy = random_matrix(c.tokens, c.d, 6);
    const test::ReferenceBackward ref(full, x.view(), dy.view());
    Matrix dx(c.tokens, c.d), part(c.tokens, c.d), y(c.tokens, c.d);
    for (int r = 0; r < c.ranks; ++r) {
      const HiddenSlice s = hidden_slice(c.hidden, r, c.ranks);
      const Block local = slice_block(full, s, r == 0);
      ForwardCache cache;
      forward_train(local, x.view(), y.view(), cache, false);
      BlockGradients g = zero_gradients(local.config());
      backward(local, x.view(), cache, dy.view(), part.view(), g);
      for (int64_t i = 0; i < dx.size(); ++i) dx.data()[i] += part.data()[i];
      test::expect_slice_gradients(
          ref, full.config(), s, g,
          std::string(c.variant) + " rank " + std::to_string(r) + "/" + std::to_string(c.ranks));
    }
    test::expect_dx_within_bound(ref, dx.view(), c.variant);
  }
}

}  // namespace
}  // namespace ffn
