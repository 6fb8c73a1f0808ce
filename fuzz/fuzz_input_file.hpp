// libFuzzer harness helper: the readers under test take paths, so each input is written to
// one file per process (rewritten every run) in the temporary folder.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

namespace ffn::fuzz {

inline std::string write_input(const uint8_t* data, size_t size, const char* suffix) {
  static const std::string path = "/tmp/ffn-fuzz-" + std::to_string(::getpid()) + suffix;
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) __builtin_trap();
  if (size > 0 && std::fwrite(data, 1, size, f) != size) __builtin_trap();
  std::fclose(f);
  return path;
}

}  // namespace ffn::fuzz
