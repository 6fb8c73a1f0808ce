// Per-thread scratch memory, kept between calls (internal).
//
// Why: a fresh buffer costs a page fault per page on first touch — in a virtual machine the
// host backs it then too — and the forward and backward of a block need tens of MB of
// [T][H] buffers and per-thread tiles on every call (a training step spent a large share of
// its time faulting in fresh pages: docs/performance.md). So each thread keeps its buffers,
// one per slot, and grows them when asked for more.
//
// Rules: a view is valid until the same thread asks for the same slot again; its contents
// are whatever the last user left (memory new to the slot is zero), so callers write before
// they read. A call uses a slot from the thread that asked for it: the calling thread for
// buffers shared by the workers of one pool.run (it waits inside run while they use them),
// each worker for its own tiles. Nothing here is shared between threads.
// The memory is freed when its thread exits; release_scratch() (ffn/block.hpp) frees the
// calling thread's now.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ffn/tensor.hpp"

namespace ffn {

enum class Scratch : int {
  hidden,              // [T][H] hidden values of a forward
  dense_forward,       // an InferenceBlock forward's x and h in its kernels' formats, and h
  hidden_grads,        // [T][2H] du, dg of a backward
  dy_transposed,       // [D][T]
  x_panels,            // x in 64-column panels
  x_activations,       // x in the format of the up (first-stage) panels' kernel
  gate_activations,    // x in the format of the gate panels' kernel, where it is another
  hidden_activations,  // h in the format of the down panels' kernel
  gate_values,         // [T][H] activated gate values of a gate-first forward
  sparse_lists,        // sparse decode's channel list and its up and h values
  sparse_group_sums,   // [groups][T][D] sparse decode's sums of down's channel groups
  moe_logits,          // [T][E] router logits of a MoE forward
  moe_tokens,          // [T·k][D] the experts' tokens, gathered by expert
  moe_outputs,         // [T·k][D] their outputs
  moe_batches,         // the experts' x and h in their kernels' formats, and h
  moe_shared,          // [T][D] the shared experts' outputs
  tile,                // per-thread tiles, tile … tile8
  tile2,
  tile3,
  tile4,
  tile5,
  tile6,
  tile7,
  tile8,
  count
};

// A rows × cols row-major view (stride cols) of the calling thread's buffer for `slot`.
MatrixView scratch_matrix(Scratch slot, int64_t rows, int64_t cols);
// `bytes` bytes (64-byte aligned) of the calling thread's buffer for `slot`.
std::byte* scratch_bytes(Scratch slot, int64_t bytes);
// Bytes the calling thread's buffers hold now, all slots (what InferenceBlock::workspace_bytes
// bounds; its tests compare the two).
int64_t scratch_held_bytes();

}  // namespace ffn
