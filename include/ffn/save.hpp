// Saving blocks: one or more layers' feed-forward blocks written as a GGUF file under
// llama.cpp's tensor names (blk.N.ffn_gate.weight, blk.N.ffn_up.weight, blk.N.ffn_down.weight,
// and their .bias), each matrix in its weight type — one type for all, one per matrix, or what
// one of llama.cpp's quantisation mixes picks for the layer. The file is written atomically
// (a temporary file beside it, then rename) and opens again as a Checkpoint
// (ffn/checkpoint.hpp), and in llama.cpp's GGUF tools. `ffn quantize` writes its files so.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ffn/block.hpp"
#include "ffn/weight_type.hpp"

namespace ffn {

// One layer to write: `block`'s f32 weights as blk.<layer>, each matrix stored as `types`
// says (the type's reference quantiser, as InferenceBlock(block, types) stores them), the
// biases in f32. The block must outlive the call.
struct LayerToSave {
  int64_t layer = 0;
  const Block* block = nullptr;
  MatrixTypes types;
};

// The types llama.cpp's quantisation mix `mix` ("q4_k_m", any case: q6_k, q5_k_m, q5_k_s,
// q4_k_m, q4_k_s, q3_k_m, q2_k) gives the MLP of layer `layer` of a model of `layers` layers,
// as llama-quantize picks them for a dense model without an importance matrix: gate and up
// in one type, down in that type or a wider one on the layers its rule names (Q4_K_M: q6_K
// on the first and last eighth of the layers and every third between). ffn::Error listing
// the mixes for another name.
MatrixTypes llama_mix_types(std::string_view mix, int64_t layer, int64_t layers);

// What the file says of itself besides the blocks: general.name, and ffn.quantization (how
// the types were chosen, for people); each is written only when not empty.
struct SaveOptions {
  std::string name;
  std::string quantization;
};

// Writes `layers` (at least one, all of one variant) to a GGUF file at `path`, in the order
// given, with the metadata ffn.variant (from which a Checkpoint takes the activation),
// ffn.d_model and ffn.hidden (the first layer's) and ffn.layer_count. ffn::Error naming the
// tensor when a matrix's rows are not whole blocks of its type (q8_0: multiples of 32, q4_K:
// of 256) or a value cannot be stored in it (a non-finite weight in a block type), or when a
// layer number repeats; naming the layers when their variants differ; naming the path and
// the system error when the file cannot be written.
void save_gguf(const std::string& path, const std::vector<LayerToSave>& layers, const SaveOptions& options = {});

}  // namespace ffn
