// Loading one layer's feed-forward block from a real checkpoint.
//
// Formats: safetensors (one file, or shards through model.safetensors.index.json) and
// GGUF; a folder holding either. Names, detected automatically:
//   seeds          gate.weight, up.weight, down.weight (+ .bias)
//   Hugging Face   model.layers.N.mlp.{gate,up,down}_proj.weight (+ .bias with mlp_bias)
//   Meta/Mistral   layers.N.feed_forward.{w1,w3,w2}.weight (w1 gate, w3 up, w2 down)
//   GPT-2          [transformer.]h.N.mlp.c_fc / c_proj .weight/.bias, stored as Conv1D [in, out]
//   GGUF           blk.N.ffn_{gate,up,down}.weight
// and a mixture of experts under Mixtral's, Hugging Face's (mlp.gate + mlp.experts, or the
// fused 3-D experts), gpt-oss's or GGUF's names (ffn_gate_inp + ffn_*_exps). D and H come
// from the tensor shapes; gated or not from the presence of a gate. The activation comes
// from config.json beside the weights (hidden_act, activation_function, dense_act_fn) or
// GGUF's general.architecture; else from the variant given. A mixture of experts' routing
// rule and counts come from config.json or the GGUF metadata.
//
// One way in: open a Checkpoint (each file mapped once, config.json parsed at most once),
// then load_layer() for inference — a dense InferenceBlock or a MoeBlock, as the layer is —
// or load_trainable() for an f32 Block; inspect() says what a layer is without reading
// weights. load_stored() and load_moe_experts() give one process's share of a layer
// (include/ffn/distributed.hpp, include/ffn/expert_parallel.hpp).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "ffn/block.hpp"
#include "ffn/config.hpp"
#include "ffn/inference_block.hpp"
#include "ffn/moe.hpp"
#include "ffn/tensor.hpp"
#include "ffn/thread_pool.hpp"
#include "ffn/weight_type.hpp"

namespace ffn {

namespace io {
class TensorSource;
}  // namespace io

struct LoadOptions {
  int64_t layer = 0;
  // Required when the checkpoint does not say its activation; when it does, a variant given
  // here must agree with it (an error otherwise — never a silently different block).
  std::optional<Variant> variant = std::nullopt;
  // For inference (load_layer, load_stored, load_moe_experts): every matrix in this type. A
  // matrix the file already stores so is used as it is, never re-quantised; any other is read
  // as f32 and stored as `type` (a block type needs rows of whole blocks: 32 weights for
  // q8_0, 256 for q4_K). Empty: each matrix runs in the type the file stores it in (a GGUF
  // q8_0 tensor as q8_0, a BF16 safetensors tensor as bf16), its bytes used as they are.
  std::optional<WeightType> type = std::nullopt;
  // A dense layer's activation-sparse decode (ffn/inference_block.hpp). nullopt:
  // auto_sparse_decode — on, exact, where the block's own function makes zeros and its up
  // and down are f32, f16 or bf16; off otherwise.
  std::optional<SparseDecode> sparse = std::nullopt;
};

// Where a loaded layer came from, for messages: what each load and inspect() say beside
// the block.
struct LayerSource {
  int64_t layer = 0;
  std::string scheme;             // which naming scheme matched: "hugging face", "gguf", ...
  std::string activation_source;  // "config.json hidden_act 'silu'", "the variant given", ...
  // A mixture of experts': where its routing rule came from, "config.json (model_type
  // 'mixtral')", "GGUF metadata (qwen2moe)"; empty for a dense block.
  std::string routing_source;
  // Each matrix's type in the file (f32 where it is in none of the weight types); of the
  // routed experts for a mixture of experts.
  MatrixTypes file_types;
  // The model family and how it was told: "Phi-3, Phi-3.5, Phi-4-mini (config.json
  // model_type 'phi3')"; empty when the checkpoint names none (`ffn info --families`).
  std::string family;
  // A dense block's gate_sparsity (Gemma 3n) and where it came from, "config.json
  // text_config.activation_sparsity_pattern"; empty when the block has none.
  std::string gate_sparsity_source;
};

// What a layer is, from its tensors' names and shapes and the checkpoint's metadata alone.
struct LayerInfo : LayerSource {
  std::variant<BlockConfig, MoeConfig> config;
  bool is_moe() const { return std::holds_alternative<MoeConfig>(config); }
};

// A layer made for inference: a dense block or a mixture of experts, each matrix in its
// weight type; forward() runs whichever it is.
struct Layer : LayerSource {
  std::variant<InferenceBlock, MoeBlock> block;

  bool is_moe() const { return std::holds_alternative<MoeBlock>(block); }
  // The block itself; ffn::Error when the layer is the other kind.
  const InferenceBlock& dense() const;
  const MoeBlock& moe() const;
  int64_t d_model() const;
  // y = layer(x), x and y [T][D], no aliasing (InferenceBlock::forward, MoeBlock::forward).
  void forward(ConstMatrixView x, MatrixView y, ThreadPool* pool = nullptr) const;
  // One line for people: what the block is, its widths and weight types (and the file's,
  // where they differ), and where its names, activation and routing came from.
  std::string summary() const;
};

// A layer's dense block in f32: for training, or to convert.
struct LoadedBlock : LayerSource {
  Block block;
};

// The matrices of a dense layer's hidden units [begin, end) as load_layer would run them,
// before an InferenceBlock is made of them: for a caller that changes them first (a
// tensor-parallel rank drops the down bias).
struct LoadedStoredWeights : LayerSource {
  BlockConfig config;  // of the slice
  StoredWeights weights;
};

// One process's share of a layer's mixture of experts (expert parallelism,
// ffn/expert_parallel.hpp): the router, the shared experts and routed experts first … last−1.
struct LoadedMoeExperts : LayerSource {
  MoeConfig config;                      // the whole layer's
  MoeRouter router;
  std::vector<InferenceBlock> experts;   // experts first … last−1, in order
  std::optional<InferenceBlock> shared;
};

// An opened checkpoint: its files mapped and their headers parsed once, config.json read at
// its first use, so that several layers load without opening anything again. Loads may run
// from several threads at once.
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

  // What options.layer is — a dense block's or a mixture of experts' configuration, and
  // where it came from — reading no weights. The errors of load_layer's checks.
  LayerInfo inspect(const LoadOptions& options = {}) const;

  // options.layer for inference: its dense block as an InferenceBlock, or its mixture of
  // experts (a router in f32, every expert an InferenceBlock) as a MoeBlock — whichever the
  // layer is (a MoE is told by its router under one of the MoE naming schemes). Each matrix
  // in the type its file stores, or options.type. ffn::Error naming the file and the
  // problem: no block found (listing the names present), a missing layer (listing the
  // layers present), inconsistent shapes, partial biases, a variant that disagrees with the
  // checkpoint, a matrix in a type ffn does not read (say iq2_xxs; naming the tensor, its
  // type and the types ffn reads; tensors the block does not need may have any type), a
  // block scale that is not finite; for a mixture of experts, counts that disagree between
  // the config and the tensors, a missing expert, experts of unequal shapes, a router of the
  // wrong width, top_k > experts.
  Layer load_layer(const LoadOptions& options = {}, ThreadPool* pool = nullptr) const;

  // A dense layer's block in f32, every matrix widened (or dequantised): for training. With
  // hidden_end > 0, only hidden units [hidden_begin, hidden_end) (a tensor-parallel slice,
  // include/ffn/distributed.hpp), as a Block of that hidden width: those rows of the gate
  // and up weights, those columns of the down weight, those entries of the gate and up
  // biases, and the whole down bias. Only the slice's bytes of a memory-mapped safetensors
  // checkpoint are read; a GGUF slice decodes only the blocks it touches. ffn::Error as
  // load_layer, when the layer is a mixture of experts, and when the range is not within the
  // block's hidden units.
  LoadedBlock load_trainable(const LoadOptions& options = {}, int64_t hidden_begin = 0, int64_t hidden_end = 0) const;

  // The matrices load_layer runs for a dense layer, of hidden units [hidden_begin,
  // hidden_end) as load_trainable cuts them (hidden_end = 0: the whole block), before they
  // are laid out. Stored bytes are sliced as they are when the slice's edges fall on the
  // type's blocks.
  LoadedStoredWeights load_stored(const LoadOptions& options, int64_t hidden_begin = 0, int64_t hidden_end = 0,
                                  ThreadPool* pool = nullptr) const;

  // As load_layer for a mixture of experts, but only routed experts [first, last) (with the
  // router and shared experts): only their bytes are read. ffn::Error when [first, last) is
  // not a non-empty range of the layer's experts, or the layer is not a mixture of experts.
  LoadedMoeExperts load_moe_experts(const LoadOptions& options, int64_t first, int64_t last,
                                    ThreadPool* pool = nullptr) const;

 private:
  std::string path_;
  std::unique_ptr<io::TensorSource> source_;
};

}  // namespace ffn
