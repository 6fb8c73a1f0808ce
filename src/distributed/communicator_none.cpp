// Communicator of a build without MPI (FFN_MPI=OFF): there is no group to join.
#include <cstdlib>

#include "ffn/distributed.hpp"
#include "ffn/error.hpp"

namespace ffn {

Communicator& Communicator::world() {
  throw Error(
      "this ffn was built without MPI (FFN_MPI=OFF): install libopenmpi-dev and rebuild to run across processes");
}

// Unreachable: no Communicator exists without MPI. The collectives added for expert
// parallelism throw the same error rather than pretend to have exchanged anything.
void Communicator::alltoall(const int64_t*, int64_t*, int64_t) { (void)world(); }
void Communicator::alltoallv_rows(const float*, const int64_t*, float*, const int64_t*, int64_t) { (void)world(); }
void Communicator::allgather_rows(float*, const int64_t*, int64_t) { (void)world(); }
void Communicator::sum(float*, int64_t) {}
void Communicator::sum(double*, int64_t) {}
void Communicator::broadcast(float*, int64_t, int) {}
double Communicator::max(double v) { return v; }
void Communicator::barrier() {}
void Communicator::abort(int status) { std::exit(status); }

}  // namespace ffn
