// Loading one layer's feed-forward block from a real checkpoint.
//
// Formats: safetensors (one file, or shards through model.safetensors.index.json) and
// GGUF; a folder holding either. Names, detected automatically:
//   seeds          gate.weight, up.weight, down.weight (+ .bias)
//   Hugging Face   model.layers.N.mlp.{gate,up,down}_proj.weight (+ .bias with mlp_bias)
//   Meta/Mistral   layers.N.feed_forward.{w1,w3,w2}.weight (w1 gate, w3 up, w2 down)
//   GPT-2          [transformer.]h.N.mlp.c_fc / c_proj .weight/.bias, stored as Conv1D [in, out]
//   GGUF           blk.N.ffn_{gate,up,down}.weight
// D and H come from the tensor shapes; gated or not from the presence of a gate. The
// activation comes from config.json beside the weights (hidden_act, activation_function,
// dense_act_fn) or GGUF's general.architecture; else from the variant given.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ffn/block.hpp"
#include "ffn/config.hpp"
#include "ffn/inference_block.hpp"
#include "ffn/moe.hpp"
#include "ffn/weight_type.hpp"

namespace ffn {

namespace io {
class TensorSource;
}  // namespace io

struct LoadOptions {
  int64_t layer = 0;
  // Required when the checkpoint does not say its activation; when it does, a variant given
  // here must agree with it (an error otherwise — never a silently different block).
  std::optional<Variant> variant;
};

struct LoadedBlock {
  Block block;
  std::string scheme;             // which naming scheme matched
  std::string activation_source;  // "config.json hidden_act 'silu'", "--variant", ...
};

// A layer's block as its matrices are stored, before an InferenceBlock is made of them.
struct LoadedStoredWeights {
  BlockConfig config;
  StoredWeights weights;
  std::string scheme;             // which naming scheme matched
  std::string activation_source;  // "config.json hidden_act 'silu'", "--variant", ...
  MatrixTypes stored;             // each matrix's type in the file (f32 where it has none of ffn's)
};

struct LoadedInferenceBlock {
  InferenceBlock block;
  std::string scheme;             // which naming scheme matched
  std::string activation_source;  // "config.json hidden_act 'silu'", "--variant", ...
  MatrixTypes stored;             // each matrix's type in the file (f32 where it has none of ffn's)
};

// A layer's mixture of experts for inference.
struct LoadedMoeBlock {
  MoeBlock block;
  std::string scheme;             // which naming scheme matched
  std::string config_source;      // where the routing rule came from: "config.json (model_type 'mixtral')", ...
  std::string activation_source;  // as for dense blocks
  MatrixTypes stored;             // the routed experts' types in the file
};

// One process's share of a layer's mixture of experts (expert parallelism,
// ffn/expert_parallel.hpp): the router, the shared experts and routed experts first … last−1.
struct LoadedMoeExperts {
  MoeConfig config;                      // the whole layer's
  MoeRouter router;
  std::vector<InferenceBlock> experts;   // experts first … last−1, in order
  std::optional<InferenceBlock> shared;
  std::string scheme, config_source, activation_source;  // as LoadedMoeBlock's
  MatrixTypes stored;                    // the routed experts' types in the file
};

// An opened checkpoint: its files mapped and their headers parsed once, so that several
// layers load without opening it again.
class Checkpoint {
 public:
  explicit Checkpoint(const std::string& path);  // ffn::Error naming the path and problem
  ~Checkpoint();
  Checkpoint(Checkpoint&&) noexcept;
  Checkpoint& operator=(Checkpoint&&) noexcept;

  const std::string& path() const { return path_; }
  // The layers whose feed-forward block (dense or a mixture of experts) the checkpoint
  // holds, in order; empty if none.
  std::vector<int64_t> layers() const;
  // Whether the layer's block is a mixture of experts (its router exists under one of the
  // MoE naming schemes: Mixtral's block_sparse_moe, Hugging Face mlp.gate / mlp.experts,
  // GGUF ffn_gate_inp / ffn_*_exps). load() and load_inference() are for dense layers.
  bool is_moe(int64_t layer) const;
  // The layer's mixture of experts, every expert in the types the file stores (or `type`,
  // as load_inference converts), the router in f32. The routing rule and counts come from
  // config.json beside the weights or the GGUF metadata, the shapes from the tensors.
  // ffn::Error naming the field or tensor: counts that disagree between the config and
  // the tensors, a missing expert, experts of unequal shapes, a router of the wrong width,
  // top_k > experts, a layer that is not a mixture of experts.
  LoadedMoeBlock load_moe(const LoadOptions& options = {}, std::optional<WeightType> type = std::nullopt,
                          ThreadPool* pool = nullptr) const;
  // As load_moe, but only routed experts [first, last) (with the router and shared
  // experts): only their bytes are read. ffn::Error when [first, last) is not a non-empty
  // range of the layer's experts.
  LoadedMoeExperts load_moe_experts(const LoadOptions& options, int64_t first, int64_t last,
                                    std::optional<WeightType> type = std::nullopt, ThreadPool* pool = nullptr) const;
  // The configuration load_moe(options) gives, reading no weights.
  MoeConfig moe_config(const LoadOptions& options = {}) const;
  // The routed experts' types in the file (LoadedMoeBlock::stored), reading no weights.
  MatrixTypes moe_stored_types(const LoadOptions& options = {}) const;
  // The f32 block, every matrix widened (or dequantised) to f32: for training. Throws
  // ffn::Error naming the file and the problem: no block found (listing the names
  // present), a missing layer (listing the layers present), inconsistent shapes, partial
  // biases, a variant that disagrees with the checkpoint.
  LoadedBlock load(const LoadOptions& options = {}) const;
  // The block for inference. Each matrix runs in the type the file stores it in (a GGUF
  // q8_0 tensor as q8_0, a BF16 safetensors tensor as bf16), its bytes used as they are —
  // or, when `type` is given, in that type: a matrix the file already stores so is used as
  // it is, never re-quantised; any other is read as f32 and stored as `type` (a block type
  // needs rows of whole blocks: 32 weights for q8_0, 256 for q4_K). A matrix in a type ffn
  // does not read (say iq2_xxs) is
  // an ffn::Error naming the tensor, its type and the types ffn reads; tensors the block
  // does not need may have any type.
  LoadedInferenceBlock load_inference(const LoadOptions& options = {}, std::optional<WeightType> type = std::nullopt,
                                      ThreadPool* pool = nullptr) const;
  // Only hidden units [hidden_begin, hidden_end) of the block (a tensor-parallel slice,
  // include/ffn/distributed.hpp), as a Block of that hidden width: those rows of the gate
  // and up weights, those columns of the down weight, those entries of the gate and up
  // biases, and the whole down bias. Only the slice's bytes of a memory-mapped safetensors
  // checkpoint are read; from GGUF one whole tensor at a time is converted and its slice
  // kept. ffn::Error as load(), and when the range is not within the block's hidden units.
  LoadedBlock load_slice(const LoadOptions& options, int64_t hidden_begin, int64_t hidden_end) const;
  // The matrices load_inference runs, of hidden units [hidden_begin, hidden_end) as
  // load_slice cuts them (hidden_end = 0: the whole block), before they are laid out: for a
  // caller that changes them first (a tensor-parallel rank drops the down bias). Stored
  // bytes are sliced as they are when the slice's edges fall on the type's blocks.
  LoadedStoredWeights load_stored(const LoadOptions& options, int64_t hidden_begin = 0, int64_t hidden_end = 0,
                                  std::optional<WeightType> type = std::nullopt, ThreadPool* pool = nullptr) const;
  // The configuration load(options) gives, reading no weights: to choose a slice.
  BlockConfig config(const LoadOptions& options = {}) const;
  // Each matrix's type in the file (f32 where it is in none of the weight types), reading
  // no weights.
  MatrixTypes stored_types(const LoadOptions& options = {}) const;

 private:
  std::string path_;
  std::unique_ptr<io::TensorSource> source_;
};

// One-shot forms of the above.
LoadedBlock load_block(const std::string& path, const LoadOptions& options = {});
LoadedInferenceBlock load_inference_block(const std::string& path, const LoadOptions& options = {},
                                          std::optional<WeightType> type = std::nullopt, ThreadPool* pool = nullptr);
std::vector<int64_t> checkpoint_layers(const std::string& path);

}  // namespace ffn
