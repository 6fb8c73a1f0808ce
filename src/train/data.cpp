// Byte-level data: the 90/10 split by position and deterministic batches.
#include <algorithm>
#include <fstream>
#include <iterator>
#include <sstream>

#include "core/counter_random.hpp"
#include "ffn/error.hpp"
#include "train/train.hpp"

namespace ffn {
namespace {

void check_split(const std::string& split, int64_t window) {
  if (window < 1) throw Error("window = " + std::to_string(window) + ": must be ≥ 1");
  if (static_cast<int64_t>(split.size()) < window + 1)
    throw Error("data split of " + std::to_string(split.size()) +
                " bytes: need at least window + 1 = " + std::to_string(window + 1));
}

// Example whose target is split[p] (p ≥ K): context split[p−K … p−1].
void put(Batch& b, const std::string& split, int64_t p) {
  for (int64_t j = 0; j < b.window; ++j) b.context.push_back(static_cast<uint8_t>(split[size_t(p - b.window + j)]));
  b.target.push_back(static_cast<uint8_t>(split[size_t(p)]));
}

}  // namespace

ByteData::ByteData(std::string bytes) {
  // First 90% (rounded down) for training, the rest for validation.
  const size_t cut = bytes.size() / 10 * 9 + bytes.size() % 10 * 9 / 10;  // ⌊0.9·n⌋ without overflow
  valid_ = bytes.substr(cut);
  bytes.resize(cut);
  train_ = std::move(bytes);
}

ByteData ByteData::from_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("data file '" + path + "': cannot be opened");
  std::ostringstream all;
  all << in.rdbuf();
  if (in.bad()) throw Error("data file '" + path + "': read failed");
  return ByteData(all.str());
}

Batch sample_batch(const std::string& split, int64_t window, int64_t tokens, uint64_t seed, int64_t step) {
  check_split(split, window);
  Batch b;
  b.window = window;
  b.context.reserve(size_t(tokens * window));
  b.target.reserve(size_t(tokens));
  const auto choices = static_cast<uint64_t>(static_cast<int64_t>(split.size()) - window);
  const uint64_t key = splitmix64(splitmix64(seed) + uint64_t(step));
  for (int64_t t = 0; t < tokens; ++t)
    put(b, split, window + static_cast<int64_t>(splitmix64(key + uint64_t(t)) % choices));
  return b;
}

Batch spaced_batch(const std::string& split, int64_t window, int64_t tokens) {
  check_split(split, window);
  Batch b;
  b.window = window;
  const int64_t choices = static_cast<int64_t>(split.size()) - window;
  const int64_t n = std::min(tokens, choices);
  for (int64_t t = 0; t < n; ++t) put(b, split, window + t * choices / n);
  return b;
}

}  // namespace ffn
