// RowsAhead: the rows a caller of the sparse-rows kernels (kernels.hpp: rows_dot,
// rows_dot_q8_0, rows_axpy) reads next, for the call's last pass to prefetch.
//
// Within a call each pass of 8 listed rows prefetches the next pass's rows, so only the
// first pass waits on memory. Activation-sparse decode makes two calls a group of channels
// (its up rows, then its down rows), and at s = 0.95 a group keeps about 13 channels: most
// passes are a call's first. Telling a call what comes after it (the same channels' down
// rows after their up rows; the next group's up rows after a group's down rows) lets its
// last pass prefetch them as it would its own next pass (docs/performance.md, "Sparse
// decode": what that is worth in a pure read and in the block).
#pragma once

#include <cstddef>
#include <cstdint>

namespace ffn::kernels {

// The first of `rows` (n of them; as many as the call's last pass reads, at most 8), row r
// at W + r·row_bytes (the call's own row_bytes), prefetched into L2 at the offsets the call
// reads its own rows at: a row of another type or length is prefetched over the call's row
// length (a prefetch never faults; it only costs its line). n = 0: nothing. Only
// prefetched: no bit of any result depends on it.
struct RowsAhead {
  const int32_t* rows = nullptr;
  int64_t n = 0;
  const std::byte* W = nullptr;
};

}  // namespace ffn::kernels
