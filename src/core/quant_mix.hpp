// llama.cpp's quantisation mixes, the MLP part: the file types people download (Q4_K_M is
// Ollama's default) store gate and up in one K-quant type and down, on some layers, in a
// wider one. These are the rules of llama.cpp's llama_tensor_get_type for ffn_gate, ffn_up
// and ffn_down of dense (non-expert, non-Falcon) models without an importance matrix.
// The library's users reach them through llama_mix_types (ffn/save.hpp); `ffn quantize` also
// prints each mix's summary and the rule that picked each layer's types.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ffn/weight_type.hpp"

namespace ffn {

struct QuantMix {
  std::string_view name;     // "q4_k_m", as llama-quantize names the file type (lower case)
  std::string_view summary;  // one line: the types it picks
};
// Every mix: q6_k, q5_k_m, q5_k_s, q4_k_m, q4_k_s, q3_k_m, q2_k.
const std::vector<QuantMix>& quant_mixes();
// The mix of that name (any case), or nullptr.
const QuantMix* find_quant_mix(std::string_view name);

// The types a mix gives layer `layer` of `layers` (all the model's layers, not only those
// written), and in words the rule that picked down's type.
struct MixChoice {
  MatrixTypes types;
  std::string rule;
};
MixChoice quant_mix_types(const QuantMix& mix, int64_t layer, int64_t layers);

// llama.cpp's use_more_bits: the first and last eighth of the layers and every third layer
// in between.
bool use_more_bits(int64_t layer, int64_t layers);

}  // namespace ffn
