// A group of cooperating processes seen from one of them: its place in the group and an
// element-wise sum across the group. The training loop takes one to split every batch
// across workers (data parallelism) without depending on how the sum travels; MPI's is
// ffn::Communicator (distributed.hpp).
#pragma once

#include <cstdint>

namespace ffn {

class Collective {
 public:
  virtual ~Collective() = default;
  virtual int rank() const = 0;  // 0 … size() − 1
  virtual int size() const = 0;
  // data[i] ← Σ over the group of data[i], in place, for i < n. Every member must call it
  // with the same n, in the same order of calls, and receives the same bits.
  virtual void sum(float* data, int64_t n) = 0;
  virtual void sum(double* data, int64_t n) = 0;
};

}  // namespace ffn
