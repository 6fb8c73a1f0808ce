// The tests run under mpirun (across_ranks.hpp): rank 0 prints gtest's report; the other
// ranks print only their own failures, prefixed with their rank. Each rank's exit status is
// its own result, and mpirun fails when any rank does.
#include <gtest/gtest.h>

#include <cstdio>

#include "ffn/distributed.hpp"

namespace {

class RankFailures : public testing::EmptyTestEventListener {
 public:
  explicit RankFailures(int rank) : rank_(rank) {}
  void OnTestPartResult(const testing::TestPartResult& r) override {
    if (r.failed())
      std::fprintf(stderr, "[rank %d] %s:%d: %s\n", rank_, r.file_name() ? r.file_name() : "?", r.line_number(),
                   r.message());
  }

 private:
  int rank_;
};

}  // namespace

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  ffn::Communicator& comm = ffn::Communicator::world();
  testing::TestEventListeners& listeners = testing::UnitTest::GetInstance()->listeners();
  if (comm.rank() != 0) {
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new RankFailures(comm.rank()));
  }
  return RUN_ALL_TESTS();
}
