// An InferenceBlock of matrices whose block scales the caller has already checked (internal):
// the checkpoint loader checks each tensor's scales once, when it first reads it
// (io::TensorSource::checked_data), and its matrices come from those bytes or from ffn's own
// quantisers, which refuse a scale that is not finite — so the constructor's check of every
// matrix (InferenceBlock's StoredWeights constructor) would read the same scales again.
#pragma once

#include "ffn/inference_block.hpp"

namespace ffn {

// InferenceBlock(config, weights, pool) without the block-scale check; every other check
// (shapes, row layouts, biases) as that constructor's.
InferenceBlock inference_block_of_checked_weights(const BlockConfig& config, const StoredWeights& weights,
                                                  ThreadPool* pool, const SparseDecode& sparse = {});

}  // namespace ffn
