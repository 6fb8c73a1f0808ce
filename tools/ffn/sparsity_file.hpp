// The calibrated sparse-decode thresholds of a checkpoint, kept beside it in
// ffn-sparsity.json (the checkpoint itself is never changed):
//   {"format": "ffn-sparsity/1",
//    "layers": {"3": {"threshold": 0.0123, "target": 0.5, "calibration_tokens": 512,
//                     "calibrated_on": "x.npy"}, ...}}
// and, where --calibrate-down-sparsity P set one, "down_threshold", "down_target" and
// "down_kept_share" in the entry (SparseDecode::down_threshold, absent: 0, none; and
// SparseDecode::down_kept_share, absent: 1).
// `ffn forward --calibrate-sparsity S` writes a layer's entry (atomically, keeping the
// others); `ffn forward --sparse calibrated` reads it.
#pragma once

#include <cstdint>
#include <string>

namespace ffn::cli {

struct SparsityEntry {
  float threshold = 0;
  double target = 0;
  int64_t calibration_tokens = 0;
  std::string calibrated_on;
  float down_threshold = 0;  // 0: none
  double down_target = 0;
  double down_kept_share = 1;  // of the (token, channel) pairs the gate keeps, those down reads too
};

// The file's path for a checkpoint path (a file: beside it; a folder: in it).
std::string sparsity_file_for(const std::string& weights);

// The layer's entry; ffn::Error naming the file when it or the layer is missing or malformed.
SparsityEntry read_sparsity_entry(const std::string& weights, int64_t layer);

// Writes (or replaces) the layer's entry, keeping every other layer's.
void write_sparsity_entry(const std::string& weights, int64_t layer, const SparsityEntry& e);

}  // namespace ffn::cli
