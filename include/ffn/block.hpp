// A feed-forward block: its configuration, its weights (nn.Linear layout; f32, or stored as
// bf16, f16, q8_0 or q4_0 for inference) and forward.
//
//   gated:    h = act(x·W_gateᵀ + b_gate) ⊙ (x·W_upᵀ + b_up);  y = h·W_downᵀ + b_down
//   2-matrix: h = act(x·W_upᵀ + b_up);                          y = h·W_downᵀ + b_down
//
// x, y: [T][D]; W_gate, W_up: [H][D]; W_down: [D][H]; biases [H], [H], [D].
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

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

// One weight matrix as a stored type holds it: `rows` rows of `cols` weights, row r at
// bytes + r·row_bytes. bf16 / f16: cols uint16 values per row (row_bytes = 2·cols);
// q8_0 / q4_0: cols/32 ggml blocks per row (BlockQ8_0 / BlockQ4_0 of ffn/quant.hpp, each 32
// consecutive weights of one row; row_bytes = cols/32 · 34 or 18).
struct TypedMatrix {
  WeightType type = WeightType::f32;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t row_bytes = 0;
  std::vector<std::byte> bytes;
  bool empty() const { return rows == 0; }
  const std::byte* row(int64_t r) const { return bytes.data() + r * row_bytes; }
};

// The weights of a block stored as a type other than f32; biases stay f32, as in every format.
struct TypedWeights {
  TypedMatrix gate;  // [H][D]; empty for 2-matrix blocks
  TypedMatrix up;    // [H][D]
  TypedMatrix down;  // [D][H]
  Matrix gate_bias;  // [1][H]; empty without bias or gate
  Matrix up_bias;    // [1][H]; empty without bias
  Matrix down_bias;  // [1][D]; empty without bias
};

// The f32 weights laid out once for the forward kernels (Block::packed; defined in
// src/block/packed_weights.hpp).
struct PackedWeights;

class Block {
 public:
  // Allocates zeroed weights for a validated configuration.
  explicit Block(const BlockConfig& config);

  // nn.Linear's default initialisation, made deterministic: every weight and bias of a
  // projection with fan-in n is uniform in [-1/√n, 1/√n), drawn from a counter-based
  // generator keyed by (seed, tensor, index) — the same values for any thread count.
  static Block random(const BlockConfig& config, uint64_t seed, ThreadPool* pool = nullptr);

  const BlockConfig& config() const { return config_; }
  // The f32 weights, for f32 blocks (training, backward and the reference read these). On
  // a block stored as another type, or packed, these throw ffn::Error: it keeps no
  // row-major f32 copy.
  BlockWeights& weights();
  const BlockWeights& weights() const;

  // The type the weight matrices are stored in (f32 unless made by stored_as).
  WeightType weight_type() const { return weight_type_; }
  // The stored matrices and biases of a block made by stored_as (empty for f32 blocks).
  const TypedWeights& typed_weights() const { return typed_; }

  // This f32 block with its matrices stored as t — bf16 / f16 rounded to nearest even,
  // q8_0 / q4_0 quantised as ggml's reference quantisers do — and no f32 copy kept (the
  // memory is the point). Its forward reads the weights as stored; its values are those of
  // round_weights_to(copy, t). q8_0 / q4_0 need D and H to be multiples of 32. t = f32
  // gives a copy. Throws ffn::Error on a block that is not f32, or a size that does not fit.
  Block stored_as(WeightType t, ThreadPool* pool = nullptr) const;

  // A block over matrices already stored as one type other than f32 (e.g. a GGUF file's
  // q4_0 tensors, used without re-quantising). Every matrix must have the config's shape
  // and the type's row layout, every bias its length or none; ffn::Error naming the matrix
  // and the mismatch otherwise.
  static Block from_stored(const BlockConfig& config, TypedWeights weights);

  // This block for inference, its weights laid out once in the panels the forward kernels
  // read (64 weight rows' k-th values side by side; a gated block's gate and up rows of
  // the same 32 hidden units share a panel, so one pass over the weights computes both and
  // the activation and product are applied to the tile at once), and no row-major copy
  // kept — the same memory as the matrices, plus padding to 64 rows. Any weight type: f32;
  // bf16 / f16 (stored_as, from_stored), whose panels keep the stored 16-bit values,
  // widened exactly in registers; q8_0 / q4_0, whose blocks are regrouped (the same bytes
  // and scales, no re-quantising) so that one integer dot product serves 16 rows, with the
  // activations quantised to q8_0 at every token count.
  // Every token's output is one fixed chain of operations per element, so it is
  // bit-identical for any thread count and any batch the token is in (alone or with
  // others). Forward only: weights(), backward and training need the f32 block. Throws
  // ffn::Error on a block that is already packed.
  Block packed(ThreadPool* pool = nullptr) const;
  bool is_packed() const { return packed_ != nullptr; }

  // Fast forward: y = block(x). x: [T][D], y: [T][D] (may not alias x). Uses `pool`
  // (default: a process-wide pool with one thread per core) and the active ISA. The
  // result is bit-identical for any number of threads. Throws ffn::Error on shape mismatch.
  // A stored type's weights are read as stored: at few tokens bf16 / f16 are widened in
  // registers and q8_0 / q4_0 dotted in integers with the activations quantised to q8_0;
  // at many tokens a panel of rows at a time is widened exactly to f32 for the f32 GEMM
  // (src/block/forward_typed.cpp; accuracy contract per type in the README).
  void forward(ConstMatrixView x, MatrixView y, ThreadPool* pool = nullptr) const;

 private:
  struct Unallocated {};
  Block(const BlockConfig& config, Unallocated) : config_(config) {}
  void forward_stored(ConstMatrixView x, MatrixView y, ThreadPool& pool) const;
  void forward_packed(ConstMatrixView x, MatrixView y, ThreadPool& pool) const;

  BlockConfig config_;
  BlockWeights weights_;
  WeightType weight_type_ = WeightType::f32;
  TypedWeights typed_;
  std::shared_ptr<const PackedWeights> packed_;  // set by packed(); then weights_ is empty
};

// Rounds every weight matrix to the values weight type t stores — bf16/f16 conversion, or
// q8_0/q4_0 quantisation (ggml's reference rounding) and back — so that forward computes
// what a block stored as t computes. Biases stay f32, as in every format. The block formats
// need D and H to be multiples of 32 (ffn::Error otherwise, naming the size).
void round_weights_to(Block& block, WeightType t);

// The first token count at which the forward of a block stored as t lays its weight rows
// into panels, 64 rows at a time — widened to f32 for the packed f32 GEMM, or bf16 rows as
// bf16 pair panels for vdpbf16ps where the CPU has AVX512_BF16 — instead of reading them as
// stored per token (chosen by T alone, so results never depend on the thread count).
int64_t stored_packed_min_tokens(WeightType t);

// The process-wide pool used when none is given (created on first use).
ThreadPool& default_thread_pool();

// Forward and backward keep their scratch buffers ([T][H] hidden values, per-thread tiles)
// per thread between calls, grown to the largest asked for, because fresh memory costs a
// page fault per page on every call. This frees the calling thread's now (each thread's are
// freed when it exits); the next call allocates again.
void release_scratch();

// The oracle: forward of one token in double precision (products, sums and activation
// all in double, from the f32 weights and input), single-threaded, straightforward.
// y_out: [D]. If error_bound_out is not null it receives, per output, a rigorous
// first-order bound on |y_f32 - y_exact| for any f32 forward that sums each dot product of
// length n with error ≤ n·u·Σ|terms| (u = 2⁻²⁴; true of every summation order) and
// evaluates the activation within a few ulps — see reference.cpp for its derivation.
// operand_rounding: the relative error r with which a forward rounds the activations that
// enter its products (x, and h before the down projection) — 2⁻⁸ for the bf16 dot product
// of bf16 blocks on AVX512_BF16 (Isa::avx512_bf16): packed, or as stored from
// stored_packed_min_tokens; 0 where they stay f32.
void reference_forward_token(const Block& block, const float* x, double* y_out,
                             double* error_bound_out = nullptr, double operand_rounding = 0.0);

// Reference forward of every row of x, rounded to f32.
void reference_forward(const Block& block, ConstMatrixView x, MatrixView y);

}  // namespace ffn
