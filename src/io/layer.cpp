// Layer (checkpoint.hpp): a loaded layer run and described the same way whether it is a
// dense block or a mixture of experts.
#include <cstdio>
#include <string>
#include <tuple>
#include <variant>

#include "ffn/checkpoint.hpp"
#include "ffn/error.hpp"

namespace ffn {
namespace {

// " (stored q4_K)" when the file's types are not those the layer runs (a --dtype conversion).
std::string stored_note(const MatrixTypes& in_file, const MatrixTypes& running, bool gated) {
  const std::string file = matrix_types_name(in_file, gated);
  return file == matrix_types_name(running, gated) ? "" : " (stored " + file + ")";
}

// "Phi-3, Phi-3.5, Phi-4-mini (config.json model_type 'phi3'); " or "".
std::string family_note(const LayerSource& s) { return s.family.empty() ? "" : s.family + "; "; }

// What sparse decode holds beside the panels, matrix by matrix: "up and down held again as
// rows", or with a block type "up q4_0 and down q4_0 held again as q8_0 rows along d_model"
// (down's blocks ran along the hidden channels, so even q8_0's are requantised).
std::string held_note(const InferenceBlock& b) {
  const MatrixTypes& t = b.types();
  const bool gated = b.config().variant.gated;
  auto requantised = [](WeightType stored) { return weight_type_info(stored).block_elements > 1; };
  const bool up_copy = gated && sparse_rows_type(t.up) != t.up, down_copy = requantised(t.down);
  if (!up_copy && !down_copy) return std::string(gated ? "up and down" : "down") + " held again as rows";
  std::string copies, rows;
  for (auto [name, type, copy, used] : {std::tuple{"up", t.up, up_copy, gated}, {"down", t.down, down_copy, true}}) {
    if (!used) continue;
    std::string& list = copy ? copies : rows;
    list += std::string(list.empty() ? "" : " and ") + name + " " + std::string(weight_type_name(type));
  }
  return copies + " held again as q8_0 rows along d_model" + (rows.empty() ? "" : ", " + rows + " as rows");
}

// "; sparse decode: exact zeros skipped (up and down held again as rows, +180.4 MB)" or "".
std::string sparse_note(const InferenceBlock& b) {
  const SparseDecode& sp = b.sparse();
  if (!sp.enabled) return "";
  char mb[32];
  std::snprintf(mb, sizeof mb, "%.1f", double(b.sparse_layout_bytes()) / 1e6);
  return std::string("; sparse decode: ") +
         sparse_decode_rule(sp) +
         " (" + held_note(b) + ", +" + mb + " MB)";
}

std::string describe(const LayerSource& s, const InferenceBlock& b) {
  const BlockConfig& c = b.config();
  return variant_name(c.variant) + " (" + family_note(s) + s.scheme + " names, layer " + std::to_string(s.layer) + "; activation from " +
         s.activation_source + ") d_model " + std::to_string(c.d_model) + " hidden " + std::to_string(c.hidden) +
         (c.bias ? " bias" : "") +
         (s.gate_sparsity_source.empty() ? "" : ", gate sparsity " + s.gate_sparsity_source) + ", weights " +
         matrix_types_name(b.types(), c.variant.gated) + stored_note(s.file_types, b.types(), c.variant.gated) +
         sparse_note(b);
}

std::string describe(const LayerSource& s, const MoeBlock& b) {
  const MoeConfig& c = b.config();
  return "mixture of experts (" + family_note(s) + s.scheme + " names, layer " + std::to_string(s.layer) + "; routing from " +
         s.routing_source + "; activation from " + s.activation_source + "): " + std::to_string(c.experts) + " " +
         variant_name(c.expert.variant) + " experts of hidden " + std::to_string(c.expert.hidden) + ", top " +
         std::to_string(c.top_k) + " by " + std::string(router_scoring_name(c.scoring)) +
         (c.normalize_top_k ? ", renormalised" : "") +
         (c.shared_hidden > 0 ? ", shared experts of hidden " + std::to_string(c.shared_hidden) : "") + ", d_model " +
         std::to_string(c.d_model()) + ", weights " + matrix_types_name(b.expert_types(), true) +
         stored_note(s.file_types, b.expert_types(), true);
}

}  // namespace

const InferenceBlock& Layer::dense() const {
  if (const auto* b = std::get_if<InferenceBlock>(&block)) return *b;
  throw Error("layer " + std::to_string(layer) + " is a mixture of experts, not a dense block");
}

const MoeBlock& Layer::moe() const {
  if (const auto* b = std::get_if<MoeBlock>(&block)) return *b;
  throw Error("layer " + std::to_string(layer) + " is a dense block, not a mixture of experts");
}

int64_t Layer::d_model() const { return is_moe() ? moe().config().d_model() : dense().config().d_model; }

void Layer::forward(ConstMatrixView x, MatrixView y, ThreadPool* pool) const {
  std::visit([&](const auto& b) { b.forward(x, y, pool); }, block);
}

std::string Layer::summary() const {
  return std::visit([this](const auto& b) { return describe(*this, b); }, block);
}

}  // namespace ffn
