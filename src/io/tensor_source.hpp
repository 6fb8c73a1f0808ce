// A read-only set of named tensors, whatever file format holds them: one safetensors file,
// a sharded safetensors checkpoint (model.safetensors.index.json), or a GGUF file. Shapes
// are given in PyTorch order (outermost first: an nn.Linear weight is [out, in]); GGUF's
// ggml order is reversed on the way in.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ffn/accounting.hpp"

namespace ffn::io {

struct SourceTensor {
  std::vector<int64_t> shape;  // PyTorch order
  std::string dtype;           // as the file names it: "F32", "BF16", "q8_0", ...
};

class TensorSource {
 public:
  virtual ~TensorSource() = default;
  virtual const std::map<std::string, SourceTensor>& tensors() const = 0;
  // Converts (or dequantises) the named tensor into out, which holds product(shape) floats.
  virtual void read_f32(const std::string& name, float* out) const = 0;
  // Rows [r0, r1) and columns [c0, c1) of the tensor seen as [rows][last dimension] (a 1-D
  // tensor is one row) into out ([r1 − r0][c1 − c0]). This default reads the whole tensor
  // and copies the window; sources that can read a window alone override it.
  virtual void read_f32_window(const std::string& name, int64_t r0, int64_t r1, int64_t c0, int64_t c1,
                               float* out) const;
  // The path a user gave, for messages.
  virtual const std::string& path() const = 0;
  // Metadata the format carries (GGUF keys such as general.architecture), as strings.
  virtual std::map<std::string, std::string> metadata() const { return {}; }
  // An integer metadata value (GGUF's llama.feed_forward_length, ...), if the format has it.
  virtual std::optional<int64_t> metadata_int(const std::string&) const { return std::nullopt; }
  // A floating-point or boolean metadata value (GGUF's {arch}.expert_weights_scale, ...).
  virtual std::optional<double> metadata_float(const std::string&) const { return std::nullopt; }
  virtual std::optional<bool> metadata_bool(const std::string&) const { return std::nullopt; }

  // A tensor's bytes as stored, when it is held in one of the weight types' row layouts
  // (safetensors F32, F16, BF16; GGUF tensors of every weight type: ggml's layouts), valid
  // while the source is open; else nullopt (read it with read_f32).
  struct Stored {
    WeightType type;
    const std::byte* data;
    int64_t bytes;
  };
  virtual std::optional<Stored> stored(const std::string&) const { return std::nullopt; }

  // A tensor's bytes as the file holds them, whatever its dtype (safetensors U8 tensors
  // such as the MXFP4 blocks and scales of gpt-oss's release), valid while the source is
  // open; nullopt for formats that do not keep tensors as plain bytes.
  struct Raw {
    const std::byte* data;
    int64_t bytes;
  };
  virtual std::optional<Raw> raw(const std::string&) const { return std::nullopt; }

  bool has(const std::string& name) const { return tensors().count(name) != 0; }
};

// Opens `path`: a directory (its model.safetensors.index.json, else its one *.safetensors,
// else its one *.gguf), a *.index.json, a GGUF file (by its magic) or a safetensors file.
// Throws ffn::Error naming the path and the problem.
std::unique_ptr<TensorSource> open_tensor_source(const std::string& path);

}  // namespace ffn::io
