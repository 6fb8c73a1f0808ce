// Splitting one fuzzer input into several byte strings (files of a checkpoint folder, or
// command-line arguments), so that a single libFuzzer input drives all of them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ffn::fuzz {

// The parts of [data, data + size) between occurrences of `separator` (a separator at the
// end gives an empty last part); at most max_parts, the last taking the rest.
inline std::vector<std::string> split_input(const uint8_t* data, size_t size, std::string_view separator,
                                            size_t max_parts) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> parts;
  size_t start = 0;
  while (parts.size() + 1 < max_parts) {
    const size_t at = in.find(separator, start);
    if (at == std::string_view::npos) break;
    parts.emplace_back(in.substr(start, at - start));
    start = at + separator.size();
  }
  parts.emplace_back(in.substr(start));
  return parts;
}

}  // namespace ffn::fuzz
