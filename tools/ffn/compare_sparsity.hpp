// ffn compare --sparsity: after each run, the validation loss with the hidden channels of
// small activation dropped (train/sparse_eval.hpp), at each target fraction — the thresholds
// calibrated per layer on windows of the TRAINING split, the loss measured on the run's
// fixed validation windows — and the reports: a table per variant, the JSON rows, a CSV of
// every (variant, seed, target) and the plot of the loss increase against sparsity.
#pragma once

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "train/sparse_eval.hpp"
#include "train/train.hpp"

namespace ffn::cli {

// One target's evaluation of one trained model.
struct SparsityPoint {
  double target = 0;                     // fraction of hidden channels, in [0, 1)
  std::vector<float> thresholds;         // per layer
  std::vector<float> hidden_thresholds;  // per layer, on |h| (--sparsity-hidden); empty: none
  SparseEvaluation eval;
};

// Targets in percent from --sparsity: each in [0, 100), none twice; ffn::Error otherwise.
// Returned as fractions, in the order given.
std::vector<double> sparsity_targets(const std::vector<double>& percent);

// Calibrates on `eval_tokens` evenly spaced windows of data.train() and evaluates on the
// same validation windows the trainer's loss uses (spaced_batch(data.valid(), …)). With
// hidden_share > 0, every target's evaluation also drops the channels whose |h| is below
// each layer's threshold calibrated to drop that share by |h| alone.
std::vector<SparsityPoint> evaluate_sparsity(LanguageModel& model, const ByteData& data,
                                             const std::vector<double>& targets, SparsityRule rule, double hidden_share,
                                             int64_t eval_tokens, ThreadPool& pool);

// The share of a block's weights a decode reads with `up_skipped` of its up rows and
// `dropped` of its down columns left unread: gated (1 + (1 − up) + (1 − dropped)) / 3 (the
// gate read whole; the gate rule alone: 1 − 2s/3, the hidden rule alone: 1 − s/3); 2-matrix
// (1 + (1 − dropped)) / 2 (up read whole: 1 − s/2).
double weights_read(bool gated, double up_skipped, double dropped);

// One variant's results: its dense validation loss per seed and, per seed, its points.
struct VariantSparsity {
  std::string name;
  bool gated = false;
  SparsityRule rule = SparsityRule::gate;
  double hidden_share = 0;                         // --sparsity-hidden as a fraction; 0: none
  std::vector<double> dense_losses;                // [seed]
  std::vector<std::vector<SparsityPoint>> points;  // [seed][target]
};

// Per target: the mean over seeds and the increase over the dense loss, its noise the
// standard error of the per-seed differences; "within noise" unless |increase| > 2 SE; the
// rule, the shares of up's rows and down's columns left unread and the weights read.
nlohmann::json sparsity_json(const VariantSparsity& v);
// The table of one variant (from sparsity_json's rows).
void print_sparsity_table(FILE* out, const VariantSparsity& v);
// variant,rule,hidden_target,seed,target,achieved,up_skipped,exact_zeros,weights_read,
// valid_loss,dense_loss,increase — every run.
void write_sparsity_csv(const std::string& path, const std::vector<VariantSparsity>& variants);
// The mean increase against the target (percent), one line per variant.
void write_sparsity_svg(const std::string& path, const std::vector<VariantSparsity>& variants);

}  // namespace ffn::cli
