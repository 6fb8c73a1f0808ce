// Helpers for tests that need files: temporary paths and a small safetensors writer (the
// library reads safetensors; tests write them byte by byte, including broken ones).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ffn::test {

// A fresh path in a per-process temporary folder; the file is removed by the destructor.
class TempPath {
 public:
  explicit TempPath(const std::string& name);
  ~TempPath();
  const std::string& str() const { return path_; }

 private:
  std::string path_;
};

// A fresh, empty folder (per process and name), removed with its content by the destructor.
class TempDir {
 public:
  explicit TempDir(const std::string& name);
  ~TempDir();
  const std::string& str() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

struct StTensor {
  std::string name;
  std::string dtype;  // "F32", "F16", "BF16", ...
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};

std::vector<uint8_t> f32_bytes(const std::vector<float>& v);
// Serialises tensors in order, with correct offsets; header_json overrides the header.
std::vector<uint8_t> safetensors_bytes(const std::vector<StTensor>& tensors);
std::vector<uint8_t> safetensors_raw(const std::string& header_json, const std::vector<uint8_t>& data);
void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes);
void write_text(const std::string& path, const std::string& text);
std::vector<uint8_t> read_bytes(const std::string& path);

}  // namespace ffn::test
