// TensorSource: what kind of checkpoint a path is, its tensors listed alike whatever the
// format, the one window reader, the block-scale check made once per tensor, and
// config.json parsed once.
#include "io/tensor_source.hpp"

#include <cctype>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/weight_type_table.hpp"
#include "ffn/error.hpp"
#include "io/tensor_window.hpp"

namespace ffn::io {
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The one file in `dir` whose name ends with `suffix`; empty if none; an error if several.
std::string only_file_with(const std::filesystem::path& dir, const std::string& suffix) {
  std::string found;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (!entry.is_regular_file() || !ends_with(entry.path().filename().string(), suffix)) continue;
    if (!found.empty())
      throw Error(dir.string() + ": holds several " + suffix + " files and no index; name the file to use");
    found = entry.path().string();
  }
  return found;
}

// A name from the file as it can be shown in a message: bytes outside printable ASCII as
// \xNN, so that a NUL does not end the message early and control bytes reach no terminal.
std::string printable(const std::string& s) {
  std::string out;
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f) {
      out += c;
    } else {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", u);
      out += hex;
    }
  }
  return out;
}

nlohmann::json read_json(const std::string& file) {
  std::ifstream in(file);
  if (!in) throw Error("cannot open '" + file + "'");
  std::stringstream text;
  text << in.rdbuf();
  try {
    return nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::exception& e) {
    throw Error(file + ": not valid JSON: " + e.what());
  }
}

// Safetensors' F32, F16 and BF16 tensors are in those weight types' row layouts
// (little-endian elements, rows back to back); other dtypes are none of the weight types.
std::optional<WeightType> weight_type_of(TensorDtype d) {
  switch (d) {
    case TensorDtype::f32:
      return WeightType::f32;
    case TensorDtype::f16:
      return WeightType::f16;
    case TensorDtype::bf16:
      return WeightType::bf16;
    default:
      return std::nullopt;
  }
}

SourceTensor describe(const TensorInfo& t) { return {t.shape, t.dtype_name, weight_type_of(t.dtype), t.data, t.bytes}; }

// [rows][cols] of a tensor seen as [product of the leading dimensions][last] (a 1-D tensor is one row).
std::pair<int64_t, int64_t> rows_cols(const std::vector<int64_t>& shape) {
  int64_t elements = 1;
  for (const int64_t n : shape) elements *= n;
  const int64_t cols = shape.empty() ? 1 : shape.back();
  return {cols == 0 ? 0 : elements / cols, cols};
}

}  // namespace

TensorSource::TensorSource(const std::string& path) {
  std::error_code ec;
  std::filesystem::path file = path;
  bool gguf_by_name = false;
  if (std::filesystem::is_directory(path, ec)) {
    const auto dir = std::filesystem::path(path);
    config_path_ = (dir / "config.json").string();
    if (std::filesystem::exists(dir / "model.safetensors.index.json")) {
      add_shards((dir / "model.safetensors.index.json").string());
      return;
    }
    file = only_file_with(dir, ".safetensors");
    if (file.empty()) {
      file = only_file_with(dir, ".gguf");
      gguf_by_name = true;
    }
    if (file.empty())
      throw Error(path + ": a folder with no model.safetensors.index.json, *.safetensors or *.gguf file");
  } else {
    if (!std::filesystem::exists(path, ec)) throw Error("cannot open '" + path + "': no such file");
    config_path_ = (file.parent_path() / "config.json").string();
    if (ends_with(path, ".json")) {
      add_shards(path);
      return;
    }
  }
  // One mapping of the file: its magic says the format (a folder's *.gguf is GGUF by its
  // name), and the reader keeps the mapping.
  MappedFile mapped(file.string());
  if (gguf_by_name || (mapped.size() >= 4 && std::memcmp(mapped.data(), "GGUF", 4) == 0)) {
    add_gguf(std::move(mapped));
    return;
  }
  const SafetensorsFile& f = add_safetensors(std::move(mapped));
  path_ = f.path();
  for (const auto& [name, t] : f.tensors()) tensors_[name] = describe(t);
}

TensorSource::TensorSource(std::string path, std::map<std::string, SourceTensor> tensors)
    : path_(std::move(path)), tensors_(std::move(tensors)), readable_(weight_type_names()) {}

TensorSource::~TensorSource() = default;

void TensorSource::add_gguf(MappedFile file) {
  gguf_ = std::make_unique<GgufFile>(std::move(file));
  path_ = gguf_->path();
  // GGUF lists dimensions innermost first (ne[0] is the row length): an nn.Linear weight
  // [out, in] has ne = {in, out}.
  for (const auto& [name, t] : gguf_->tensors()) {
    WeightType type;
    const bool known = weight_type_from_gguf(static_cast<uint32_t>(t.type), type);
    tensors_[name] = {std::vector<int64_t>(t.ne.rbegin(), t.ne.rend()), std::string(ggml_type_name(t.type)),
                      known ? std::optional<WeightType>(type) : std::nullopt, t.data, t.bytes};
  }
  // As GGUF's tools name the types: "F32, BF16, F16, Q8_0, ...".
  for (const auto& t : weight_types()) {
    readable_ += readable_.empty() ? "" : ", ";
    for (const char c : t.name) readable_ += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
}

const SafetensorsFile& TensorSource::add_safetensors(MappedFile file) {
  shards_.push_back(std::make_unique<SafetensorsFile>(std::move(file)));
  readable_ = "F32, F16, BF16";
  return *shards_.back();
}

// model.safetensors.index.json: {"weight_map": {tensor name: shard file}}.
void TensorSource::add_shards(const std::string& index_path) {
  path_ = index_path;
  const nlohmann::json index = read_json(index_path);
  if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object())
    throw Error(index_path + ": no \"weight_map\" object (expected a safetensors index)");
  const auto dir = std::filesystem::path(index_path).parent_path();
  std::map<std::string, size_t> shard_of_file;
  for (const auto& [name, value] : index["weight_map"].items()) {
    if (!value.is_string()) throw Error(index_path + ": weight_map entry '" + name + "' is not a file name");
    const std::string file = value.get<std::string>();
    // A shard is a plain file beside the index: no directories, so an index cannot point
    // anywhere else on the machine; no NUL byte, which the C library would take as the
    // end of the name (".." followed by a NUL would open the parent folder).
    if (file.empty() || file.find('/') != std::string::npos || file.find('\0') != std::string::npos || file == "." ||
        file == "..")
      throw Error(index_path + ": shard '" + printable(file) + "' of tensor '" + printable(name) +
                  "' is not a plain file name");
    auto [it, inserted] = shard_of_file.try_emplace(file, shards_.size());
    if (inserted) add_safetensors(MappedFile((dir / file).string()));
    const SafetensorsFile& shard = *shards_[it->second];
    if (!shard.has(name))
      throw Error(index_path + ": tensor '" + name + "' is listed in shard '" + file + "', which does not hold it");
    tensors_[name] = describe(shard.tensor(name));
  }
}

const SourceTensor& TensorSource::tensor(const std::string& name) const {
  const auto it = tensors_.find(name);
  if (it == tensors_.end()) throw Error(path_ + ": no tensor named '" + name + "'");
  return it->second;
}

std::optional<std::string> TensorSource::metadata_string(const std::string& key) const {
  return gguf_ ? gguf_->metadata_string(key) : std::nullopt;
}
std::optional<int64_t> TensorSource::metadata_int(const std::string& key) const {
  return gguf_ ? gguf_->metadata_int(key) : std::nullopt;
}
std::optional<double> TensorSource::metadata_float(const std::string& key) const {
  return gguf_ ? gguf_->metadata_float(key) : std::nullopt;
}
std::optional<bool> TensorSource::metadata_bool(const std::string& key) const {
  return gguf_ ? gguf_->metadata_bool(key) : std::nullopt;
}
std::optional<std::vector<int64_t>> TensorSource::metadata_int_array(const std::string& key) const {
  return gguf_ ? gguf_->metadata_int_array(key) : std::nullopt;
}
std::optional<std::vector<double>> TensorSource::metadata_float_array(const std::string& key) const {
  return gguf_ ? gguf_->metadata_float_array(key) : std::nullopt;
}

const nlohmann::json* TensorSource::config_json() const {
  const std::lock_guard lock(mutex_);
  if (!config_) {
    std::error_code ec;
    if (config_path_.empty() || !std::filesystem::exists(config_path_, ec)) {
      config_.emplace(std::nullopt);
    } else {
      nlohmann::json j = read_json(config_path_);
      if (!j.is_object()) throw Error(config_path_ + ": not a JSON object");
      config_.emplace(std::move(j));
    }
  }
  return *config_ ? &**config_ : nullptr;
}

void TensorSource::read_f32_window(const std::string& name, int64_t r0, int64_t r1, int64_t c0, int64_t c1,
                                   float* out) const {
  const SourceTensor& t = tensor(name);
  if (!t.type)
    throw Error(path_ + ": tensor '" + name + "' has type " + t.dtype +
                ", which ffn does not convert to f32; it reads " + readable_);
  const auto [rows, cols] = rows_cols(t.shape);
  check_window(path_, name, rows, cols, r0, r1, c0, c1);
  read_window(*t.type, t.data, cols, r0, r1, c0, c1, out);
}

void TensorSource::read_f32(const std::string& name, float* out) const {
  const auto [rows, cols] = rows_cols(tensor(name).shape);
  read_f32_window(name, 0, rows, 0, cols, out);
}

const std::byte* TensorSource::checked_data(const std::string& name) const {
  const SourceTensor& t = tensor(name);
  const std::lock_guard lock(mutex_);
  if (checked_.count(name) == 0) {
    const auto [rows, cols] = rows_cols(t.shape);
    if (cols > 0) check_block_scales(t.type.value(), t.data, rows, cols, path_ + ": tensor '" + name + "'");
    checked_.insert(name);
  }
  return t.data;
}

}  // namespace ffn::io
