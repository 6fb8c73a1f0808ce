// Loading a block's weights from a checkpoint file by the names of its tensors.
// Naming schemes known now: the seeds' modules (gate.weight, up.weight, down.weight and
// optional .bias of each). D and H come from the tensor shapes.
#pragma once

#include <string>

#include "ffn/block.hpp"
#include "ffn/config.hpp"

namespace ffn {

// Reads a safetensors file holding one block of the given variant. Throws ffn::Error when
// names are missing (listing the names found), shapes disagree, or the variant's number of
// matrices does not match the file's.
Block load_block_safetensors(const std::string& path, Variant variant);

}  // namespace ffn
