// The inference form of a feed-forward block: made once, then only run (like a oneDNN
// primitive created once with its weights reordered).
//
//   gated:    h = act(x·W_gateᵀ + b_gate) ⊙ (x·W_upᵀ + b_up);  y = h·W_downᵀ + b_down
//   2-matrix: h = act(x·W_upᵀ + b_up);                          y = h·W_downᵀ + b_down
//
// x, y: [T][D]; W_gate, W_up: [H][D]; W_down: [D][H]; biases f32 [H], [H], [D].
//
// Each matrix has its own weight type (ffn/weight_type.hpp, `ffn types`), and is laid out
// once, at construction, into the panels its forward kernel reads: 64 weight rows' k-th
// values side by side; a gated block whose gate and up share a type keeps 32 gate rows and
// the same 32 up rows in one panel, so one pass over the weights gives both halves of 32
// hidden units and the activation is applied to the tile at once. f32 panels hold the
// weights; bf16 / f16 panels the stored 16-bit values, widened exactly in registers (or, on
// AVX512_BF16, bf16 dotted with bf16-rounded activations); q8_0 / q4_0 panels the stored
// blocks regrouped (the same bytes and scales, never re-quantised), dotted in integers with
// the activations quantised to q8_0. No row-major copy is kept: the memory is the panels'.
//
// Every token's output is one fixed chain of operations per element, so it is bit-identical
// for any thread count and whatever other tokens share its batch. Accuracy contract per
// type: README, "Accuracy".
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ffn/block.hpp"
#include "ffn/config.hpp"
#include "ffn/tensor.hpp"
#include "ffn/thread_pool.hpp"
#include "ffn/weight_type.hpp"

namespace ffn {

// One weight matrix as a file or a quantiser stores it: `rows` rows of `cols` weights in
// `type`'s row layout (ggml's for the block types: cols/32 blocks of 32 consecutive weights
// of the row), row r at bytes + r·row_bytes, row_bytes = weight_type_info(type).row_bytes(cols).
struct StoredMatrix {
  WeightType type = WeightType::f32;
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<std::byte> bytes;
  bool empty() const { return rows == 0; }
  int64_t row_bytes() const;
  const std::byte* row(int64_t r) const { return bytes.data() + r * row_bytes(); }
  // m's rows stored as t (t's reference quantiser: ggml's rounding for q8_0 / q4_0, nearest
  // even for bf16 / f16). ffn::Error when a row's length is not a multiple of t's block, or
  // a value cannot be stored (non-finite in a block type), naming `name`.
  static StoredMatrix encode(const Matrix& m, WeightType t, const std::string& name, ThreadPool* pool = nullptr);
  // The exact f32 values.
  Matrix decode() const;
};

// A block's matrices as stored, and its f32 biases.
struct StoredWeights {
  StoredMatrix gate;  // [H][D]; empty for 2-matrix blocks
  StoredMatrix up;    // [H][D]
  StoredMatrix down;  // [D][H]
  Matrix gate_bias;   // [1][H]; empty without bias or gate
  Matrix up_bias;     // [1][H]; empty without bias
  Matrix down_bias;   // [1][D]; empty without bias
};

// Activation-sparse decode: at few tokens, a hidden channel whose activated gate value a_j
// (act(g_j) of a gated block — after Gemma 3n's Gaussian top-k where the config has one —
// or act(u_j) of a 2-matrix block) is at most `threshold` in magnitude is skipped: its row of
// up and its column of down are never read, and h_j is taken as 0. The rest is the dense
// block's arithmetic, so decode reads the gate's bytes plus (1 − s) of up's and down's at
// sparsity s. The block then also holds up's rows (gated blocks) and down transposed ([H][D],
// a row per hidden channel) in sparse_rows_type of their types, beside the panels that prefill
// keeps using: f32, f16 and bf16 as stored, their bytes once more; a block type (q4_K, …)
// requantised to q8_0 along D — a block type's value of a hidden channel sits inside a
// block along H in down, so skipping it would save no bytes — 8.5 bits a weight, and values
// within half a q8_0 step (|w|max of their 32 along D / 254) of the file's.
//   threshold 0: only exact zeros are skipped (ReLU, ReGLU, relu2, relu6, Gemma 3n's sparse
//     layers) — y within the dense block's accuracy contract (block types: that of the q8_0
//     copies' values);
//   threshold > 0: CATS (Lee et al. 2024) — channels with |a_j| ≤ threshold dropped, which
//     changes y: calibrate it (sparsity_threshold) and measure the loss (`ffn compare`);
//   down_threshold > 0 (gated blocks): of the channels the gate keeps, those with |h_j| ≤
//     down_threshold (h_j = a_j·u_j, the input of down) are dropped from down too — their
//     row of up was read to make h_j, their column of down is not. On the byte models, the
//     gate skipping a fifth to two fifths and h then more of down's columns cost 1.4–2.3×
//     less loss than the gate alone for the same bytes (docs/experiment.md, "Both at
//     once"). Calibrate it with hidden_values and sparsity_threshold.
// A token's y is the same bits whatever the thread count and whatever other tokens share a
// call of at most max_tokens (or whatever tokens share one of more); a token takes the
// sparse or the dense path by its own kept share, and the two agree within the contract.
struct SparseDecode {
  bool enabled = false;
  float threshold = 0.0f;
  // The sparse path runs for T ≤ max_tokens; more tokens take the dense panels: the union of
  // their kept channels is no longer sparse, and each token's dot products re-read the rows
  // (`ffn bench --sparsity` measures where dense wins: docs/performance.md, "Sparse decode").
  int64_t max_tokens = 1;
  // A token whose kept channels' rows (of up and down's transpose) are more bytes than this
  // share of up's and down's runs the dense panels (with the same channels dropped): reading
  // most rows scattered costs more than streaming them all (docs/performance.md, "Sparse
  // decode"). f32, f16 and bf16: the share of channels kept; a q4_K block's q8_0 copies read
  // 8.5 bits a weight for its 4.5, so it takes the sparse path to about a third of them kept.
  // 1: every token with at most as many bytes to read as the dense block's takes it. With a
  // down threshold, down's own count is known only once up's rows are read: a kept channel
  // then counts its up row and down_kept_share of its down row.
  double max_kept_share = 0.6;
  // Gated blocks: |h_j| ≤ down_threshold drops channel j from down too (above); 0: down reads
  // every channel the gate keeps. (Last, so that positional initialisers keep their meaning.)
  float down_threshold = 0.0f;
  // With a down threshold: the share of the channels the gate keeps that down is expected to
  // read as well, in (0, 1] — calibrated on sample tokens beside the threshold (`ffn forward
  // --calibrate-down-sparsity` writes it) — by which max_kept_share judges a token's bytes
  // (above). 1: down's rows counted as the gate keeps them, so that a gate keeping more than
  // max_kept_share sends a token to the dense panels whatever down would have skipped. It
  // changes which path a token takes, never y's contract.
  double down_kept_share = 1.0;
};

// The sparse decode a block gets unless asked otherwise (the checkpoint loader's default):
// exact (threshold 0) where its activation makes exact zeros — relu, relu2 and relu6, gated
// or not, and Gemma 3n's Gaussian top-k (gate_sparsity > 0) — and up and down are of a type
// sparse decode reads as stored (f32, f16, bf16); off otherwise — block types included: their
// q8_0 copies are extra memory and change the values, so a caller asks for them. max_tokens 4
// for a top-k of at least 0.9 (every token keeps at most a tenth), else 1.
SparseDecode auto_sparse_decode(const BlockConfig& config, const MatrixTypes& types);

// The type sparse decode holds a matrix stored as `stored` in, as rows of hidden channels:
// f32, f16 and bf16 themselves, every block type q8_0.
WeightType sparse_rows_type(WeightType stored);

// What a sparse decode drops, one phrase: "exact zeros skipped", or "|act(gate)| ≤ t dropped"
// and ", from down also |h| ≤ t_down" with a down threshold.
std::string sparse_decode_rule(const SparseDecode& sparse);

class MoeBlock;

class InferenceBlock {
 public:
  // An f32 block's weights with every matrix stored as `type` (or each as `types` says),
  // then laid into panels. The values are those of round_weights_to(copy of block, type).
  // ffn::Error when a matrix's row length is not a multiple of its type's block (q8_0 /
  // q4_0: D and H multiples of 32), naming the matrix.
  InferenceBlock(const Block& block, WeightType type, ThreadPool* pool = nullptr, const SparseDecode& sparse = {});
  InferenceBlock(const Block& block, const MatrixTypes& types, ThreadPool* pool = nullptr,
                 const SparseDecode& sparse = {});
  // Matrices already stored (a checkpoint's tensors, used as they are): each must have the
  // config's shape and its type's row layout, each bias its length or none; ffn::Error
  // naming the matrix and the mismatch otherwise. `sparse` enabled: ffn::Error when the
  // threshold is negative or not finite, or up or down is a block type and d_model is not a
  // multiple of 32 (q8_0's block).
  InferenceBlock(const BlockConfig& config, const StoredWeights& weights, ThreadPool* pool = nullptr,
                 const SparseDecode& sparse = {});
  ~InferenceBlock();
  InferenceBlock(InferenceBlock&&) noexcept;
  InferenceBlock& operator=(InferenceBlock&&) noexcept;

  const BlockConfig& config() const;
  const MatrixTypes& types() const;
  const SparseDecode& sparse() const;
  // Bytes of up's rows and down's transpose that sparse decode holds beside the panels
  // (0 when it is off).
  int64_t sparse_layout_bytes() const;
  // Bytes of the weights as their types store them, plus the f32 biases (what a decode
  // step reads; the panels hold these bytes plus padding to 64 rows).
  int64_t weight_bytes() const;
  // What the forward runs on the active ISA, one line: the kernels and activation formats
  // of both stages, e.g. "gate+up q4_K panels: q4_K_panel_gemm_avx512_vnni_2x64, exact
  // integer sums per super-block on q8_K activations, …; down q6_K panels: …".
  std::string describe() const;
  // Bytes of scratch a forward of T tokens on `threads` threads uses beyond the weights, x
  // and y (at most; kept by each thread between calls): the hidden values [T][H] in f32, a
  // [min(T, 256)][64] tile per thread ([..][128] when gate and up run side by side in types
  // of their own), and x and h in the activation formats the kernels take (bf16: 2 bytes a
  // value; q8_0 / q8_K: a byte a value, a 4-byte scale per block of 32 / 256, a 2-byte sum
  // per 16); a gate-first block (sparse decode, a Gaussian top-k) its gate values [T][H]
  // too, and where sparse decode may run at T, its channel list and its channel groups' sums
  // ([H / 256][T][D] in f32).
  int64_t workspace_bytes(int64_t T, int threads) const;

  // y = block(x). x: [T][D], y: [T][D] (may not alias x). Uses `pool` (default: a
  // process-wide pool with one thread per core) and the active ISA. ffn::Error on a shape
  // mismatch, or a non-finite activation where a stage quantises to q8_0.
  void forward(ConstMatrixView x, MatrixView y, ThreadPool* pool = nullptr) const;

  // a = the activated gate values that sparse decode compares with its threshold, [T][H]:
  // act(g + b_g) of a gated block (after its Gaussian top-k, if any), act(u + b_u) of a
  // 2-matrix one — for calibrating a threshold (sparsity_threshold) and for measuring the
  // sparsity a model makes.
  void hidden_activations(ConstMatrixView x, MatrixView a, ThreadPool* pool = nullptr) const;
  // h = the input of down, [T][H]: act(g + b_g) ⊙ (u + b_u) of a gated block (gpt-oss's
  // clamped form as its forward takes it), act(u + b_u) of a 2-matrix one, with no channel
  // dropped — for calibrating SparseDecode::down_threshold (sparsity_threshold(h, share)).
  void hidden_values(ConstMatrixView x, MatrixView h, ThreadPool* pool = nullptr) const;

  // The panels (internal: src/block/inference_panels.hpp).
  struct Panels;

 private:
  // As the StoredWeights constructor, checking the block scales only when `check_scales`: the
  // checkpoint loader has checked those of every tensor it read (src/block/loaded_weights.hpp).
  InferenceBlock(const BlockConfig& config, const StoredWeights& weights, ThreadPool* pool, const SparseDecode& sparse,
                 bool check_scales);
  friend InferenceBlock inference_block_of_checked_weights(const BlockConfig& config, const StoredWeights& weights,
                                                           ThreadPool* pool, const SparseDecode& sparse);
  // Runs its experts' panels together (src/moe/moe_block.cpp).
  friend class MoeBlock;

  std::unique_ptr<const Panels> panels_;
};

// The threshold at which a fraction `sparsity` (in [0, 1)) of the magnitudes |a| is at most
// it — the ⌈s·n⌉-th smallest (0 for s = 0) — so that SparseDecode{true, threshold} skips that
// fraction of these activations' channels. ffn::Error for s outside [0, 1), no values, or a
// NaN among them.
float sparsity_threshold(ConstMatrixView a, double sparsity);

// Whether sparse decode keeps a value against a threshold: |v| > threshold, NaN kept (it
// must reach y) — the rule of SparseDecode's threshold on act(gate) and of its down_threshold
// on h alike.
inline bool sparse_decode_keeps(float v, float threshold) { return !(std::abs(v) <= threshold); }

// SparseDecode::down_kept_share calibrated on sample tokens: of the (token, channel) pairs
// whose a (hidden_activations) the gate keeps by `threshold`, the share whose h
// (hidden_values, same shape) down keeps too by `down_threshold`; 1 when the gate keeps none
// or down none of them (the share is in (0, 1]). ffn::Error when a and h differ in shape.
double down_kept_share(ConstMatrixView a, ConstMatrixView h, float threshold, float down_threshold);

}  // namespace ffn
