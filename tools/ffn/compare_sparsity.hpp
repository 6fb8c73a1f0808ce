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
  double target = 0;              // fraction of hidden channels, in [0, 1)
  std::vector<float> thresholds;  // per layer
  SparseEvaluation eval;
};

// Targets in percent from --sparsity: each in [0, 100), none twice; ffn::Error otherwise.
// Returned as fractions, in the order given.
std::vector<double> sparsity_targets(const std::vector<double>& percent);

// Calibrates on `eval_tokens` evenly spaced windows of data.train() and evaluates on the
// same validation windows the trainer's loss uses (spaced_batch(data.valid(), …)).
std::vector<SparsityPoint> evaluate_sparsity(LanguageModel& model, const ByteData& data,
                                             const std::vector<double>& targets, SparsityRule rule, int64_t eval_tokens,
                                             ThreadPool& pool);

// The share of a block's weights a decode reads when `dropped` of its hidden channels are
// dropped by `rule`: gated 1 − 2s/3 (gate rule: up's rows and down's columns skipped) or
// 1 − s/3 (hidden rule: down's columns only); 2-matrix 1 − s/2 (up read whole).
double weights_read(bool gated, SparsityRule rule, double dropped);

// One variant's results: its dense validation loss per seed and, per seed, its points.
struct VariantSparsity {
  std::string name;
  bool gated = false;
  SparsityRule rule = SparsityRule::gate;
  std::vector<double> dense_losses;                // [seed]
  std::vector<std::vector<SparsityPoint>> points;  // [seed][target]
};

// Per target: the mean over seeds and the increase over the dense loss, its noise the
// standard error of the per-seed differences; "within noise" unless |increase| > 2 SE; the
// rule and the weights a decode reads at the achieved sparsity.
nlohmann::json sparsity_json(const VariantSparsity& v);
// The table of one variant (from sparsity_json's rows).
void print_sparsity_table(FILE* out, const VariantSparsity& v);
// variant,rule,seed,target,achieved,exact_zeros,weights_read,valid_loss,dense_loss,increase —
// every run.
void write_sparsity_csv(const std::string& path, const std::vector<VariantSparsity>& variants);
// The mean increase against the target (percent), one line per variant.
void write_sparsity_svg(const std::string& path, const std::vector<VariantSparsity>& variants);

}  // namespace ffn::cli
