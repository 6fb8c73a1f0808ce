// A block split across processes (tensor parallelism, Megatron-LM's MLP split), over MPI.
//
// P ranks each hold a contiguous slice [h0, h1) of the H hidden units:
//   W_gate, W_up: rows h0…h1 of [H][D]   (split by output rows)
//   W_down:       columns h0…h1 of [D][H] (split by input columns)
//   b_gate, b_up: entries h0…h1;  b_down: on rank 0 only (zero elsewhere)
// Hidden unit j needs only row j of W_gate and W_up and column j of W_down, so a rank's
// slice is itself an ordinary Block of hidden width h1 − h0 whose forward is that rank's
// partial output, y_r = h[:, h0:h1]·W_down[:, h0:h1]ᵀ (+ b_down on rank 0), and
// y = Σ_r y_r: one all-reduce of [T][D] per forward, nothing between the projections.
// Backward: dW and db of the slice stay local; dx = Σ_r dx_r is one all-reduce of [T][D].
//
// Rounding: each partial is an f32 sum over the slice's hidden units and the all-reduce
// adds P partials, so y differs in its last bits from one process's sum over all H; both
// stay within the double-precision oracle's bound for any f32 summation order (README,
// "Accuracy"), which is what the tests check.
//
// Without MPI (FFN_MPI=OFF) the slicing functions work and Communicator::world() throws
// ffn::Error saying ffn was built without MPI.
#pragma once

#include <cstdint>

#include "ffn/accounting.hpp"
#include "ffn/backward.hpp"
#include "ffn/block.hpp"
#include "ffn/collective.hpp"
#include "ffn/config.hpp"
#include "ffn/inference_block.hpp"
#include "ffn/tensor.hpp"
#include "ffn/thread_pool.hpp"

namespace ffn {

// How a sum across ranks reaches every rank.
//   allreduce:        one MPI_Allreduce. The MPI standard does not promise that every rank
//                     receives the same bits (only recommends that a reduction be
//                     reproducible for the same arguments in the same order); OpenMPI 4.1's
//                     algorithms give identical bits here, which the tests check.
//   reduce_broadcast: MPI_Reduce to rank 0, then MPI_Bcast of rank 0's bits: identical on
//                     every rank by construction, at the cost of a second collective. What
//                     data-parallel training uses (Collective's promise): a model that
//                     differs by one bit between ranks would drift apart.
enum class Reduction { allreduce, reduce_broadcast };

// MPI_COMM_WORLD. MPI is initialised on first use (MPI_THREAD_FUNNELED: only the thread
// that calls these functions talks to MPI; pool workers never do) and finalised at exit.
class Communicator final : public Collective {
 public:
  static Communicator& world();

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  // How many ranks share this machine (MPI_COMM_TYPE_SHARED).
  int local_size() const { return local_size_; }

  Reduction reduction() const { return reduction_; }
  void set_reduction(Reduction r) { reduction_ = r; }

  void sum(float* data, int64_t n) override;
  void sum(double* data, int64_t n) override;
  // Copies root's n values to every rank.
  void broadcast(float* data, int64_t n, int root = 0);
  // Largest of each rank's v.
  double max(double v);
  // All-to-all of n int64 values per rank (MPI_Alltoall): send[q·n … q·n + n) goes to rank
  // q; recv[s·n … s·n + n) comes from rank s. send and recv hold size()·n values each.
  void alltoall(const int64_t* send, int64_t* recv, int64_t n);
  // All-to-all of rows of `row_floats` floats (MPI_Alltoallv, a row one MPI datatype, so the
  // counts are rows): send_rows[q] rows go to rank q, taken from `send` in rank order (rank
  // q's rows follow rank q−1's); recv_rows[s] rows come from rank s, laid into `recv` in
  // rank order. send_rows and recv_rows: size() entries each; send and recv must not alias.
  // ffn::Error when a rank's row count or a displacement exceeds INT_MAX.
  void alltoallv_rows(const float* send, const int64_t* send_rows, float* recv, const int64_t* recv_rows,
                      int64_t row_floats);
  // Every rank's rows gathered on every rank, in place (MPI_Allgatherv with MPI_IN_PLACE):
  // `rows` holds Σ rows_per_rank rows of row_floats floats, rank s's block following rank
  // s−1's; each rank fills its own block and receives the others'.
  void allgather_rows(float* rows, const int64_t* rows_per_rank, int64_t row_floats);
  void barrier();
  // Ends every rank of the job with this status (MPI_Abort): for errors one rank sees and
  // the others, waiting in a collective, never would.
  [[noreturn]] void abort(int status);

 private:
  Communicator(int rank, int size, int local_size) : rank_(rank), size_(size), local_size_(local_size) {}
  int rank_, size_, local_size_;
  Reduction reduction_ = Reduction::allreduce;
};

// ---- Slicing: which hidden units a rank holds ----

// The hidden units each slice boundary must be a multiple of for W_down stored as t: its
// type's block (1 for f32/bf16/f16; 32 for q8_0 and q4_0), since blocks run along each row
// and W_down's rows run along H, so a column split of W_down inside a block would cut it.
// (W_gate and W_up are split by whole rows, which never cuts a block.)
int64_t hidden_granule(WeightType t);

struct HiddenSlice {
  int64_t begin = 0, end = 0;  // [begin, end) of the H hidden units
  int64_t size() const { return end - begin; }
};

// Rank `rank` of `ranks`' slice of H hidden units: contiguous, in rank order, cut in units
// of `granule` hidden units, the first (H/granule) mod P ranks taking one unit more
// (H = 100 over 3 ranks: 34, 33, 33). ffn::Error when H is not a multiple of granule
// (naming H and the granule) or when a rank would get no hidden unit (H/granule < P).
HiddenSlice hidden_slice(int64_t hidden, int rank, int ranks, int64_t granule = 1);

// An ordinary Block holding `full`'s slice: config {variant, D, slice size, bias}; gate/up
// rows and down columns of the slice; gate/up biases of the slice; the down bias copied
// when keep_down_bias, else zero (so that it is added once across ranks).
Block slice_block(const Block& full, HiddenSlice slice, bool keep_down_bias);

// ---- The tensor-parallel block ----

// Time spent by the last forward: the local partial, and the sum across ranks.
struct TensorParallelTimes {
  double local_ms = 0, reduce_ms = 0;
};

class TensorParallelBlock {
 public:
  // This rank's slice of `full` (every rank passes the same full block, e.g. loaded from
  // the same checkpoint); granule as hidden_slice's.
  TensorParallelBlock(const Block& full, Communicator& comm, int64_t granule = 1);
  // From a slice already cut (e.g. loaded as such): its hidden range within `full_config`.
  TensorParallelBlock(Block local, const BlockConfig& full_config, HiddenSlice slice, Communicator& comm);

  const BlockConfig& config() const { return full_config_; }  // the whole block's
  const Block& local() const { return local_; }               // this rank's slice
  HiddenSlice slice() const { return slice_; }
  Communicator& communicator() const { return *comm_; }

  // y = block(x) on every rank. x: [T][D] (the same on every rank), y: [T][D] dense
  // (stride D). One sum of T·D floats across ranks.
  void forward(ConstMatrixView x, MatrixView y, ThreadPool* pool = nullptr, TensorParallelTimes* times = nullptr) const;

  // forward, keeping in `cache` what backward needs for this rank's slice.
  void forward_train(ConstMatrixView x, MatrixView y, ForwardCache& cache, bool recompute,
                     ThreadPool* pool = nullptr) const;

  // ACCUMULATES this rank's slice gradients into grads (shaped as local(): zero_gradients(
  // local().config())) and WRITES dx = Σ_r dx_r [T][D] (dense), the same on every rank.
  // grads.down_bias receives Σ_t dy on every rank: the whole b_down's gradient.
  void backward(ConstMatrixView x, const ForwardCache& cache, ConstMatrixView dy, MatrixView dx, BlockGradients& grads,
                ThreadPool* pool = nullptr) const;

 private:
  BlockConfig full_config_;
  HiddenSlice slice_;
  Block local_;
  Communicator* comm_;
};

// The inference form of a tensor-parallel block: this rank's slice as an InferenceBlock
// (each matrix in its weight type, as one process runs it), forward only. The slice's down
// bias must be given on rank 0 only (zero or none elsewhere), so that it is added once.
class TensorParallelInferenceBlock {
 public:
  TensorParallelInferenceBlock(InferenceBlock local, const BlockConfig& full_config, HiddenSlice slice,
                               Communicator& comm);
  const BlockConfig& config() const { return full_config_; }  // the whole block's
  const InferenceBlock& local() const { return local_; }      // this rank's slice
  HiddenSlice slice() const { return slice_; }
  // y = block(x) on every rank, as TensorParallelBlock::forward.
  void forward(ConstMatrixView x, MatrixView y, ThreadPool* pool = nullptr, TensorParallelTimes* times = nullptr) const;

 private:
  BlockConfig full_config_;
  HiddenSlice slice_;
  InferenceBlock local_;
  Communicator* comm_;
};

}  // namespace ffn
