// Which hidden units a rank holds, and the Block that holds them (include/ffn/distributed.hpp);
// whether the launcher started several processes (distributed/launch.hpp).
#include <cstdlib>
#include <cstring>
#include <string>

#include "block/gate_sparsity_checks.hpp"
#include "distributed/launch.hpp"
#include "ffn/distributed.hpp"
#include "ffn/error.hpp"

namespace ffn {

bool launched_with_several_processes() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"}) {
    const char* v = std::getenv(name);
    if (v != nullptr && std::atoi(v) > 1) return true;
  }
  return false;
}

int64_t hidden_granule(WeightType t) { return weight_type_info(t).block_elements; }

HiddenSlice hidden_slice(int64_t hidden, int rank, int ranks, int64_t granule) {
  if (ranks < 1 || rank < 0 || rank >= ranks)
    throw Error("hidden slice: rank " + std::to_string(rank) + " of " + std::to_string(ranks) + " is not a rank");
  if (granule < 1) throw Error("hidden slice: granule = " + std::to_string(granule) + ": must be ≥ 1");
  if (hidden < 1) throw Error("hidden slice: hidden = " + std::to_string(hidden) + ": must be ≥ 1");
  if (hidden % granule != 0)
    throw Error("hidden = " + std::to_string(hidden) + " cannot be split across ranks in whole blocks of " +
                std::to_string(granule) + " (the weight type's block): hidden must be a multiple of " +
                std::to_string(granule));
  if (hidden / granule < ranks)
    throw Error("hidden = " + std::to_string(hidden) + " split in units of " + std::to_string(granule) + " over " +
                std::to_string(ranks) + " ranks leaves some rank without hidden units: use at most " +
                std::to_string(hidden / granule) + " ranks");
  const auto [begin, end] = split_range(hidden, rank, ranks, granule);
  return {begin, end};
}

Block slice_block(const Block& full, HiddenSlice s, bool keep_down_bias) {
  const BlockConfig& c = full.config();
  refuse_gate_sparsity(c, "slice_block", "a slice of the hidden units would take the mean and std of only its own gate values");
  if (s.begin < 0 || s.end > c.hidden || s.size() < 1)
    throw Error("slice [" + std::to_string(s.begin) + ", " + std::to_string(s.end) + ") is not within hidden " +
                std::to_string(c.hidden));
  const int64_t D = c.d_model, h = s.size();
  Block local({c.variant, D, h, c.bias});
  const BlockWeights& w = full.weights();
  BlockWeights& lw = local.weights();
  // gate, up: rows [begin, end) of [H][D] are one contiguous run.
  auto copy_rows = [&](const Matrix& from, Matrix& to) {
    if (!from.empty()) std::memcpy(to.data(), from.row(s.begin), sizeof(float) * size_t(h * D));
  };
  copy_rows(w.gate, lw.gate);
  copy_rows(w.up, lw.up);
  // down: columns [begin, end) of each of its D rows of length H.
  for (int64_t i = 0; i < D; ++i) std::memcpy(lw.down.row(i), w.down.row(i) + s.begin, sizeof(float) * size_t(h));
  if (c.bias) {
    if (c.variant.gated) std::memcpy(lw.gate_bias.data(), w.gate_bias.data() + s.begin, sizeof(float) * size_t(h));
    std::memcpy(lw.up_bias.data(), w.up_bias.data() + s.begin, sizeof(float) * size_t(h));
    if (keep_down_bias) std::memcpy(lw.down_bias.data(), w.down_bias.data(), sizeof(float) * size_t(D));
  }
  return local;
}

}  // namespace ffn
