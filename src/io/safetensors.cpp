// safetensors reader. Checks, before any tensor is used: the header length fits the file
// and is below 100 MB; the header is a JSON object; every entry has a known dtype, a shape
// of non-negative integers whose byte size fits 64 bits and equals its data_offsets span;
// the spans tile the data section exactly (no overlap, no hole, nothing past the end), as
// the format's specification requires.
#include "io/safetensors.hpp"


#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>

#include "ffn/error.hpp"
#include "ffn/weight_type.hpp"
#include "io/tensor_window.hpp"

namespace ffn {
namespace {

constexpr uint64_t kMaxHeader = 100u << 20;

struct DtypeEntry {
  const char* name;
  TensorDtype dtype;
  int64_t bytes;
};
constexpr DtypeEntry kDtypes[] = {
    {"F32", TensorDtype::f32, 4},   {"F16", TensorDtype::f16, 2},   {"BF16", TensorDtype::bf16, 2},
    {"F64", TensorDtype::f64, 8},   {"I8", TensorDtype::i8, 1},     {"U8", TensorDtype::u8, 1},
    {"I16", TensorDtype::i16, 2},   {"I32", TensorDtype::i32, 4},   {"I64", TensorDtype::i64, 8},
    {"BOOL", TensorDtype::other, 1}, {"U16", TensorDtype::other, 2}, {"U32", TensorDtype::other, 4},
    {"U64", TensorDtype::other, 8}, {"F8_E5M2", TensorDtype::other, 1}, {"F8_E4M3", TensorDtype::other, 1},
};

int64_t json_index(const nlohmann::json& v, const std::string& what) {
  if (!v.is_number_unsigned()) throw Error(what + " is not a non-negative integer: " + v.dump());
  const auto u = v.get<uint64_t>();
  if (u > static_cast<uint64_t>(INT64_MAX)) throw Error(what + " is too large: " + v.dump());
  return static_cast<int64_t>(u);
}

TensorInfo parse_entry(const std::string& name, const nlohmann::json& e, const std::byte* data, int64_t data_size) {
  const std::string where = "tensor '" + name + "'";
  if (!e.is_object()) throw Error(where + ": entry is not a JSON object");
  for (const char* key : {"dtype", "shape", "data_offsets"})
    if (!e.contains(key)) throw Error(where + ": missing '" + key + "'");
  if (!e["dtype"].is_string()) throw Error(where + ": dtype is not a string");
  TensorInfo t;
  t.name = name;
  t.dtype_name = e["dtype"].get<std::string>();
  const DtypeEntry* dt = nullptr;
  for (const auto& d : kDtypes)
    if (t.dtype_name == d.name) dt = &d;
  if (!dt) throw Error(where + ": unknown dtype '" + t.dtype_name + "'");
  t.dtype = dt->dtype;

  const auto& shape = e["shape"];
  if (!shape.is_array() || shape.size() > 32) throw Error(where + ": shape is not an array of at most 32 entries");
  int64_t count = 1;
  for (const auto& dim : shape) {
    const int64_t d = json_index(dim, where + " shape entry");
    // Each dimension's bytes too, even after a 0 (readers index rows by the last one's).
    if (d > INT64_MAX / dt->bytes || (d != 0 && count > INT64_MAX / dt->bytes / d))
      throw Error(where + ": shape " + shape.dump() + " overflows 64 bits");
    count *= d;
    t.shape.push_back(d);
  }
  t.elements = count;
  t.bytes = count * dt->bytes;

  const auto& off = e["data_offsets"];
  if (!off.is_array() || off.size() != 2) throw Error(where + ": data_offsets is not [begin, end]");
  const int64_t begin = json_index(off[0], where + " data_offsets[0]");
  const int64_t end = json_index(off[1], where + " data_offsets[1]");
  if (begin > end || end > data_size)
    throw Error(where + ": data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
                "] fall outside the " + std::to_string(data_size) + " data bytes of the file");
  if (end - begin != t.bytes)
    throw Error(where + ": shape " + shape.dump() + " of " + t.dtype_name + " needs " + std::to_string(t.bytes) +
                " bytes but data_offsets span " + std::to_string(end - begin));
  t.data = data + begin;
  return t;
}

}  // namespace

SafetensorsFile::SafetensorsFile(const std::string& path) : SafetensorsFile(MappedFile(path)) {}

SafetensorsFile::SafetensorsFile(MappedFile file) : file_(std::move(file)) {
  const std::string& path = file_.path();
  const size_t size = file_.size();
  if (size < 8) throw Error(path + ": too short for a safetensors file (" + std::to_string(size) + " bytes)");
  const auto* bytes = reinterpret_cast<const unsigned char*>(file_.data());
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | bytes[i];
  if (header_len > kMaxHeader) throw Error(path + ": header length " + std::to_string(header_len) + " exceeds 100 MB");
  if (header_len > size - 8)
    throw Error(path + ": header length " + std::to_string(header_len) + " exceeds the file (" +
                std::to_string(size) + " bytes)");
  const char* header = reinterpret_cast<const char*>(bytes + 8);
  const auto* data = reinterpret_cast<const std::byte*>(bytes + 8 + header_len);
  const auto data_size = static_cast<int64_t>(size - 8 - header_len);

  nlohmann::json root;
  try {
    root = nlohmann::json::parse(header, header + header_len);
  } catch (const nlohmann::json::exception& e) {
    throw Error(path + ": header is not valid JSON: " + e.what());
  }
  if (!root.is_object()) throw Error(path + ": header is not a JSON object");

  std::vector<std::pair<int64_t, const TensorInfo*>> spans;
  for (const auto& [name, entry] : root.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object()) throw Error(path + ": __metadata__ is not an object");
      for (const auto& [k, v] : entry.items()) {
        if (!v.is_string()) throw Error(path + ": __metadata__ value of '" + k + "' is not a string");
        metadata_[k] = v.get<std::string>();
      }
      continue;
    }
    TensorInfo t;
    try {
      t = parse_entry(name, entry, data, data_size);
    } catch (const Error& e) {
      throw Error(path + ": " + e.what());
    }
    tensors_[name] = std::move(t);
  }
  for (const auto& [name, t] : tensors_) spans.push_back({t.data - data, &t});
  std::sort(spans.begin(), spans.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : a.second->bytes < b.second->bytes;
  });
  int64_t expected = 0;
  for (const auto& [begin, t] : spans) {
    if (begin != expected)
      throw Error(path + ": tensor '" + t->name + "' starts at data byte " + std::to_string(begin) + ", expected " +
                  std::to_string(expected) + " (tensors overlap or leave a hole)");
    expected = begin + t->bytes;
  }
  if (expected != data_size)
    throw Error(path + ": tensors cover " + std::to_string(expected) + " of the " + std::to_string(data_size) +
                " data bytes");
}

const TensorInfo& SafetensorsFile::tensor(const std::string& name) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) throw Error(path() + ": no tensor named '" + name + "'");
  return it->second;
}

void SafetensorsFile::read_f32(const std::string& name, float* out) const {
  const TensorInfo& t = tensor(name);
  WeightType type;
  switch (t.dtype) {
    case TensorDtype::f32: type = WeightType::f32; break;
    case TensorDtype::f16: type = WeightType::f16; break;
    case TensorDtype::bf16: type = WeightType::bf16; break;
    default:
      throw Error(path() + ": tensor '" + name + "' has dtype " + t.dtype_name +
                  "; weights must be F32, F16 or BF16");
  }
  const int64_t cols = t.shape.empty() ? 1 : t.shape.back(), rows = cols == 0 ? 0 : t.elements / cols;
  io::read_window(type, t.data, cols, 0, rows, 0, cols, out);
}

}  // namespace ffn
