// Training passes of a block: forward that keeps what backward needs, and backward, which
// accumulates the gradients of every parameter and returns the gradient of the input.
//
//   gated:    g = x·W_gateᵀ + b_gate,  u = x·W_upᵀ + b_up,  h = act(g) ⊙ u,  y = h·W_downᵀ + b_down
//             dh = dy·W_down;  du = dh ⊙ act(g);  dg = dh ⊙ u ⊙ act'(g)
//             dW_down += dyᵀ·h;  dW_up += duᵀ·x;  dW_gate += dgᵀ·x
//             db_down += Σ_t dy;  db_up += Σ_t du;  db_gate += Σ_t dg
//             dx = du·W_up + dg·W_gate
//   2-matrix: z = x·W_upᵀ + b_up,  h = act(z): dz = dh ⊙ act'(z) takes du's place, no gate.
// Shapes: x, y, dy, dx: [T][D]; g, u, h: [T][H]; gradients as the weights (BlockWeights).
// act' is PyTorch autograd's: relu' = 1 for z > 0 else 0; gelu' = Φ(z) + z·φ(z);
// gelu_tanh' as PyTorch's GeluBackward; swish' = σ(z)·(1 + z·(1 − σ(z))); σ' = σ·(1 − σ).
#pragma once

#include <cstdint>

#include "ffn/block.hpp"
#include "ffn/config.hpp"
#include "ffn/tensor.hpp"
#include "ffn/thread_pool.hpp"

namespace ffn {

// Gradients of a block's parameters, the same shapes as BlockWeights: gate (and gate_bias)
// empty for 2-matrix blocks, biases empty without bias.
struct BlockGradients {
  Matrix gate, up, down, gate_bias, up_bias, down_bias;
};

// Zeroed gradients shaped for `config` (validated; ffn::Error otherwise).
BlockGradients zero_gradients(const BlockConfig& config);

// What forward_train keeps for backward.
//   saved mode:     the hidden pre-activations, g and u ([T][H] each; u alone, as z, for
//                   2-matrix blocks) — (2H or H)·4 bytes per token, besides x.
//   recompute mode: nothing; backward recomputes g and u from x (bit-identically, with
//                   the same kernels), as Liger's and xFormers' fused SwiGLU do — the
//                   memory for 2 more products on top of backward's 6 (1 on 4 for
//                   2-matrix blocks).
// Either way the caller keeps x ([T][D]) and passes it to backward.
struct ForwardCache {
  bool recompute = false;
  int64_t tokens = 0;  // T of the forward that filled the cache
  Matrix gate;         // [T][H] x·W_gateᵀ + b_gate: gated blocks in saved mode; else empty
  Matrix up;           // [T][H] x·W_upᵀ + b_up: saved mode; else empty
};

// y = block(x) exactly as Block::forward computes it (bit for bit), also filling `cache`
// (its storage is reused when the shapes match, so a training loop allocates once).
// x, y: [T][D], y may not alias x. ffn::Error on shape mismatch.
void forward_train(const Block& block, ConstMatrixView x, MatrixView y, ForwardCache& cache, bool recompute,
                   ThreadPool* pool = nullptr);

// Given the upstream gradient dy [T][D] of the forward_train(x) that filled `cache`,
// ACCUMULATES (+=) every parameter's gradient into `grads` and WRITES dx [T][D] — skipped
// when dx.data is null (the first block of a network needs no dx).
// Each gradient element receives this call's sum over tokens, formed from 0 and added
// once: from zeroed gradients two identical calls give exactly twice one call's.
// Multithreaded over `pool` (default: the process-wide pool); no two threads write the
// same element, and every result is bit-identical for any thread count and for either
// cache mode. ffn::Error when a shape disagrees with the block (naming it and its value),
// when the cache does not match x, or when dx overlaps x or dy.
void backward(const Block& block, ConstMatrixView x, const ForwardCache& cache, ConstMatrixView dy, MatrixView dx,
              BlockGradients& grads, ThreadPool* pool = nullptr);

// Bytes per token kept between forward and backward, for reporting: x (D floats) plus, in
// saved mode, the pre-activations (2H floats gated, H for 2-matrix blocks).
int64_t saved_bytes_per_token(const BlockConfig& config, bool recompute);

}  // namespace ffn
