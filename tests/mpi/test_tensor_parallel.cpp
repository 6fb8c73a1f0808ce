// The tensor-parallel block across the ranks of mpirun (-np 2 and -np 3 in CTest): every
// rank builds the same whole block, runs its slice, and checks the all-reduced forward
// output, dx and its own slice of every gradient against the whole block's double-
// precision oracle within its bound (tensor_parallel_checks.hpp: why a split sum must meet
// it), against the single-process result within twice that bound, and that every rank holds
// the same bits as rank 0, for both ways of summing across ranks.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "across_ranks.hpp"
#include "block/reference.hpp"
#include "ffn/distributed.hpp"
#include "ffn/error.hpp"
#include "random_data.hpp"
#include "tensor_parallel_checks.hpp"

namespace ffn {
namespace {

using test::random_matrix;

struct Case {
  const char* variant;
  int64_t d, hidden, tokens;
  bool bias;
  int64_t granule;  // 32: the split rule of q8_0/q4_0
};
// H = 100 is uneven over 3 ranks (34/33/33); T = 70 reaches the packed kernel (≥ 64 tokens);
// H = 96 in units of 32 is 64/32 over 2 ranks and 32 each over 3.
const Case kCases[] = {{"swiglu", 48, 100, 5, true, 1},
                       {"gelu", 32, 37, 70, true, 1},
                       {"reglu", 24, 100, 9, false, 1},
                       {"geglu", 40, 96, 4, true, 32}};

std::string name(const Case& c, Reduction r, int ranks) {
  return std::string(c.variant) + " D=" + std::to_string(c.d) + " H=" + std::to_string(c.hidden) +
         " T=" + std::to_string(c.tokens) + " over " + std::to_string(ranks) +
         (r == Reduction::allreduce ? " (allreduce)" : " (reduce+broadcast)");
}

// Every rank's m must equal rank 0's, bit for bit.
void expect_same_on_every_rank(Communicator& comm, const Matrix& m, const std::string& what) {
  Matrix root(m.rows(), m.cols());
  std::memcpy(root.data(), m.data(), sizeof(float) * size_t(m.size()));
  comm.broadcast(root.data(), root.size(), 0);
  EXPECT_EQ(std::memcmp(root.data(), m.data(), sizeof(float) * size_t(m.size())), 0)
      << what << ": rank " << comm.rank() << " differs from rank 0";
}

// |a − b| ≤ 2·bound: both within the oracle's bound.
void expect_near_single_process(const Block& full, const Matrix& x, const Matrix& y, const Matrix& single,
                                const std::string& what) {
  std::vector<double> ref(size_t(full.config().d_model)), bound(ref.size());
  for (int64_t t = 0; t < x.rows(); ++t) {
    reference_forward_token(full, x.row(t), ref.data(), bound.data());
    for (int64_t i = 0; i < x.cols(); ++i)
      ASSERT_LE(std::abs(double(y.row(t)[i]) - double(single.row(t)[i])), 2 * bound[size_t(i)])
          << what << ": y[" << t << "][" << i << "] against one process";
  }
}

class TensorParallel : public test::AcrossRanks, public testing::WithParamInterface<Reduction> {};

TEST_P(TensorParallel, ForwardAgreesWithOneProcess) {
  Communicator& comm = Communicator::world();
  comm.set_reduction(GetParam());
  for (const Case& c : kCases) {
    const std::string what = name(c, GetParam(), comm.size());
    const Block full = Block::random({parse_variant(c.variant), c.d, c.hidden, c.bias}, 21);
    const TensorParallelBlock tp(full, comm, c.granule);
    EXPECT_EQ(tp.slice().begin, hidden_slice(c.hidden, comm.rank(), comm.size(), c.granule).begin);
    const Matrix x = random_matrix(c.tokens, c.d, 8);
    Matrix y(c.tokens, c.d), single(c.tokens, c.d);
    tp.forward(x.view(), y.view());
    full.forward(x.view(), single.view());
    test::expect_forward_within_bound(full, x.view(), y.view(), what);
    expect_near_single_process(full, x, y, single, what);
    expect_same_on_every_rank(comm, y, what + " y");
  }
  comm.set_reduction(Reduction::allreduce);
}

TEST_P(TensorParallel, BackwardAgreesWithOneProcess) {
  Communicator& comm = Communicator::world();
  comm.set_reduction(GetParam());
  for (const Case& c : kCases)
    for (bool recompute : {false, true}) {
      const std::string what = name(c, GetParam(), comm.size()) + (recompute ? " recompute" : " saved");
      const Block full = Block::random({parse_variant(c.variant), c.d, c.hidden, c.bias}, 21);
      const TensorParallelBlock tp(full, comm, c.granule);
      const Matrix x = random_matrix(c.tokens, c.d, 8), dy = random_matrix(c.tokens, c.d, 9);
      Matrix y(c.tokens, c.d), dx(c.tokens, c.d);
      ForwardCache cache;
      tp.forward_train(x.view(), y.view(), cache, recompute);
      test::expect_forward_within_bound(full, x.view(), y.view(), what);
      BlockGradients g = zero_gradients(tp.local().config());
      tp.backward(x.view(), cache, dy.view(), dx.view(), g);
      const test::ReferenceBackward ref(full, x.view(), dy.view());
      test::expect_dx_within_bound(ref, dx.view(), what);
      test::expect_slice_gradients(ref, full.config(), tp.slice(), g, what + " rank " + std::to_string(comm.rank()));
      expect_same_on_every_rank(comm, dx, what + " dx");

      // The single-process backward's slice: the same sums over tokens, so within 2·bound.
      ForwardCache whole_cache;
      Matrix y1(c.tokens, c.d), dx1(c.tokens, c.d);
      forward_train(full, x.view(), y1.view(), whole_cache, recompute);
      BlockGradients g1 = zero_gradients(full.config());
      backward(full, x.view(), whole_cache, dy.view(), dx1.view(), g1);
      const HiddenSlice s = tp.slice();
      for (int64_t j = 0; j < s.size(); ++j)
        for (int64_t i = 0; i < c.d; ++i) {
          const int64_t iu = (s.begin + j) * c.d + i, id = i * c.hidden + s.begin + j;
          ASSERT_LE(std::abs(g.up.row(j)[i] - g1.up.row(s.begin + j)[i]), 2 * ref.grads.bound(ref.grads.up, iu))
              << what << " dW_up against one process";
          ASSERT_LE(std::abs(g.down.row(i)[j] - g1.down.row(i)[s.begin + j]), 2 * ref.grads.bound(ref.grads.down, id))
              << what << " dW_down against one process";
        }
    }
  comm.set_reduction(Reduction::allreduce);
}

INSTANTIATE_TEST_SUITE_P(Reductions, TensorParallel, testing::Values(Reduction::allreduce, Reduction::reduce_broadcast),
                         [](const testing::TestParamInfo<Reduction>& p) {
                           return p.param == Reduction::allreduce ? "allreduce" : "reduce_broadcast";
                         });

// A slice cut beforehand (as a loader reading only its rows and columns would give) runs as
// the block cut by the constructor does, bit for bit; a slice that does not fit is refused.
using TensorParallelFromSlice = test::AcrossRanks;
TEST_F(TensorParallelFromSlice, MatchesTheBlockCutByTheConstructor) {
  Communicator& comm = Communicator::world();
  const Block full = Block::random({parse_variant("geglu"), 24, 100, true}, 4);
  const HiddenSlice s = hidden_slice(100, comm.rank(), comm.size());
  const TensorParallelBlock cut(full, comm);
  const TensorParallelBlock given(slice_block(full, s, comm.rank() == 0), full.config(), s, comm);
  const Matrix x = random_matrix(6, 24, 2);
  Matrix y1(6, 24), y2(6, 24);
  cut.forward(x.view(), y1.view());
  given.forward(x.view(), y2.view());
  EXPECT_EQ(std::memcmp(y1.data(), y2.data(), sizeof(float) * size_t(y1.size())), 0);
  try {
    TensorParallelBlock wrong(slice_block(full, s, true), full.config(), {s.begin, s.end + 1}, comm);
    ADD_FAILURE() << "a slice of " << s.size() << " hidden units was accepted for " << s.size() + 1;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("does not match hidden units"), std::string::npos) << e.what();
  }
}

using TensorParallelErrors = test::AcrossRanks;
TEST_F(TensorParallelErrors, SplitThatCutsABlockIsRefused) {
  Communicator& comm = Communicator::world();
  const Block full = Block::random({parse_variant("swiglu"), 32, 100, false}, 1);
  try {
    TensorParallelBlock tp(full, comm, 32);
    ADD_FAILURE() << "hidden 100 in blocks of 32 was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("multiple of 32"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ffn
