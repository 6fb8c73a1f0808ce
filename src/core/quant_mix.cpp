// The MLP rules of llama.cpp's quantisation mixes (core/quant_mix.hpp says which), and
// llama_mix_types, their public form (ffn/save.hpp).
#include "core/quant_mix.hpp"

#include <cctype>

#include "ffn/error.hpp"
#include "ffn/save.hpp"

namespace ffn {
namespace {

using W = WeightType;

const std::vector<QuantMix> kMixes = {
    {"q6_k", "every matrix q6_K"},
    {"q5_k_m", "gate and up q5_K; down q6_K where use_more_bits, else q5_K"},
    {"q5_k_s", "every matrix q5_K"},
    {"q4_k_m", "gate and up q4_K; down q6_K where use_more_bits, else q4_K"},
    {"q4_k_s", "gate and up q4_K; down q5_K in the first eighth of the layers, else q4_K"},
    {"q3_k_m", "gate and up q3_K; down q5_K in the first sixteenth of the layers, else q4_K"},
    {"q2_k", "gate and up q2_K; down q3_K"},
};

bool same_name(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

std::string layer_of(int64_t layer, int64_t layers) {
  return "layer " + std::to_string(layer) + " of " + std::to_string(layers);
}

}  // namespace

const std::vector<QuantMix>& quant_mixes() { return kMixes; }

const QuantMix* find_quant_mix(std::string_view name) {
  for (const auto& m : kMixes)
    if (same_name(m.name, name)) return &m;
  return nullptr;
}

bool use_more_bits(int64_t layer, int64_t layers) {
  return layer < layers / 8 || layer >= 7 * layers / 8 || (layer - layers / 8) % 3 == 2;
}

MixChoice quant_mix_types(const QuantMix& mix, int64_t layer, int64_t layers) {
  const std::string where = layer_of(layer, layers);
  const std::string_view n = mix.name;
  auto pick = [&](W gate_up, W down, std::string rule) { return MixChoice{{gate_up, gate_up, down}, std::move(rule)}; };
  if (n == "q6_k") return pick(W::q6_K, W::q6_K, "q6_k: every matrix q6_K");
  if (n == "q5_k_s") return pick(W::q5_K, W::q5_K, "q5_k_s: every matrix q5_K");
  if (n == "q5_k_m" || n == "q4_k_m") {
    const W base = n == "q5_k_m" ? W::q5_K : W::q4_K;
    return use_more_bits(layer, layers) ? pick(base, W::q6_K, std::string(n) + ": use_more_bits(" + where + ") → q6_K")
                                        : pick(base, base, std::string(n) + ": " + where + " not use_more_bits");
  }
  if (n == "q4_k_s")
    return layer < layers / 8 ? pick(W::q4_K, W::q5_K, "q4_k_s: " + where + " in the first eighth → q5_K")
                              : pick(W::q4_K, W::q4_K, "q4_k_s: " + where + " past the first eighth");
  if (n == "q3_k_m")
    return layer < layers / 16 ? pick(W::q3_K, W::q5_K, "q3_k_m: " + where + " in the first sixteenth → q5_K")
                               : pick(W::q3_K, W::q4_K, "q3_k_m: " + where + " past the first sixteenth → q4_K");
  return pick(W::q2_K, W::q3_K, "q2_k: down always q3_K");
}

MatrixTypes llama_mix_types(std::string_view mix, int64_t layer, int64_t layers) {
  const QuantMix* m = find_quant_mix(mix);
  if (!m) {
    std::string names;
    for (const auto& known : kMixes) names += (names.empty() ? "" : ", ") + std::string(known.name);
    throw Error("unknown quantisation mix '" + std::string(mix) + "': the mixes are " + names);
  }
  return quant_mix_types(*m, layer, layers).types;
}

}  // namespace ffn
