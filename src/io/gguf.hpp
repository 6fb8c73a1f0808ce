// GGUF version 3 (ggml's model format), read and written. Little-endian throughout:
//   "GGUF", u32 version, u64 tensor_count, u64 metadata_kv_count,
//   metadata: (string key, u32 value type, value) × kv_count,
//   tensor infos: (string name, u32 n_dims, u64 ne[n_dims], u32 ggml type, u64 offset) × tensor_count,
//   zero padding to `general.alignment` (a u32 key, 32 when absent), then the data section;
// a string is a u64 byte count and the bytes (no terminator); an array value is a u32 element
// type, a u64 element count and the elements (arrays of arrays allowed). Tensor offsets are
// relative to the data section and multiples of the alignment.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "io/mapped_file.hpp"

namespace ffn {

// ggml's tensor types this library converts to and from f32. A value of this type may hold
// any other ggml type number (a tensor read from a file; see ggml_type_name).
enum class GgmlType : uint32_t { f32 = 0, f16 = 1, q4_0 = 2, q8_0 = 8, bf16 = 30 };

// ggml's name of any ggml type number ("f32", "q8_0", "q4_K", ...), "unknown" past its table.
std::string_view ggml_type_name(GgmlType t);

// The value types of GGUF metadata.
enum class GgufType : uint32_t {
  u8 = 0, i8 = 1, u16 = 2, i16 = 3, u32 = 4, i32 = 5, f32 = 6, boolean = 7,
  string = 8, array = 9, u64 = 10, i64 = 11, f64 = 12,
};

struct GgufValueInfo {
  GgufType type = GgufType::u8;
  GgufType element_type = GgufType::u8;  // arrays only
  uint64_t count = 1;                    // arrays: number of elements
};

struct GgufTensorInfo {
  std::string name;
  // Any ggml type number with a known geometry, not only the enumerated ones: a q4_K tensor
  // has type GgmlType(12). GgufFile::readable says whether read_f32 converts it.
  GgmlType type = GgmlType::f32;
  // ggml order: ne[0] is the row length (contiguous); an nn.Linear weight [out][in] has
  // ne = {in, out}. At most 4 entries; empty for a scalar.
  std::vector<int64_t> ne;
  int64_t elements = 0;
  const std::byte* data = nullptr;  // into the mapping; valid while the file is open
  int64_t bytes = 0;
};

// A GGUF file, memory-mapped read-only. Every count, length, offset, dimension and type is
// checked against the file before use; a header cannot make the reader allocate or loop
// beyond what the file's size can hold. Every tensor whose ggml type has a known storage
// geometry (ggml's blck_size / type_size: f32 ... q8_0, q2_K ... q8_K, the iq*, tq* and
// integer types, bf16, mxfp4, nvfp4, q1_0) is admitted and bounds-checked with it; a type
// number without one (a removed slot, a number past ggml's table) is an error at open,
// naming the tensor and the number. Only tensors of the weight types (ffn types) can be read
// as f32; reading another (an iq2_xxs token_embd.weight beside q8_0 MLP weights, say) is an
// error naming it.
class GgufFile {
 public:
  // Throws ffn::Error naming the file and the problem.
  explicit GgufFile(const std::string& path);
  // The same over a file already mapped (a checkpoint's opener maps it once to read its magic).
  explicit GgufFile(MappedFile file);
  GgufFile(const GgufFile&) = delete;
  GgufFile& operator=(const GgufFile&) = delete;

  const std::string& path() const { return file_.path(); }
  uint32_t alignment() const { return alignment_; }
  const std::map<std::string, GgufTensorInfo>& tensors() const { return tensors_; }
  bool has(const std::string& name) const { return tensors_.count(name) != 0; }
  const GgufTensorInfo& tensor(const std::string& name) const;  // throws if absent

  // Metadata keys, sorted; a value's stored type. The typed getters return nullopt when the
  // key is absent or holds another type (int: any integer type, a u64 above INT64_MAX being
  // an error; float: f32 or f64; arrays: of those element types). Arrays of arrays are
  // checked at open and described by metadata_info, but have no getter.
  std::vector<std::string> metadata_keys() const;
  std::optional<GgufValueInfo> metadata_info(const std::string& key) const;
  std::optional<int64_t> metadata_int(const std::string& key) const;
  std::optional<double> metadata_float(const std::string& key) const;
  std::optional<bool> metadata_bool(const std::string& key) const;
  std::optional<std::string> metadata_string(const std::string& key) const;
  std::optional<std::vector<int64_t>> metadata_int_array(const std::string& key) const;
  std::optional<std::vector<double>> metadata_float_array(const std::string& key) const;
  std::optional<std::vector<std::string>> metadata_string_array(const std::string& key) const;

  // Whether the file has the tensor and read_f32 converts its type (one of the weight
  // types: F32, F16, BF16, Q8_0, Q4_0, the K-quants, ...); false for an absent name.
  bool readable(const std::string& name) const;

  // The tensor's values as f32: F32 copied, F16/BF16 widened, block types dequantised. out
  // must hold tensor(name).elements floats. Throws ffn::Error naming the file, the tensor and
  // its type when the type is not one of the weight types (see readable). (Windows of a
  // tensor: the checkpoint loader's tensor source, src/io/tensor_source.hpp.)
  void read_f32(const std::string& name, float* out) const;

 private:
  struct Value {
    GgufValueInfo info;
    const std::byte* at = nullptr;  // the value's bytes (an array's first element) in the mapping
  };
  const Value* find_value(const std::string& key) const;
  const GgufTensorInfo& readable_tensor(const std::string& name) const;  // throws unless readable
  void parse();

  MappedFile file_;
  uint32_t alignment_ = 32;
  std::map<std::string, GgufTensorInfo> tensors_;
  std::map<std::string, Value> metadata_;
};

// Builds a GGUF file in memory and writes it. Metadata keys keep the order of their first
// set (setting a key again replaces its value); tensors keep the order they were added.
class GgufWriter {
 public:
  void set_string(const std::string& key, const std::string& value);
  // general.alignment (a power of two) sets the file's alignment; 32 when never set.
  void set_u32(const std::string& key, uint32_t value);
  void set_u64(const std::string& key, uint64_t value);
  void set_f32(const std::string& key, float value);

  // Stores the product(ne) floats at data (ne in ggml order, 1 to 4 entries) as `type`,
  // converting or quantising now, so data need not outlive the call. Block types need
  // ne[0] % 32 == 0 and finite values; names are 1 to 63 bytes (ggml's limit) and unique.
  // Violations are an ffn::Error naming the tensor.
  void add_tensor(const std::string& name, GgmlType type, std::vector<int64_t> ne, const float* data);

  // Stores `bytes` bytes at data, already in the layout of ggml type number `ggml_type` (any
  // type with a known geometry, q4_K included), as the tensor's data; copied now. bytes must
  // be what ne takes in that type (product(ne) / values per block × bytes per block, ne[0]
  // whole blocks); names and dimensions as for add_tensor. Violations are an ffn::Error
  // naming the tensor.
  void add_tensor_bytes(const std::string& name, uint32_t ggml_type, std::vector<int64_t> ne, const std::byte* data,
                        int64_t bytes);

  // Atomically (temporary file, then rename); every tensor starts at a multiple of the
  // alignment and is zero-padded to one, as ggml writes it.
  void write(const std::string& path) const;

 private:
  struct Tensor {
    std::string name;
    uint32_t type;  // a ggml type number
    std::vector<int64_t> ne;
    std::vector<std::byte> bytes;
  };
  void set(const std::string& key, GgufType type, std::vector<std::byte> value);
  // Checks a new tensor's name, type and dimensions; its elements and bytes.
  std::pair<int64_t, int64_t> admit(const std::string& name, uint32_t type, const std::vector<int64_t>& ne) const;

  std::vector<std::pair<std::string, std::vector<std::byte>>> metadata_;  // key, (u32 type, value) bytes
  std::vector<Tensor> tensors_;
  uint32_t alignment_ = 32;
};

}  // namespace ffn
