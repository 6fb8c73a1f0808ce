// The oracles every fast path is tested against: a block's forward and backward in double
// precision, one token at a time, written for obviousness rather than speed, each with a
// rigorous bound on the error of any f32 computation of the same values (derivations in
// reference.cpp and reference_backward.cpp). For tests and `ffn demo`; not public API.
#pragma once

#include <cstdint>
#include <vector>

#include "ffn/block.hpp"
#include "ffn/config.hpp"
#include "ffn/tensor.hpp"

namespace ffn {

// The oracle: forward of one token in double precision (products, sums and activation
// all in double, from the f32 weights and input), single-threaded, straightforward.
// y_out: [D]. If error_bound_out is not null it receives, per output, a rigorous
// first-order bound on |y_f32 - y_exact| for any f32 forward that sums each dot product of
// length n with error ≤ n·u·Σ|terms| (u = 2⁻²⁴; true of every summation order) and
// evaluates the activation within a few ulps — see reference.cpp for its derivation.
// operand_rounding: the relative error r with which a forward rounds the activations that
// enter its products (x, and h before the down projection) — 2⁻⁸ for the bf16 dot product
// of bf16 inference blocks on AVX512_BF16 (Isa::avx512_bf16); 0 where they stay f32.
void reference_forward_token(const Block& block, const float* x, double* y_out, double* error_bound_out = nullptr,
                             double operand_rounding = 0.0);

// Gemma 3n's Gaussian top-k (BlockConfig::gate_sparsity) on one token's gate
// pre-activations g [H], in double: g ← relu(g − (mean(g) + std(g)·Φ⁻¹(sparsity))), std
// biased. e_g [H] holds each value's f32 error bound on entry and that of the result on
// return (the cutoff's error added; derivation in reference.cpp). sparsity in (0, 1).
void apply_gaussian_top_k(double sparsity, std::vector<double>& g, std::vector<double>& e_g);

// Reference forward of every row of x, rounded to f32.
void reference_forward(const Block& block, ConstMatrixView x, MatrixView y);

// ---- The oracle of backward ----

// One parameter's gradient, row-major in its weight's shape, summed over the tokens given
// so far, with the two sums the f32 error bound is made of.
struct ReferenceGradient {
  std::vector<double> value;       // Σ_t ∂(dy·y)/∂θ, exact in double
  std::vector<double> propagated;  // Σ_t |exact factor| · (bound on the error of the f32 factor)
  std::vector<double> magnitude;   // Σ_t |term|
};

struct ReferenceGradients {
  explicit ReferenceGradients(const BlockConfig& config);  // zeros, shaped like BlockGradients
  ReferenceGradient gate, up, down, gate_bias, up_bias, down_bias;
  int64_t tokens = 0;  // tokens accumulated

  // A rigorous first-order bound (doubled for the higher-order terms) on
  // |f32 gradient − value[i]| for any f32 backward from zeroed gradients whose products
  // and sums each err by at most n·u·Σ|terms| (u = 2⁻²⁴; true of every summation order,
  // PyTorch's included) and whose activations and their derivatives are within a few ulps:
  //   2·(propagated[i] + tokens·u·magnitude[i]).
  // Derivation in src/block/reference_backward.cpp.
  double bound(const ReferenceGradient& g, int64_t i) const;
};

// Backward of one token in double precision: x, dy: [D] (f32, as the fast path sees them).
// Writes dx_out [D] and, if dx_bound_out is not null, a bound on |dx_f32 − dx| per element
// (same terms as above); adds this token's terms into grads.
void reference_backward_token(const Block& block, const float* x, const float* dy, double* dx_out,
                              ReferenceGradients& grads, double* dx_bound_out = nullptr);

}  // namespace ffn
