// Number formatting for the ffn command's tables.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ffn::cli {

std::string grouped(int64_t v);                    // 134217728 → "134,217,728"
std::string megabytes(std::optional<int64_t> b);   // bytes → "541.1 MB" (10⁶), or "n/a"
std::string fixed(double v, int decimals);         // printf("%.*f")
std::vector<std::string> split_list(const std::string& list);  // "a,b,,c" → {a, b, c}

}  // namespace ffn::cli
