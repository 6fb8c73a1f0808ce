#include "format.hpp"

#include <cstdio>
#include <sstream>

namespace ffn::cli {

std::string grouped(int64_t v) {
  const bool negative = v < 0;
  std::string digits = std::to_string(negative ? -static_cast<unsigned long long>(v) : static_cast<unsigned long long>(v));
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i != 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return negative ? "-" + out : out;
}

std::string megabytes(std::optional<int64_t> b) {
  if (!b) return "n/a";
  return fixed(static_cast<double>(*b) / 1e6, 1) + " MB";
}

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::vector<std::string> split_list(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream in(list);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

}  // namespace ffn::cli
