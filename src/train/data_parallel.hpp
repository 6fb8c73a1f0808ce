// Data parallelism inside the training loop: each of P workers takes a contiguous share of
// every batch, and their gradients and losses are summed into the whole batch's before
// clipping and the optimizer step, so every worker takes the same step.
#pragma once

#include <cstdint>
#include <vector>

#include "ffn/collective.hpp"
#include "train/train.hpp"

namespace ffn::train_detail {

// Examples [begin, end) of the batch for worker `rank` of `ranks` (sizes differ by ≤ 1).
Batch batch_share(const Batch& batch, int rank, int ranks);

// Turns this worker's mean loss and gradients over its `share` examples into the whole
// batch's of `total` examples, the same on every worker: each worker weights its share by
// share/total, then one sum across workers of every gradient packed into `flat` (reused
// between steps) and one of the loss (in double). Returns the batch's mean loss.
double sum_shares(Collective& group, const std::vector<ParameterRef>& params, std::vector<float>& flat, double loss,
                  int64_t share, int64_t total);

}  // namespace ffn::train_detail
