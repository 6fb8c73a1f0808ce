// The model families whose MLP layers ffn reads: one list, from which the loader takes each
// family's activation (the config.json keys its transformers class reads, and its default
// where the config names none), `ffn info --weights` names the family of a checkpoint, a
// family ffn cannot run is refused by name with the reason, and `ffn info --families` prints
// the table the README shows.
//
// A family is told by config.json's model_type (or its text_config's, for a multimodal
// checkpoint whose language model is the family's) or by a GGUF file's
// general.architecture. Tensor names are matched by the naming schemes (block_names.hpp,
// moe_names.hpp), which families share; the table's name columns say which a family uses.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ffn/config.hpp"
#include "io/tensor_source.hpp"

namespace ffn::io {

struct ModelFamily {
  std::string_view name;                // "Phi-3, Phi-3.5, Phi-4-mini"
  std::string_view model_types;         // config.json model_type values, space-separated
  std::string_view gguf_architectures;  // general.architecture values, space-separated
  bool moe = false;                     // its feed-forward layers are mixtures of experts
  std::string_view hf_names;            // one layer's MLP tensors as save_pretrained writes them
  std::string_view gguf_names;          // as llama.cpp's converter writes them
  // config.json keys that name the activation, in the order the family's class reads them;
  // empty: the generic order (hidden_act, hidden_activation, activation_function,
  // dense_act_fn, feed_forward_proj).
  std::string_view activation_keys;
  // The activation when the config names none: the configuration class's default, or the
  // function the module hard-codes (BLOOM, MPT); nullopt when the family always names it.
  std::optional<Activation> default_activation;
  // The activation of a GGUF file of this architecture (which names none): the function of
  // the family's own module, which is what the weights were trained with.
  std::optional<Activation> gguf_activation;
  std::string_view notes;    // for the table: what differs from the plain block
  std::string_view refusal;  // empty when ffn runs the family; else why not
};

// Every family, in the README's order: the dense ones, then the mixtures of experts.
const std::vector<ModelFamily>& model_families();

// The words of one of the table's space-separated lists (model_types, activation_keys, …).
std::vector<std::string_view> list_words(std::string_view list);

// The family of a checkpoint, and how it was told.
struct FamilyMatch {
  const ModelFamily* family = nullptr;  // nullptr: the checkpoint names none, or one not in the table
  std::string source;                   // "config.json model_type 'phi3'", "general.architecture 'phi3'"
  std::string named;                    // the model_type / architecture the checkpoint names ("" if none)
};
// The source's family. A model_type or architecture found in several rows (GGUF's 'llama'
// for Llama and Mixtral) gives the row of the layer's kind (moe). Never throws for an
// unknown name: `named` then holds it and `family` is nullptr.
FamilyMatch find_family(const TensorSource& source, bool moe_layer);

// Throws ffn::Error naming the family and the reason when the source's family is refused.
void check_family_supported(const TensorSource& source, bool moe_layer);

// "Phi-3, Phi-3.5, Phi-4-mini (config.json model_type 'phi3')", or "" when unknown.
std::string family_description(const FamilyMatch& match);

// The table as Markdown (the README's) or as aligned text.
std::string families_markdown();

}  // namespace ffn::io
