// Save and restore a training run's state (format in train/train.hpp, CheckpointOptions).
#pragma once

#include <string>
#include <vector>

#include "train/train.hpp"

namespace ffn::train_detail {

// Where a run stands between two steps.
struct RunState {
  int64_t step = 0;       // steps done
  TrainResult result;     // step_losses, curve and seconds so far
  double since_eval = 0;  // sum of training losses since the last curve point
  int64_t since_eval_steps = 0;
};

// Identifies a run: the model, every option and the data split sizes. A checkpoint is
// resumed only by the run whose fingerprint it carries.
std::string fingerprint(const ModelConfig& model, const TrainOptions& options, const ByteData& data);

void save_checkpoint(const std::string& path, const std::string& fingerprint, const std::vector<ParameterRef>& params,
                     AdamWState& optimizer, const RunState& state);

// false when there is no file at path; ffn::Error when there is one from another run or
// it does not hold every tensor at its size.
bool load_checkpoint(const std::string& path, const std::string& fingerprint, const std::vector<ParameterRef>& params,
                     AdamWState& optimizer, RunState& state);

}  // namespace ffn::train_detail
