// Base of the tests run under mpirun: every rank runs every test and checks its own
// results; at the end of each test the ranks agree on whether all of them passed, so that
// rank 0 — the only one printing gtest's report — fails a test any rank failed.
#pragma once

#include <gtest/gtest.h>

#include "ffn/distributed.hpp"

namespace ffn::test {

class AcrossRanks : public testing::Test {
 protected:
  void TearDown() override {
    Communicator& comm = Communicator::world();
    // The lowest failing rank (+1), or 0 when every rank passed.
    const double mine = HasFailure() ? double(comm.size() - comm.rank()) : 0.0;
    const double worst = comm.max(mine);
    if (worst > 0 && !HasFailure())
      ADD_FAILURE() << "failed on rank " << comm.size() - int(worst) << " (its lines are printed above)";
  }
};

}  // namespace ffn::test
