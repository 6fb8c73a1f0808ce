// Tensor sources over safetensors: one file, or the shards of a Hugging Face checkpoint
// listed by model.safetensors.index.json ({"weight_map": {tensor name: shard file}}).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "ffn/error.hpp"
#include "ffn/safetensors.hpp"
#include "io/source_factories.hpp"

namespace ffn::io {
namespace {

SourceTensor describe(const TensorInfo& t) { return {t.shape, t.dtype_name}; }

// F32, F16 and BF16 tensors are held in those weight types' row layouts (little-endian
// elements, rows back to back); other dtypes are read only as f32.
std::optional<TensorSource::Stored> stored_bytes(const TensorInfo& t) {
  switch (t.dtype) {
    case TensorDtype::f32: return TensorSource::Stored{WeightType::f32, t.data, t.bytes};
    case TensorDtype::f16: return TensorSource::Stored{WeightType::f16, t.data, t.bytes};
    case TensorDtype::bf16: return TensorSource::Stored{WeightType::bf16, t.data, t.bytes};
    default: return std::nullopt;
  }
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

class SingleFileSource final : public TensorSource {
 public:
  explicit SingleFileSource(const std::string& path) : file_(path) {
    for (const auto& [name, t] : file_.tensors()) tensors_[name] = describe(t);
  }
  const std::map<std::string, SourceTensor>& tensors() const override { return tensors_; }
  void read_f32(const std::string& name, float* out) const override { file_.read_f32(name, out); }
  void read_f32_window(const std::string& name, int64_t r0, int64_t r1, int64_t c0, int64_t c1,
                       float* out) const override {
    file_.read_f32_window(name, r0, r1, c0, c1, out);
  }
  const std::string& path() const override { return file_.path(); }
  std::optional<Stored> stored(const std::string& name) const override { return stored_bytes(file_.tensor(name)); }
  std::optional<Raw> raw(const std::string& name) const override {
    const TensorInfo& t = file_.tensor(name);
    return Raw{t.data, t.bytes};
  }

 private:
  SafetensorsFile file_;
  std::map<std::string, SourceTensor> tensors_;
};

class ShardedSource final : public TensorSource {
 public:
  explicit ShardedSource(const std::string& index_path) : path_(index_path) {
    nlohmann::json index;
    {
      std::ifstream in(index_path);
      if (!in) throw Error("cannot open '" + index_path + "'");
      std::stringstream text;
      text << in.rdbuf();
      try {
        index = nlohmann::json::parse(text.str());
      } catch (const nlohmann::json::exception& e) {
        throw Error(index_path + ": not valid JSON: " + e.what());
      }
    }
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
      if (inserted) shards_.push_back(std::make_unique<SafetensorsFile>((dir / file).string()));
      const SafetensorsFile& shard = *shards_[it->second];
      if (!shard.has(name))
        throw Error(index_path + ": tensor '" + name + "' is listed in shard '" + file + "', which does not hold it");
      tensors_[name] = describe(shard.tensor(name));
      shard_of_tensor_[name] = it->second;
    }
  }
  const std::map<std::string, SourceTensor>& tensors() const override { return tensors_; }
  void read_f32(const std::string& name, float* out) const override {
    auto it = shard_of_tensor_.find(name);
    if (it == shard_of_tensor_.end()) throw Error(path_ + ": no tensor named '" + name + "'");
    shards_[it->second]->read_f32(name, out);
  }
  void read_f32_window(const std::string& name, int64_t r0, int64_t r1, int64_t c0, int64_t c1,
                       float* out) const override {
    auto it = shard_of_tensor_.find(name);
    if (it == shard_of_tensor_.end()) throw Error(path_ + ": no tensor named '" + name + "'");
    shards_[it->second]->read_f32_window(name, r0, r1, c0, c1, out);
  }
  const std::string& path() const override { return path_; }
  std::optional<Stored> stored(const std::string& name) const override {
    auto it = shard_of_tensor_.find(name);
    if (it == shard_of_tensor_.end()) throw Error(path_ + ": no tensor named '" + name + "'");
    return stored_bytes(shards_[it->second]->tensor(name));
  }
  std::optional<Raw> raw(const std::string& name) const override {
    auto it = shard_of_tensor_.find(name);
    if (it == shard_of_tensor_.end()) throw Error(path_ + ": no tensor named '" + name + "'");
    const TensorInfo& t = shards_[it->second]->tensor(name);
    return Raw{t.data, t.bytes};
  }

 private:
  std::string path_;
  std::vector<std::unique_ptr<SafetensorsFile>> shards_;
  std::map<std::string, size_t> shard_of_tensor_;
  std::map<std::string, SourceTensor> tensors_;
};

}  // namespace

std::unique_ptr<TensorSource> open_safetensors_source(const std::string& path) {
  return std::make_unique<SingleFileSource>(path);
}

std::unique_ptr<TensorSource> open_sharded_source(const std::string& index_path) {
  return std::make_unique<ShardedSource>(index_path);
}

}  // namespace ffn::io
