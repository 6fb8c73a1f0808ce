// The tensor-parallel block (include/ffn/distributed.hpp): the local forward/backward of
// this rank's slice, then one sum of [T][D] across ranks.
#include <chrono>
#include <string>

#include "block/gate_sparsity_checks.hpp"
#include "ffn/distributed.hpp"
#include "ffn/error.hpp"

namespace ffn {
namespace {

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

// The sum across ranks needs one contiguous [T][D] buffer.
void require_dense(const MatrixView& m, const char* what) {
  if (m.stride != m.cols)
    throw Error(std::string("tensor-parallel ") + what + ": needs a dense [T][D] matrix (stride " +
                std::to_string(m.stride) + " ≠ D = " + std::to_string(m.cols) + ")");
}

// The local slice's configuration is the whole block's but for its hidden width.
void check_slice_config(const BlockConfig& c, const BlockConfig& full_config, HiddenSlice slice) {
  for (const BlockConfig* k : {&full_config, &c})
    refuse_gate_sparsity(*k, "a tensor-parallel block",
                         "each rank would take the mean and std of only its slice of the gate values");
  if (c.variant != full_config.variant || c.d_model != full_config.d_model || c.bias != full_config.bias ||
      c.hidden != slice.size() || slice.begin < 0 || slice.end > full_config.hidden)
    throw Error("tensor-parallel block: the local slice (d_model " + std::to_string(c.d_model) + ", hidden " +
                std::to_string(c.hidden) + ") does not match hidden units [" + std::to_string(slice.begin) + ", " +
                std::to_string(slice.end) + ") of the block (d_model " + std::to_string(full_config.d_model) +
                ", hidden " + std::to_string(full_config.hidden) + ")");
}

// The local partial y_r, then y = Σ_r y_r on every rank.
template <class Local>
void forward_and_sum(const Local& local, Communicator& comm, ConstMatrixView x, MatrixView y, ThreadPool* pool,
                     TensorParallelTimes* times) {
  require_dense(y, "forward output y");
  auto start = std::chrono::steady_clock::now();
  local.forward(x, y, pool);
  if (times) times->local_ms = ms_since(start);
  start = std::chrono::steady_clock::now();
  comm.sum(y.data, y.rows * y.cols);
  if (times) times->reduce_ms = ms_since(start);
}

}  // namespace

TensorParallelBlock::TensorParallelBlock(const Block& full, Communicator& comm, int64_t granule)
    : full_config_(full.config()),
      slice_(hidden_slice(full.config().hidden, comm.rank(), comm.size(), granule)),
      local_(slice_block(full, slice_, comm.rank() == 0)),
      comm_(&comm) {}

TensorParallelBlock::TensorParallelBlock(Block local, const BlockConfig& full_config, HiddenSlice slice,
                                         Communicator& comm)
    : full_config_(full_config), slice_(slice), local_(std::move(local)), comm_(&comm) {
  check_slice_config(local_.config(), full_config, slice);
}

void TensorParallelBlock::forward(ConstMatrixView x, MatrixView y, ThreadPool* pool, TensorParallelTimes* times) const {
  forward_and_sum(local_, *comm_, x, y, pool, times);
}

TensorParallelInferenceBlock::TensorParallelInferenceBlock(InferenceBlock local, const BlockConfig& full_config,
                                                           HiddenSlice slice, Communicator& comm)
    : full_config_(full_config), slice_(slice), local_(std::move(local)), comm_(&comm) {
  check_slice_config(local_.config(), full_config, slice);
}

void TensorParallelInferenceBlock::forward(ConstMatrixView x, MatrixView y, ThreadPool* pool,
                                           TensorParallelTimes* times) const {
  forward_and_sum(local_, *comm_, x, y, pool, times);
}

void TensorParallelBlock::forward_train(ConstMatrixView x, MatrixView y, ForwardCache& cache, bool recompute,
                                        ThreadPool* pool) const {
  require_dense(y, "forward output y");
  ffn::forward_train(local_, x, y, cache, recompute, pool);
  comm_->sum(y.data, y.rows * y.cols);
}

void TensorParallelBlock::backward(ConstMatrixView x, const ForwardCache& cache, ConstMatrixView dy, MatrixView dx,
                                   BlockGradients& grads, ThreadPool* pool) const {
  if (dx.data != nullptr) require_dense(dx, "backward output dx");
  ffn::backward(local_, x, cache, dy, dx, grads, pool);
  // dx_r = du_r·W_up_r + dg_r·W_gate_r: this slice's share of dx.
  if (dx.data != nullptr) comm_->sum(dx.data, dx.rows * dx.cols);
}

}  // namespace ffn
