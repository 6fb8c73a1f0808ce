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
                                             const std::vector<double>& targets, int64_t eval_tokens, ThreadPool& pool);

// One variant's results: its dense validation loss per seed and, per seed, its points.
struct VariantSparsity {
  std::string name;
  std::vector<double> dense_losses;                // [seed]
  std::vector<std::vector<SparsityPoint>> points;  // [seed][target]
};

// Per target: the mean over seeds and the increase over the dense loss, its noise the
// standard error of the per-seed differences; "within noise" unless |increase| > 2 SE.
nlohmann::json sparsity_json(const VariantSparsity& v);
// The table of one variant (from sparsity_json's rows).
void print_sparsity_table(FILE* out, const VariantSparsity& v);
// variant,seed,target,achieved,exact_zeros,valid_loss,dense_loss,increase — every run.
void write_sparsity_csv(const std::string& path, const std::vector<VariantSparsity>& variants);
// The mean increase against the target (percent), one line per variant.
void write_sparsity_svg(const std::string& path, const std::vector<VariantSparsity>& variants);

}  // namespace ffn::cli
