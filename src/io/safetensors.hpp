// safetensors files (read): an 8-byte little-endian header length N, N bytes of JSON
// ({"name": {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {...}}),
// then the tensor bytes, offsets relative to the end of the header. The file is memory-
// mapped; the header is parsed with nlohmann::json and every dtype, shape, offset and
// length is checked against the file before use.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "io/mapped_file.hpp"

namespace ffn {

enum class TensorDtype { f32, f16, bf16, f64, i8, u8, i16, i32, i64, other };

struct TensorInfo {
  std::string name;
  std::string dtype_name;  // as in the file, e.g. "F32"
  TensorDtype dtype = TensorDtype::other;
  std::vector<int64_t> shape;
  int64_t elements = 0;
  const std::byte* data = nullptr;  // into the mapping; valid while the file is open
  int64_t bytes = 0;
};

class SafetensorsFile {
 public:
  // Throws ffn::Error naming the file and the problem.
  explicit SafetensorsFile(const std::string& path);
  // The same over a file already mapped (a checkpoint's opener maps it once to read its magic).
  explicit SafetensorsFile(MappedFile file);
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return file_.path(); }
  const std::map<std::string, TensorInfo>& tensors() const { return tensors_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  bool has(const std::string& name) const { return tensors_.count(name) != 0; }
  const TensorInfo& tensor(const std::string& name) const;  // throws if absent

  // The tensor's values converted to f32 (F32, F16, BF16 accepted; others are an error
  // naming the dtype). out must hold tensor(name).elements floats.
  void read_f32(const std::string& name, float* out) const;

 private:
  MappedFile file_;
  std::map<std::string, TensorInfo> tensors_;
  std::map<std::string, std::string> metadata_;
};

// One tensor to write: f32 values stored as dtype (f32, f16 or bf16, rounded to nearest even).
struct SafetensorsTensor {
  std::string name;
  TensorDtype dtype = TensorDtype::f32;
  std::vector<int64_t> shape;  // PyTorch order
  const float* data = nullptr;  // product(shape) values
};

// Writes a safetensors file atomically (temporary file, then rename): the header padded
// with spaces so the data starts 8-byte aligned, tensors in the order given, back to back.
// Throws ffn::Error for duplicate or empty names, negative dimensions, other dtypes.
void write_safetensors(const std::string& path, const std::vector<SafetensorsTensor>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace ffn
