// ffn-sparsity.json beside a checkpoint (sparsity_file.hpp).
#include "sparsity_file.hpp"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "ffn/error.hpp"
#include "io/atomic_file.hpp"

namespace ffn::cli {
namespace {

constexpr const char* kFormat = "ffn-sparsity/1";

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(path + ": cannot be read");
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw Error(path + ": not a JSON object");
  if (j.value("format", "") != kFormat)
    throw Error(path + ": format is not '" + kFormat + "'; it is not a file of ffn's sparse-decode thresholds");
  if (!j.contains("layers") || !j["layers"].is_object()) throw Error(path + ": has no \"layers\" object");
  return j;
}

}  // namespace

std::string sparsity_file_for(const std::string& weights) {
  const std::filesystem::path p(weights);
  return ((std::filesystem::is_directory(p) ? p : p.parent_path()) / "ffn-sparsity.json").string();
}

SparsityEntry read_sparsity_entry(const std::string& weights, int64_t layer) {
  const std::string path = sparsity_file_for(weights);
  if (!std::filesystem::exists(path))
    throw Error("--sparse calibrated: " + path +
                " does not exist; make it with ffn forward --calibrate-sparsity S "
                "(S: the share of hidden channels to drop) on sample tokens");
  const nlohmann::json j = read_json(path);
  const std::string key = std::to_string(layer);
  if (!j["layers"].contains(key))
    throw Error("--sparse calibrated: " + path + " has no entry for layer " + key +
                "; calibrate it with ffn forward --layer " + key + " --calibrate-sparsity S");
  const nlohmann::json& e = j["layers"][key];
  if (!e.is_object() || !e.contains("threshold") || !e["threshold"].is_number())
    throw Error(path + ": layer " + key + " has no numeric \"threshold\"");
  SparsityEntry out;
  out.threshold = e["threshold"].get<float>();
  if (!std::isfinite(out.threshold) || out.threshold < 0)
    throw Error(path + ": layer " + key + " threshold " + std::to_string(out.threshold) + " must be finite and ≥ 0");
  out.target = e.value("target", 0.0);
  out.calibration_tokens = e.value("calibration_tokens", int64_t(0));
  out.calibrated_on = e.value("calibrated_on", "");
  if (e.contains("down_threshold")) {
    if (!e["down_threshold"].is_number()) throw Error(path + ": layer " + key + " down_threshold is not a number");
    out.down_threshold = e["down_threshold"].get<float>();
    if (!std::isfinite(out.down_threshold) || out.down_threshold < 0)
      throw Error(path + ": layer " + key + " down_threshold " + std::to_string(out.down_threshold) +
                  " must be finite and ≥ 0");
    out.down_target = e.value("down_target", 0.0);
    if (e.contains("down_kept_share")) {
      if (!e["down_kept_share"].is_number()) throw Error(path + ": layer " + key + " down_kept_share is not a number");
      out.down_kept_share = e["down_kept_share"].get<double>();
      if (!(out.down_kept_share > 0 && out.down_kept_share <= 1))
        throw Error(path + ": layer " + key + " down_kept_share " + std::to_string(out.down_kept_share) +
                    " must be in (0, 1]");
    }
  }
  return out;
}

void write_sparsity_entry(const std::string& weights, int64_t layer, const SparsityEntry& e) {
  const std::string path = sparsity_file_for(weights);
  nlohmann::json j = std::filesystem::exists(path)
                         ? read_json(path)
                         : nlohmann::json{{"format", kFormat}, {"layers", nlohmann::json::object()}};
  j["layers"][std::to_string(layer)] = {{"threshold", e.threshold},
                                        {"target", e.target},
                                        {"calibration_tokens", e.calibration_tokens},
                                        {"calibrated_on", e.calibrated_on}};
  if (e.down_threshold > 0) {
    j["layers"][std::to_string(layer)]["down_threshold"] = e.down_threshold;
    j["layers"][std::to_string(layer)]["down_target"] = e.down_target;
    j["layers"][std::to_string(layer)]["down_kept_share"] = e.down_kept_share;
  }
  write_file_atomically(path, j.dump(2) + "\n");
}

}  // namespace ffn::cli
