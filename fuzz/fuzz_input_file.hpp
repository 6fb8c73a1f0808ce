// libFuzzer harness helpers: the readers under test take paths, so each input is written to
// one file (or folder) per process, rewritten every run, in the temporary folder, and
// removed when the process exits normally (libFuzzer's -runs=N and the replay runners do).
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>

namespace ffn::fuzz {

// A path of this process in the temporary folder, removed (with what is under it) when the
// process exits; as a function-local static it lives until then.
class ProcessTempPath {
 public:
  // <temporary folder>/<stem><pid><suffix>
  explicit ProcessTempPath(const std::string& stem, const std::string& suffix = "")
      : path_(std::filesystem::temp_directory_path() / (stem + std::to_string(::getpid()) + suffix)) {}
  ~ProcessTempPath() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline std::string write_input(const uint8_t* data, size_t size, const char* suffix) {
  static const ProcessTempPath temp("ffn-fuzz-", suffix);
  const std::string path = temp.path().string();
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) __builtin_trap();
  if (size > 0 && std::fwrite(data, 1, size, f) != size) __builtin_trap();
  std::fclose(f);
  return path;
}

}  // namespace ffn::fuzz
