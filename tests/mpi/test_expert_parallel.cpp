// The expert-parallel MoE layer across the ranks of mpirun (-np 2 and -np 3 in CTest): every
// rank builds the same whole layer, keeps its experts, and checks its outputs against one
// process's MoeBlock::forward on the same tokens BIT FOR BIT — in the token-owning mode
// (each rank its own tokens, uneven counts, a rank without tokens) and in the replicated
// mode (every rank all tokens); E divisible by P and not, an expert no token chooses,
// shared experts with a gate, f32 and q8_0 experts. And the errors: P > E, ranks that
// disagree on the layer, a non-finite token on one rank only.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "across_ranks.hpp"
#include "expect_error.hpp"
#include "ffn/distributed.hpp"
#include "ffn/error.hpp"
#include "ffn/expert_parallel.hpp"
#include "ffn/moe.hpp"
#include "random_data.hpp"
#include "same_bits.hpp"

namespace ffn {
namespace {

struct Layer {
  MoeConfig config;
  MoeRouter router;
  std::vector<Block> experts;
  std::optional<Block> shared;
};

// E SwiGLU experts of D = 64, H = 96, top k; shared experts of hidden 64 with σ gate when
// asked. `avoided`: an expert whose router row is −1 everywhere, which tokens of
// non-negative features never choose.
Layer random_layer(int64_t E, int64_t k, bool shared, std::optional<int64_t> avoided = std::nullopt) {
  Layer l;
  l.config.expert = BlockConfig{{true, Activation::swish}, 64, 96, false, 0.0};
  l.config.experts = E;
  l.config.top_k = k;
  if (shared) {
    l.config.shared_hidden = 64;
    l.config.shared_gate = true;
    l.router.shared_gate = test::random_matrix(1, 64, 5, 0.2f);
  }
  l.router.weight = test::random_matrix(E, 64, 3, 0.5f);
  if (avoided)
    for (int64_t d = 0; d < 64; ++d) l.router.weight.row(*avoided)[d] = -1.0f;
  for (int64_t e = 0; e < E; ++e) l.experts.push_back(Block::random(l.config.expert, uint32_t(100 + e)));
  if (shared) l.shared = Block::random(BlockConfig{l.config.expert.variant, 64, 64, false, 0.0}, 99);
  return l;
}

MoeRouter copy(const MoeRouter& r) {
  return {r.weight.clone(), r.bias.clone(), r.choice_bias.clone(), r.shared_gate.clone()};
}

MoeBlock single_process(const Layer& l, const MatrixTypes& types) {
  return MoeBlock::from_blocks(l.config, copy(l.router), l.experts, l.shared, types);
}

ExpertParallelMoe across_ranks(const Layer& l, const MatrixTypes& types, Communicator& comm) {
  return ExpertParallelMoe::from_blocks(l.config, copy(l.router), l.experts, l.shared, types, comm);
}

// Rows [begin, end) of m.
Matrix rows_of(const Matrix& m, int64_t begin, int64_t end) {
  Matrix out(end - begin, m.cols());
  if (out.size() > 0) std::memcpy(out.data(), m.row(begin), sizeof(float) * size_t(out.size()));
  return out;
}

struct Case {
  const char* what;
  int64_t experts, k;
  bool shared;
  std::optional<int64_t> avoided;
  bool non_negative_tokens;
  MatrixTypes types;
};

const MatrixTypes kQ8{WeightType::q8_0, WeightType::q8_0, WeightType::q8_0};
const Case kCases[] = {
    {"E=8 k=2", 8, 2, false, std::nullopt, false, {}},
    {"E=5 k=2 shared+gate", 5, 2, true, std::nullopt, false, {}},
    {"E=7 k=2 expert 3 unchosen", 7, 2, true, 3, true, {}},
    {"E=8 k=2 q8_0 shared+gate", 8, 2, true, std::nullopt, false, kQ8},
};

// Tokens of rank r in each split: uneven with rank 1 empty; every rank 70 (the packed
// kernels' batch sizes on the ranks' experts); only the last rank with tokens.
std::vector<std::vector<int64_t>> token_splits(int ranks) {
  std::vector<int64_t> uneven, even(size_t(ranks), 70), last_only(size_t(ranks), 0);
  for (int r = 0; r < ranks; ++r) uneven.push_back(r == 1 ? 0 : 5 + 7 * r);
  last_only.back() = 9;
  return {uneven, even, last_only};
}

class ExpertParallel : public test::AcrossRanks {};

TEST_F(ExpertParallel, ExpertsAreSplitInRankOrderFirstRanksTakingOneMore) {
  EXPECT_EQ(expert_range(8, 0, 3).end, 3);
  EXPECT_EQ(expert_range(8, 1, 3).begin, 3);
  EXPECT_EQ(expert_range(8, 1, 3).end, 6);
  EXPECT_EQ(expert_range(8, 2, 3).end, 8);
  EXPECT_EQ(expert_range(7, 0, 2).size(), 4);
  EXPECT_EQ(expert_range(7, 1, 2).size(), 3);
  EXPECT_EQ(expert_range(3, 2, 3).size(), 1);
  test::expect_error([] { (void)expert_range(2, 0, 3); }, {"2 experts over 3 processes", "at most 2"});
}

TEST_F(ExpertParallel, OwnTokensGiveOneProcessesBits) {
  Communicator& comm = Communicator::world();
  ThreadPool pool(1);
  for (const Case& c : kCases) {
    const Layer l = random_layer(c.experts, c.k, c.shared, c.avoided);
    const MoeBlock one = single_process(l, c.types);
    const ExpertParallelMoe ep = across_ranks(l, c.types, comm);
    EXPECT_EQ(ep.range().begin, expert_range(c.experts, comm.rank(), comm.size()).begin);
    for (const auto& split : token_splits(comm.size())) {
      int64_t total = 0, mine_from = 0;
      for (int r = 0; r < comm.size(); ++r) {
        if (r == comm.rank()) mine_from = total;
        total += split[size_t(r)];
      }
      Matrix x = test::random_matrix(total, 64, 17);
      if (c.non_negative_tokens)
        for (int64_t i = 0; i < x.size(); ++i) x.data()[i] = std::abs(x.data()[i]);
      if (c.avoided) {
        const Routing r = one.route(x.view());
        for (int32_t e : r.experts) ASSERT_NE(e, *c.avoided) << c.what << ": the avoided expert was chosen";
      }
      Matrix y_one(total, 64);
      one.forward(x.view(), y_one.view());
      const int64_t T = split[size_t(comm.rank())];
      const Matrix x_mine = rows_of(x, mine_from, mine_from + T);
      Matrix y(T, 64);
      ExpertParallelTimes times;
      ep.forward(x_mine.view(), y.view(), &pool, &times);
      EXPECT_TRUE(test::same_bits(y, rows_of(y_one, mine_from, mine_from + T)))
          << c.what << ", " << T << " tokens on rank " << comm.rank() << ": differs from one process";
      EXPECT_LE(times.rows_sent, T * c.k);
    }
  }
}

TEST_F(ExpertParallel, SameTokensOnEveryRankGiveOneProcessesBits) {
  Communicator& comm = Communicator::world();
  ThreadPool pool(2);
  for (const Case& c : kCases) {
    const Layer l = random_layer(c.experts, c.k, c.shared, c.avoided);
    const MoeBlock one = single_process(l, c.types);
    const ExpertParallelMoe ep = across_ranks(l, c.types, comm);
    for (int64_t T : {1, 23, 70}) {
      Matrix x = test::random_matrix(T, 64, 29);
      if (c.non_negative_tokens)
        for (int64_t i = 0; i < x.size(); ++i) x.data()[i] = std::abs(x.data()[i]);
      Matrix y_one(T, 64), y(T, 64);
      one.forward(x.view(), y_one.view());
      ep.forward_replicated(x.view(), y.view(), &pool);
      EXPECT_TRUE(test::same_bits(y, y_one)) << c.what << ", " << T << " tokens: differs from one process";
    }
  }
}

TEST_F(ExpertParallel, MoreProcessesThanExpertsAreRefusedOnEveryRank) {
  Communicator& comm = Communicator::world();
  const Layer l = random_layer(comm.size() - 1, 1, false);
  test::expect_error([&] { (void)across_ranks(l, {}, comm); },
                     {"cannot split", std::to_string(comm.size()).c_str(), "processes"});
}

TEST_F(ExpertParallel, RanksThatDisagreeOnTheLayerAreRefusedOnEveryRank) {
  Communicator& comm = Communicator::world();
  const Layer l = random_layer(8, comm.rank() == 0 ? 2 : 3, false);
  test::expect_error([&] { (void)across_ranks(l, {}, comm); }, {"disagree", "top"});
  // The same configuration, a different router on the last rank.
  Layer m = random_layer(8, 2, false);
  if (comm.rank() == comm.size() - 1) m.router.weight.data()[5] += 1.0f;
  test::expect_error([&] { (void)across_ranks(m, {}, comm); }, {"disagree", "router"});
}

TEST_F(ExpertParallel, ANonFiniteTokenOnOneRankFailsEveryRank) {
  Communicator& comm = Communicator::world();
  const Layer l = random_layer(8, 2, false);
  const ExpertParallelMoe ep = across_ranks(l, {}, comm);
  Matrix x = test::random_matrix(4, 64, 41), y(4, 64);
  if (comm.rank() == 1) x.row(2)[7] = std::numeric_limits<float>::quiet_NaN();
  test::expect_error([&] { ep.forward(x.view(), y.view()); }, {comm.rank() == 1 ? "token 2" : "rank 1 failed"});
  // The ranks are still in step: a good forward follows.
  x.row(2)[7] = 0.5f;
  ep.forward(x.view(), y.view());
  for (int64_t i = 0; i < y.size(); ++i) ASSERT_TRUE(std::isfinite(y.data()[i]));
}

}  // namespace
}  // namespace ffn
