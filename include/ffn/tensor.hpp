// Owning, 64-byte-aligned f32 storage and non-owning row-major matrix views.
// Activations are [tokens][features]; weights are nn.Linear's [out_features][in_features].
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

namespace ffn {

struct ConstMatrixView {
  const float* data = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t stride = 0;  // elements between the starts of consecutive rows (≥ cols)
  const float* row(int64_t r) const { return data + r * stride; }
};

struct MatrixView {
  float* data = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t stride = 0;
  float* row(int64_t r) const { return data + r * stride; }
  operator ConstMatrixView() const { return {data, rows, cols, stride}; }
};

// Zero-initialised, 64-byte-aligned array of floats. Throws ffn::Error (not bad_alloc),
// naming the size asked for, when the size is negative or overflows, when it exceeds the
// machine's physical memory (checked before allocating: overcommit could grant the request
// and the zeroing then fault it in until the process is killed), or when allocation fails.
class AlignedFloats {
 public:
  AlignedFloats() = default;
  explicit AlignedFloats(int64_t count);
  float* data() { return data_.get(); }
  const float* data() const { return data_.get(); }
  int64_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

 private:
  struct Free {
    void operator()(float* p) const noexcept;
  };
  std::unique_ptr<float, Free> data_;
  int64_t size_ = 0;
};

// A dense row-major matrix (stride == cols) owning its storage.
class Matrix {
 public:
  Matrix() = default;
  Matrix(int64_t rows, int64_t cols);
  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  int64_t size() const { return rows_ * cols_; }
  bool empty() const { return size() == 0; }
  float* data() { return storage_.data(); }
  const float* data() const { return storage_.data(); }
  float* row(int64_t r) { return data() + r * cols_; }
  const float* row(int64_t r) const { return data() + r * cols_; }
  MatrixView view() { return {data(), rows_, cols_, cols_}; }
  ConstMatrixView view() const { return {data(), rows_, cols_, cols_}; }
  // A deep copy (Matrix itself is move-only, so copies are always asked for).
  Matrix clone() const;

 private:
  AlignedFloats storage_;
  int64_t rows_ = 0;
  int64_t cols_ = 0;
};

// T of an array of tokens for a block of width D: its shape is [T, D], or [D] for one token.
// ffn::Error naming `what` (the array, for messages) otherwise: another number of
// dimensions, or rows of another width than D. The CLI's input files and Python's arrays
// are checked by it alike.
int64_t token_count(std::span<const int64_t> shape, int64_t d_model, const std::string& what);

}  // namespace ffn
