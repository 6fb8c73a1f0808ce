// Communicator over MPI (include/ffn/distributed.hpp): MPI_COMM_WORLD, initialised on first
// use and finalised at exit. Counts travel as int, so long buffers go in chunks.
#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <string>
#include <vector>

#include "ffn/distributed.hpp"
#include "ffn/error.hpp"

namespace ffn {
namespace {

constexpr int64_t kChunk = int64_t(1) << 28;  // elements per MPI call: below INT_MAX

void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(rc, text, &length);
  throw Error(std::string(what) + " failed: " + std::string(text, size_t(length)));
}

void finalize_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

template <typename T>
void sum_in_place(T* data, int64_t n, MPI_Datatype type, Reduction reduction, int rank) {
  for (int64_t at = 0; at < n; at += kChunk) {
    const int count = int(std::min(kChunk, n - at));
    if (reduction == Reduction::allreduce) {
      check(MPI_Allreduce(MPI_IN_PLACE, data + at, count, type, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce");
    } else {
      // Rank 0 receives the sum in place; the others send theirs (their buffer is then
      // overwritten by the broadcast).
      check(MPI_Reduce(rank == 0 ? MPI_IN_PLACE : data + at, rank == 0 ? data + at : nullptr, count, type, MPI_SUM, 0,
                       MPI_COMM_WORLD),
            "MPI_Reduce");
      check(MPI_Bcast(data + at, count, type, 0, MPI_COMM_WORLD), "MPI_Bcast");
    }
  }
}

}  // namespace

Communicator& Communicator::world() {
  static Communicator* const world = [] {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      int provided = 0;
      check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
      std::atexit(finalize_at_exit);
    }
    int rank = 0, size = 1, local_size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm local;
    check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local),
          "MPI_Comm_split_type");
    MPI_Comm_size(local, &local_size);
    MPI_Comm_free(&local);
    return new Communicator(rank, size, local_size);  // lives until exit, like MPI itself
  }();
  return *world;
}

void Communicator::sum(float* data, int64_t n) { sum_in_place(data, n, MPI_FLOAT, reduction_, rank_); }
void Communicator::sum(double* data, int64_t n) { sum_in_place(data, n, MPI_DOUBLE, reduction_, rank_); }

void Communicator::broadcast(float* data, int64_t n, int root) {
  for (int64_t at = 0; at < n; at += kChunk)
    check(MPI_Bcast(data + at, int(std::min(kChunk, n - at)), MPI_FLOAT, root, MPI_COMM_WORLD), "MPI_Bcast");
}

double Communicator::max(double v) {
  double out = v;
  check(MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce");
  return out;
}

namespace {

// MPI counts and displacements are int: row counts (not floats) keep them small, but a
// caller's sizes are checked rather than wrapped.
int as_count(int64_t n, const char* what) {
  if (n < 0 || n > int64_t(INT_MAX))
    throw Error(std::string(what) + ": " + std::to_string(n) + " rows do not fit MPI's int counts");
  return int(n);
}

// A row of `row_floats` floats as one MPI datatype, freed on scope exit.
class RowType {
 public:
  explicit RowType(int64_t row_floats) {
    check(MPI_Type_contiguous(as_count(row_floats, "row of floats"), MPI_FLOAT, &type_), "MPI_Type_contiguous");
    check(MPI_Type_commit(&type_), "MPI_Type_commit");
  }
  ~RowType() { MPI_Type_free(&type_); }
  RowType(const RowType&) = delete;
  RowType& operator=(const RowType&) = delete;
  MPI_Datatype get() const { return type_; }

 private:
  MPI_Datatype type_ = MPI_DATATYPE_NULL;
};

// Counts in rows and their prefix sums, as int.
void counts_and_displacements(const int64_t* rows, int ranks, std::vector<int>& counts, std::vector<int>& displs,
                              const char* what) {
  counts.resize(size_t(ranks));
  displs.resize(size_t(ranks));
  int64_t at = 0;
  for (int r = 0; r < ranks; ++r) {
    counts[r] = as_count(rows[r], what);
    displs[r] = as_count(at, what);
    at += rows[r];
  }
}

}  // namespace

void Communicator::alltoall(const int64_t* send, int64_t* recv, int64_t n) {
  check(MPI_Alltoall(send, as_count(n, "MPI_Alltoall"), MPI_INT64_T, recv, int(n), MPI_INT64_T, MPI_COMM_WORLD),
        "MPI_Alltoall");
}

void Communicator::alltoallv_rows(const float* send, const int64_t* send_rows, float* recv, const int64_t* recv_rows,
                                  int64_t row_floats) {
  std::vector<int> send_counts, send_displs, recv_counts, recv_displs;
  counts_and_displacements(send_rows, size_, send_counts, send_displs, "MPI_Alltoallv (sent)");
  counts_and_displacements(recv_rows, size_, recv_counts, recv_displs, "MPI_Alltoallv (received)");
  const RowType row(row_floats);
  check(MPI_Alltoallv(send, send_counts.data(), send_displs.data(), row.get(), recv, recv_counts.data(),
                      recv_displs.data(), row.get(), MPI_COMM_WORLD),
        "MPI_Alltoallv");
}

void Communicator::allgather_rows(float* rows, const int64_t* rows_per_rank, int64_t row_floats) {
  std::vector<int> counts, displs;
  counts_and_displacements(rows_per_rank, size_, counts, displs, "MPI_Allgatherv");
  const RowType row(row_floats);
  check(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, rows, counts.data(), displs.data(), row.get(),
                       MPI_COMM_WORLD),
        "MPI_Allgatherv");
}

void Communicator::barrier() { check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier"); }

void Communicator::abort(int status) {
  MPI_Abort(MPI_COMM_WORLD, status);
  std::exit(status);
}

}  // namespace ffn
