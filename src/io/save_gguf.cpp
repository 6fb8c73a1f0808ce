// save_gguf: blocks written through the GGUF writer under llama.cpp's tensor names
// (ffn/save.hpp).
#include "ffn/save.hpp"

#include "block/gate_sparsity_checks.hpp"
#include "ffn/error.hpp"
#include "io/gguf.hpp"

namespace ffn {
namespace {

// The GGUF tensor type of a weight type (the weight-type table's number).
GgmlType ggml_type_of(WeightType t) { return static_cast<GgmlType>(weight_type_info(t).gguf_type); }

// Adds one layer's tensors under GGUF's names; weights [out][in] are ne = {in, out}.
void add_layer(GgufWriter& w, const Block& b, int64_t layer, const MatrixTypes& types) {
  const auto& c = b.config();
  const auto& wt = b.weights();
  const std::string p = "blk." + std::to_string(layer) + ".ffn_";
  if (c.variant.gated) w.add_tensor(p + "gate.weight", ggml_type_of(types.gate), {c.d_model, c.hidden}, wt.gate.data());
  w.add_tensor(p + "up.weight", ggml_type_of(types.up), {c.d_model, c.hidden}, wt.up.data());
  w.add_tensor(p + "down.weight", ggml_type_of(types.down), {c.hidden, c.d_model}, wt.down.data());
  if (c.bias) {
    if (c.variant.gated) w.add_tensor(p + "gate.bias", GgmlType::f32, {c.hidden}, wt.gate_bias.data());
    w.add_tensor(p + "up.bias", GgmlType::f32, {c.hidden}, wt.up_bias.data());
    w.add_tensor(p + "down.bias", GgmlType::f32, {c.d_model}, wt.down_bias.data());
  }
}

}  // namespace

void save_gguf(const std::string& path, const std::vector<LayerToSave>& layers, const SaveOptions& options) {
  const std::string where = "save_gguf '" + path + "'";
  if (layers.empty()) throw Error(where + ": no layer to write");
  for (const LayerToSave& l : layers)
    if (!l.block) throw Error(where + ": layer " + std::to_string(l.layer) + " has no block");
  const BlockConfig& first = layers.front().block->config();
  GgufWriter writer;
  for (const LayerToSave& l : layers) {
    refuse_gate_sparsity(l.block->config(), where + ": layer " + std::to_string(l.layer),
                         "the file's metadata (ffn.variant) has no place for it, and it would be lost");
    const Variant v = l.block->config().variant;
    if (!(v == first.variant))
      throw Error(where + ": layer " + std::to_string(l.layer) + " is " + variant_name(v) + " but layer " +
                  std::to_string(layers.front().layer) + " is " + variant_name(first.variant) +
                  " (a file holds blocks of one variant)");
    add_layer(writer, *l.block, l.layer, l.types);
  }
  if (!options.name.empty()) writer.set_string("general.name", options.name);
  writer.set_string("ffn.variant", variant_name(first.variant));
  writer.set_u64("ffn.d_model", static_cast<uint64_t>(first.d_model));
  writer.set_u64("ffn.hidden", static_cast<uint64_t>(first.hidden));
  writer.set_u64("ffn.layer_count", layers.size());
  if (!options.quantization.empty()) writer.set_string("ffn.quantization", options.quantization);
  writer.write(path);
}

}  // namespace ffn
