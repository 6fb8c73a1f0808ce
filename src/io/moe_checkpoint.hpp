// The mixture-of-experts half of the checkpoint loader (moe_checkpoint.cpp), called by
// Checkpoint (checkpoint.cpp) once it has found a MoE router for the layer. `path` is the
// checkpoint's path as the user gave it, for messages.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "ffn/checkpoint.hpp"
#include "io/tensor_source.hpp"

namespace ffn::io {

// The layer's MoeConfig, its routed experts' types in the file (mxfp4 for gpt-oss's MXFP4
// release) and where its names, routing and activation came from, reading no weights:
// every count and shape checked against the others (Checkpoint::load_layer's errors).
LayerInfo moe_layer_info(const std::string& path, const TensorSource& src, const LoadOptions& options);

// The router, the shared experts and routed experts [first, last) (last empty: all of
// them), each expert an InferenceBlock in its stored types or options.type.
LoadedMoeExperts read_moe_experts(const std::string& path, const TensorSource& src, const LoadOptions& options,
                                  int64_t first, std::optional<int64_t> last, ThreadPool& pool);

}  // namespace ffn::io
