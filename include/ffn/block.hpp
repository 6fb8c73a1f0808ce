// A feed-forward block: its configuration, its f32 weights (nn.Linear layout) and forward.
//
//   gated:    h = act(x·W_gateᵀ + b_gate) ⊙ (x·W_upᵀ + b_up);  y = h·W_downᵀ + b_down
//   2-matrix: h = act(x·W_upᵀ + b_up);                          y = h·W_downᵀ + b_down
//
// x, y: [T][D]; W_gate, W_up: [H][D]; W_down: [D][H]; biases [H], [H], [D].
#pragma once

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

  // Fast f32 forward: y = block(x). x: [T][D], y: [T][D] (may not alias x). Uses `pool`
  // (default: a process-wide pool with one thread per core) and the active ISA. The
  // result is bit-identical for any number of threads. Throws ffn::Error on shape mismatch.
  void forward(ConstMatrixView x, MatrixView y, ThreadPool* pool = nullptr) const;

 private:
  BlockConfig config_;
  BlockWeights weights_;
};

// Rounds every weight matrix to the values weight type t stores — bf16/f16 conversion, or
// q8_0/q4_0 quantisation (ggml's reference rounding) and back — so that forward computes
// what a block stored as t computes. Biases stay f32, as in every format. The block formats
// need D and H to be multiples of 32 (ffn::Error otherwise, naming the size).
void round_weights_to(Block& block, WeightType t);

// The process-wide pool used when none is given (created on first use).
ThreadPool& default_thread_pool();

// The oracle: forward of one token in double precision (products, sums and activation
// all in double, from the f32 weights and input), single-threaded, straightforward.
// y_out: [D]. If error_bound_out is not null it receives, per output, a rigorous
// first-order bound on |y_f32 - y_exact| for any f32 forward that sums each dot product of
// length n with error ≤ n·u·Σ|terms| (u = 2⁻²⁴; true of every summation order) and
// evaluates the activation within a few ulps — see reference.cpp for its derivation.
void reference_forward_token(const Block& block, const float* x, double* y_out,
                             double* error_bound_out = nullptr);

// Reference forward of every row of x, rounded to f32.
void reference_forward(const Block& block, ConstMatrixView x, MatrixView y);

}  // namespace ffn
