// The training form of a feed-forward block: its configuration, its f32 weights in
// nn.Linear layout, row-major, and forward; forward_train and backward (ffn/backward.hpp)
// train it. For inference, make an InferenceBlock from it (ffn/inference_block.hpp): its
// matrices in any weight type, laid out once for the forward kernels.
//
//   gated:    h = act(x·W_gateᵀ + b_gate) ⊙ (x·W_upᵀ + b_up);  y = h·W_downᵀ + b_down
//   2-matrix: h = act(x·W_upᵀ + b_up);                          y = h·W_downᵀ + b_down
//
// x, y: [T][D]; W_gate, W_up: [H][D]; W_down: [D][H]; biases [H], [H], [D].
#pragma once

#include <cstddef>
#include <cstdint>

#include "ffn/accounting.hpp"
#include "ffn/config.hpp"
#include "ffn/tensor.hpp"
#include "ffn/thread_pool.hpp"

namespace ffn {

struct BlockWeights {
  Matrix gate;       // [H][D]; empty for 2-matrix blocks
  Matrix up;         // [H][D]
  Matrix down;       // [D][H]
  Matrix gate_bias;  // [1][H]; empty without bias or gate
  Matrix up_bias;    // [1][H]; empty without bias
  Matrix down_bias;  // [1][D]; empty without bias
};

class Block {
 public:
  // Allocates zeroed weights for a validated configuration.
  explicit Block(const BlockConfig& config);

  // nn.Linear's default initialisation, made deterministic: every weight and bias of a
  // projection with fan-in n is uniform in [-1/√n, 1/√n), drawn from a counter-based
  // generator keyed by (seed, tensor, index) — the same values for any thread count.
  static Block random(const BlockConfig& config, uint64_t seed, ThreadPool* pool = nullptr);

  const BlockConfig& config() const { return config_; }
  BlockWeights& weights() { return weights_; }
  const BlockWeights& weights() const { return weights_; }

  // y = block(x) in f32 from the row-major weights: bit-identical to forward_train's
  // (ffn/backward.hpp), which training and its recomputation rely on. x: [T][D], y: [T][D]
  // (may not alias x). Uses `pool` (default: a process-wide pool with one thread per core)
  // and the active ISA; bit-identical for any number of threads. Throws ffn::Error on a
  // shape mismatch. Inference runs faster on an InferenceBlock made from this block.
  void forward(ConstMatrixView x, MatrixView y, ThreadPool* pool = nullptr) const;

 private:
  BlockConfig config_;
  BlockWeights weights_;
};

// Rounds every weight matrix to the values weight type t stores (t's reference quantiser
// and back: bf16/f16 to nearest even, q8_0/q4_0 as ggml's reference quantisers), so that
// forward computes what an InferenceBlock of type t computes from the same weights, but for
// the activations' rounding. Biases stay f32, as in every format. ffn::Error when a row's
// length is not a multiple of t's block (q8_0/q4_0: D and H multiples of 32), naming it.
void round_weights_to(Block& block, WeightType t);
void round_weights_to(Block& block, const MatrixTypes& types);

// The process-wide pool used when none is given (created on first use).
ThreadPool& default_thread_pool();

// Forward and backward keep their scratch buffers ([T][H] hidden values, per-thread tiles)
// per thread between calls, grown to the largest asked for, because fresh memory costs a
// page fault per page on every call. This frees the calling thread's now (each thread's are
// freed when it exits); the next call allocates again.
void release_scratch();

}  // namespace ffn
