// Activation sparsity of the byte-level model at evaluation (issue 36): what the loss
// becomes when the hidden channels whose activation is small are dropped, as an
// activation-sparse decode would drop them (row j of W_up — and of W_gate — and column j
// of W_down left unread).
//
// Which value decides (SparsityRule):
//   gate (CATS' rule): a_j = act(g_j) for gated blocks (g = x·W_gateᵀ), the gate being what a
//     decode reads first, so that W_up's row j and W_down's column j are left unread;
//   hidden (TEAL's and SCAP's rule for W_down, whose input it thresholds): a_j = h_j =
//     act(g_j)·u_j, so that a decode must read W_gate and W_up whole and leaves only W_down's
//     column j unread — a share s of channels dropped reads 1 − s/3 of a gated block's
//     weights where the gate rule reads 1 − 2s/3;
//   for 2-matrix blocks both are a_j = act(u_j) (u = x·W_upᵀ), which is h_j itself.
// Channel j of token t in layer l is dropped — h_j set to 0 before W_down — when |a_j| < t_l
// (strictly), or, given a second threshold (ChannelMask::hidden_threshold), when |h_j| is
// below it: both rules at once, the gate skipping up's rows and down's columns, h then
// skipping more of down's columns among the channels whose up row was read. Exact zeros
// (ReLU's and ReGLU's act(g) = 0) need no threshold: h_j is 0 already, and they are counted
// as dropped at every threshold, t_l = 0 included, besides being counted on their own as the
// natural ("exact") sparsity.
//
// Calibration (calibrated_threshold): from the |a| of N calibration channels of a layer
// (tokens × hidden, from the TRAINING split: the validation loss must not choose its own
// thresholds), with k = ⌊s·N + ½⌋ the channels to drop at target s:
//   k = 0: t = 0 (nothing is below it: s = 0 is the dense model, bit for bit);
//   0 < k < N: t = the (k+1)-th smallest |a|, so exactly the k smallest fall below it —
//     ties: every channel equal to the threshold value is KEPT, so when values tie at the
//     boundary fewer than k are dropped (the achieved fraction on calibration is ≤ s; for
//     ReLU, whose exact zeros tie at 0, t can be 0 and the exact zeros alone are dropped,
//     achieving more than s);
//   k = N: t = +∞ (every channel dropped; the FFN contributes nothing).
#pragma once

#include <cstdint>
#include <vector>

#include "ffn/backward.hpp"
#include "ffn/block.hpp"
#include "ffn/tensor.hpp"
#include "ffn/thread_pool.hpp"
#include "train/train.hpp"

namespace ffn {

// The threshold t at target fraction s ∈ [0, 1] of `magnitudes` (values ≥ 0, taken by
// value: reordered in the copy), by the rule above. ffn::Error for s outside [0, 1], an
// empty list, or a negative or NaN magnitude.
float calibrated_threshold(std::vector<float> magnitudes, double s);

// The value that decides whether a hidden channel is dropped (see above).
enum class SparsityRule { gate, hidden };

// How one layer's channels are dropped: |a_j| < threshold (a_j by rule; a == 0 always), or
// |h_j| < hidden_threshold (0: no such test).
struct ChannelMask {
  SparsityRule rule = SparsityRule::gate;
  float threshold = 0;
  float hidden_threshold = 0;
};

// Channels of one layer seen by a masked forward, over its T tokens × H hidden channels.
struct LayerSparsity {
  int64_t channels = 0;     // T·H
  int64_t dropped = 0;      // h_j = 0: W_down's column j unread
  int64_t up_skipped = 0;   // of those, W_up's row j unread too: gated blocks, the gate rule's drops
  int64_t exact_zeros = 0;  // a == 0 (±0): dropped whatever t is
  double dropped_fraction() const { return channels ? double(dropped) / double(channels) : 0.0; }
  double up_skipped_fraction() const { return channels ? double(up_skipped) / double(channels) : 0.0; }
  double exact_fraction() const { return channels ? double(exact_zeros) / double(channels) : 0.0; }
};

// Storage of masked_block_forward, reused across calls of the same shape.
struct MaskedForwardWork {
  ForwardCache cache;  // the pre-activations g and u ([T][H] each; u alone for 2-matrix blocks)
  Matrix act;          // [T][H] a = act(g) gated, act(u) 2-matrix
  Matrix hidden;       // [T][H] h = act(g) ⊙ u (or act(u)), then masked
};

// y = W_down·(h ⊙ keep) for x [T][D], y [T][D], keep_j = !(|a_j| < threshold || |h_j| <
// hidden_threshold), a_j by mask.rule (the work's act holds act(g) for gated blocks whatever
// the rule) — thresholds 0 keep every channel, and y is then Block::forward's bit for bit
// (the same kernels: the pre-activations by forward_train, h by the activation kernels, y by
// the forward GEMM).
// Adds this call's channels to `counts`; appends every |a| (token-major) to `magnitudes`
// when given (calibration). Blocks without bias only (ffn::Error otherwise: a bias on
// W_down would survive the dropped channels and need its own rule).
void masked_block_forward(const Block& block, ConstMatrixView x, MatrixView y, const ChannelMask& mask,
                          MaskedForwardWork& work, LayerSparsity& counts, std::vector<float>* magnitudes,
                          ThreadPool& pool);

// Every layer's |a| (a by `rule`) over the batch, from the dense forward (per layer: T·H
// values, token-major). Dense models only.
std::vector<std::vector<float>> hidden_magnitudes(LanguageModel& model, const Batch& batch, SparsityRule rule,
                                                  ThreadPool& pool);

// One threshold per layer at target s, each by calibrated_threshold from its magnitudes.
std::vector<float> calibrated_thresholds(const std::vector<std::vector<float>>& magnitudes, double s);

struct SparseEvaluation {
  double loss = 0;  // mean cross-entropy, nats per byte
  std::vector<LayerSparsity> layers;
  // Means over layers of each layer's fractions.
  double dropped_fraction() const { return mean_over_layers(&LayerSparsity::dropped_fraction); }
  double up_skipped_fraction() const { return mean_over_layers(&LayerSparsity::up_skipped_fraction); }
  double exact_fraction() const { return mean_over_layers(&LayerSparsity::exact_fraction); }
  double mean_over_layers(double (LayerSparsity::*fraction)() const) const;
};

// The model's loss on the batch with layer l's channels below thresholds[l] dropped (and
// those with |h| below hidden_thresholds[l], when given), and what was dropped. ffn::Error
// when thresholds (or a non-empty hidden_thresholds) does not hold one value per layer.
SparseEvaluation sparse_loss(LanguageModel& model, const Batch& batch, const std::vector<float>& thresholds,
                             SparsityRule rule, ThreadPool& pool, const std::vector<float>& hidden_thresholds = {});

}  // namespace ffn
