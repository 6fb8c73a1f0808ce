// open_tensor_source: what kind of checkpoint a path is.
#include "io/tensor_source.hpp"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "ffn/error.hpp"
#include "io/source_factories.hpp"
#include "io/window_check.hpp"

namespace ffn::io {
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool has_gguf_magic(const std::string& path) {
  char magic[4] = {};
  std::ifstream in(path, std::ios::binary);
  return in.read(magic, 4) && std::memcmp(magic, "GGUF", 4) == 0;
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

}  // namespace

void TensorSource::read_f32_window(const std::string& name, int64_t r0, int64_t r1, int64_t c0, int64_t c1,
                                   float* out) const {
  const auto it = tensors().find(name);
  if (it == tensors().end()) throw Error(path() + ": no tensor named '" + name + "'");
  const std::vector<int64_t>& shape = it->second.shape;
  int64_t elements = 1;
  for (int64_t n : shape) elements *= n;
  const int64_t cols = shape.empty() ? 1 : shape.back(), rows = cols == 0 ? 0 : elements / cols;
  check_window(path(), name, rows, cols, r0, r1, c0, c1);
  if (r0 == 0 && r1 == rows && c0 == 0 && c1 == cols) return read_f32(name, out);
  std::vector<float> whole(static_cast<size_t>(elements));
  read_f32(name, whole.data());
  for (int64_t r = r0; r < r1; ++r)
    std::memcpy(out + (r - r0) * (c1 - c0), whole.data() + r * cols + c0, sizeof(float) * size_t(c1 - c0));
}

std::unique_ptr<TensorSource> open_tensor_source(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    const auto dir = std::filesystem::path(path);
    if (std::filesystem::exists(dir / "model.safetensors.index.json"))
      return open_sharded_source((dir / "model.safetensors.index.json").string());
    if (auto f = only_file_with(dir, ".safetensors"); !f.empty()) return open_safetensors_source(f);
    if (auto f = only_file_with(dir, ".gguf"); !f.empty()) return open_gguf_source(f);
    throw Error(path + ": a folder with no model.safetensors.index.json, *.safetensors or *.gguf file");
  }
  if (!std::filesystem::exists(path, ec)) throw Error("cannot open '" + path + "': no such file");
  if (ends_with(path, ".json")) return open_sharded_source(path);
  if (has_gguf_magic(path)) return open_gguf_source(path);
  return open_safetensors_source(path);
}

}  // namespace ffn::io
