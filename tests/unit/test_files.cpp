#include "test_files.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace ffn::test {

TempPath::TempPath(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("ffn-unit-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  path_ = (dir / name).string();
}

TempPath::~TempPath() { std::remove(path_.c_str()); }

TempDir::TempDir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("ffn-unit-" + std::to_string(::getpid())) / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  path_ = dir.string();
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::trunc);
  f << text;
}

std::vector<uint8_t> f32_bytes(const std::vector<float>& v) {
  std::vector<uint8_t> out(v.size() * 4);
  if (!v.empty()) std::memcpy(out.data(), v.data(), out.size());
  return out;
}

std::vector<uint8_t> safetensors_raw(const std::string& header_json, const std::vector<uint8_t>& data) {
  std::vector<uint8_t> out(8);
  const uint64_t n = header_json.size();
  for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<uint8_t>(n >> (8 * i));
  out.insert(out.end(), header_json.begin(), header_json.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

std::vector<uint8_t> safetensors_bytes(const std::vector<StTensor>& tensors) {
  std::string header = "{";
  std::vector<uint8_t> data;
  for (const auto& t : tensors) {
    std::string shape;
    for (size_t i = 0; i < t.shape.size(); ++i) shape += (i ? "," : "") + std::to_string(t.shape[i]);
    header += (header.size() > 1 ? "," : "") + std::string("\"") + t.name + "\":{\"dtype\":\"" + t.dtype +
              "\",\"shape\":[" + shape + "],\"data_offsets\":[" + std::to_string(data.size()) + "," +
              std::to_string(data.size() + t.bytes.size()) + "]}";
    data.insert(data.end(), t.bytes.begin(), t.bytes.end());
  }
  header += "}";
  return safetensors_raw(header, data);
}

void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

}  // namespace ffn::test
