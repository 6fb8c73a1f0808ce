// An opened checkpoint's tensors and what its files say beside them (internal to the
// loaders): one safetensors file, a sharded safetensors checkpoint
// (model.safetensors.index.json), or a GGUF file — each file mapped once — and the
// config.json beside them, parsed at most once. Shapes are PyTorch's order (outermost first:
// an nn.Linear weight is [out, in]); GGUF's ggml order is reversed on the way in. A tensor of
// more than two dimensions is seen as [product of the leading ones][last]: the 3-D expert
// tensors [E][rows][cols] give expert e's rows at e·rows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ffn/weight_type.hpp"
#include "io/gguf.hpp"
#include "io/safetensors.hpp"

namespace ffn::io {

struct SourceTensor {
  std::vector<int64_t> shape;       // PyTorch order
  std::string dtype;                // as the file names it: "F32", "BF16", "U8", "q8_0", "iq2_xxs", ...
  std::optional<WeightType> type;   // the weight type whose row layout the bytes are in (safetensors
                                    // F32, F16, BF16; GGUF: every weight type); empty for none of them
  const std::byte* data = nullptr;  // the bytes as the file holds them, valid while the source is open
  int64_t bytes = 0;
};

class TensorSource {
 public:
  // Opens `path`: a directory (its model.safetensors.index.json, else its one *.safetensors,
  // else its one *.gguf), a *.index.json, a GGUF file (by its magic) or a safetensors file.
  // ffn::Error naming the path and the problem.
  explicit TensorSource(const std::string& path);
  // Tensors whose bytes the caller holds (tests): no metadata, no config.json.
  TensorSource(std::string path, std::map<std::string, SourceTensor> tensors);
  ~TensorSource();
  TensorSource(const TensorSource&) = delete;
  TensorSource& operator=(const TensorSource&) = delete;

  // The path the source was opened with (a folder's file, an index), for messages.
  const std::string& path() const { return path_; }
  const std::map<std::string, SourceTensor>& tensors() const { return tensors_; }
  bool has(const std::string& name) const { return tensors_.count(name) != 0; }
  const SourceTensor& tensor(const std::string& name) const;  // ffn::Error naming it when absent

  // GGUF metadata (general.architecture, llama.feed_forward_length, ...); nullopt when the
  // key is absent, holds another type, or the format has no metadata.
  std::optional<std::string> metadata_string(const std::string& key) const;
  std::optional<int64_t> metadata_int(const std::string& key) const;
  std::optional<double> metadata_float(const std::string& key) const;
  std::optional<bool> metadata_bool(const std::string& key) const;
  // GGUF metadata arrays (Gemma 3n's per-layer gemma3n.feed_forward_length and
  // gemma3n.activation_sparsity_scale); nullopt as above.
  std::optional<std::vector<int64_t>> metadata_int_array(const std::string& key) const;
  std::optional<std::vector<double>> metadata_float_array(const std::string& key) const;
  // Hugging Face's config.json in the checkpoint's folder, parsed at its first use and kept;
  // nullptr when there is none. ffn::Error naming the file when it is not a JSON object.
  const nlohmann::json* config_json() const;
  // Where config_json() looks, for messages.
  const std::string& config_json_path() const { return config_path_; }

  // Rows [r0, r1) and columns [c0, c1) of the tensor seen as [rows][last dimension] (a 1-D
  // tensor is one row) as f32 into out ([r1 − r0][c1 − c0]): only the bytes of the window's
  // blocks are read. ffn::Error naming the tensor when the window is not within it, or when
  // its type is none of the weight types (naming the type and the types read).
  void read_f32_window(const std::string& name, int64_t r0, int64_t r1, int64_t c0, int64_t c1, float* out) const;
  // The whole tensor (product(shape) floats).
  void read_f32(const std::string& name, float* out) const;

  // The bytes of a tensor that has a weight type, every block scale checked finite
  // (check_block_scales: a NaN or infinite scale would turn every output it touches into
  // NaN): the whole tensor is checked once, at the first call for it; later calls return at
  // once. ffn::Error naming the file, the tensor, the row and the block (at every call).
  const std::byte* checked_data(const std::string& name) const;

 private:
  void add_gguf(MappedFile file);
  const SafetensorsFile& add_safetensors(MappedFile file);  // its tensors listed by the caller
  void add_shards(const std::string& index_path);

  std::string path_, config_path_;
  std::unique_ptr<GgufFile> gguf_;
  std::vector<std::unique_ptr<SafetensorsFile>> shards_;
  std::map<std::string, SourceTensor> tensors_;
  std::string readable_;      // the dtypes read_f32 converts, for messages: "F32, F16, BF16"
  mutable std::mutex mutex_;  // guards what follows (the source is shared by const loads)
  mutable std::set<std::string> checked_;
  mutable std::optional<std::optional<nlohmann::json>> config_;  // outer: parsed yet; inner: present
};

}  // namespace ffn::io
