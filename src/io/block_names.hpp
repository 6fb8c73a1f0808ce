// The names under which checkpoints of real models keep one layer's MLP, and finding which
// scheme a checkpoint uses.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "io/tensor_source.hpp"

namespace ffn::io {

struct BlockNames {
  std::string scheme;              // "seeds", "hugging face", "meta", "gpt-2", "gguf", ...
  std::string gate, up, down;      // weight tensors; gate is empty when the file has none
  std::string gate_bias, up_bias, down_bias;  // where biases would be (they may be absent)
  bool conv1d = false;             // GPT-2's Conv1D stores weights [in, out], not [out, in]
  // Gate and up fused in one [2H, D] tensor (gate == up, and their biases one [2H]): the
  // gate's rows first (Phi-3, GLM: the module's chunk(2) gives the gate first) or second.
  bool fused = false;
  bool gate_first = true;
  // The first row of the gate's and of up's H rows in their tensors.
  int64_t gate_row0(int64_t hidden) const { return fused && !gate_first ? hidden : 0; }
  int64_t up_row0(int64_t hidden) const { return fused && gate_first ? hidden : 0; }
};

// pattern with {N} replaced by the layer number (a pattern without {N} is returned as it is).
std::string with_layer(const std::string& pattern, int64_t layer);
// The layers N for which a tensor named pattern (with {N}) exists.
std::set<int64_t> layers_matching(const TensorSource& source, const std::string& pattern);

// The block of `layer` in `source`. Throws ffn::Error listing the layers the checkpoint has
// when `layer` is not among them, or the names found when no scheme matches.
BlockNames find_block_names(const TensorSource& source, int64_t layer);

// Every layer whose block the source holds, in order (a single seeds' block is layer 0).
std::vector<int64_t> block_layers(const TensorSource& source);

}  // namespace ffn::io
