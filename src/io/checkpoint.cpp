// Checkpoint: a tensor source, then per layer the names of its block in it (or of its
// mixture of experts: moe_checkpoint.cpp), the activation, the shapes checked, and the
// weights read as stored or converted to f32 in nn.Linear layout.
#include "ffn/checkpoint.hpp"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <vector>

#include "block/gate_sparsity_checks.hpp"
#include "block/loaded_weights.hpp"
#include "ffn/error.hpp"
#include "io/activation_hint.hpp"
#include "io/block_names.hpp"
#include "io/families.hpp"
#include "io/moe_checkpoint.hpp"
#include "io/moe_names.hpp"
#include "io/stored_read.hpp"
#include "io/tensor_source.hpp"

namespace ffn {
namespace {

using io::read_stored;
using io::read_weight;

std::string shape_string(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

void require_shape(const io::TensorSource& src, const std::string& name, const std::vector<int64_t>& shape) {
  const auto& t = src.tensors().at(name);
  if (t.shape != shape)
    throw Error(src.path() + ": tensor '" + name + "' has shape " + shape_string(t.shape) + ", expected " +
                shape_string(shape));
}

// GGUF files declare the model's widths ({arch}.embedding_length, {arch}.feed_forward_length);
// a file whose tensors disagree with them is inconsistent, not something to guess around.
void check_declared_widths(const io::TensorSource& src, int64_t layer, int64_t D, int64_t H) {
  const auto arch = src.metadata_string("general.architecture");
  if (!arch) return;
  // Gemma 3n's converter writes feed_forward_length per layer (its intermediate_size list).
  if (const auto per_layer = src.metadata_int_array(*arch + ".feed_forward_length")) {
    if (layer >= static_cast<int64_t>(per_layer->size()) || (*per_layer)[static_cast<size_t>(layer)] != H)
      throw Error(src.path() + ": metadata " + *arch + ".feed_forward_length " +
                  (layer < static_cast<int64_t>(per_layer->size())
                       ? "[" + std::to_string(layer) + "] = " + std::to_string((*per_layer)[static_cast<size_t>(layer)])
                       : "has no entry for layer " + std::to_string(layer)) +
                  " but the feed-forward tensors say " + std::to_string(H));
  }
  for (const auto& [key, actual] :
       {std::pair{*arch + ".embedding_length", D}, std::pair{*arch + ".feed_forward_length", H}}) {
    const auto declared = src.metadata_int(key);
    if (declared && *declared != actual)
      throw Error(src.path() + ": metadata " + key + " = " + std::to_string(*declared) +
                  " but the feed-forward tensors say " + std::to_string(actual));
  }
}

}  // namespace

Checkpoint::Checkpoint(const std::string& path) : path_(path), source_(std::make_unique<io::TensorSource>(path)) {}
Checkpoint::~Checkpoint() = default;
Checkpoint::Checkpoint(Checkpoint&&) noexcept = default;
Checkpoint& Checkpoint::operator=(Checkpoint&&) noexcept = default;

std::vector<int64_t> Checkpoint::layers() const {
  std::vector<int64_t> dense = io::block_layers(*source_), moe = io::moe_layers(*source_), all;
  std::set_union(dense.begin(), dense.end(), moe.begin(), moe.end(), std::back_inserter(all));
  return all;
}

namespace {

// Each matrix's type in the file; a Conv1D weight is transposed on reading, so f32.
MatrixTypes file_types(const io::TensorSource& src, const io::BlockNames& n, bool gated) {
  auto type = [&](const std::string& name) {
    return n.conv1d ? WeightType::f32 : src.tensor(name).type.value_or(WeightType::f32);
  };
  return {gated ? type(n.gate) : type(n.up), type(n.up), type(n.down)};
}

// What a dense layer's block is, from names, shapes and metadata alone.
struct Resolved {
  io::BlockNames names;
  BlockConfig config;
  LayerSource source;
};

Resolved resolve(const std::string& path, const io::TensorSource* src, const LoadOptions& o) {
  if (const auto moe = io::find_moe_names(*src, o.layer))
    throw Error(src->path() + ": layer " + std::to_string(o.layer) + " is a mixture of experts (router '" +
                moe->router + "'); load it as one (Checkpoint::load_layer, ffn.load)");
  io::check_family_supported(*src, false);
  const io::BlockNames n = io::find_block_names(*src, o.layer);
  const bool gated = !n.gate.empty();
  LayerSource source{o.layer, n.scheme, {}, {}, file_types(*src, n, gated),
                     io::family_description(io::find_family(*src, false)), {}};
  const Activation act = io::choose_activation(path, *src, o.variant, gated, source.activation_source);

  const auto& up = src->tensors().at(n.up).shape;
  if (up.size() != 2)
    throw Error(src->path() + ": tensor '" + n.up + "' has shape " + shape_string(up) + "; expected 2 dimensions");
  // nn.Linear: up [H, D], down [D, H] (a fused gate and up [2H, D]); Conv1D stores both
  // transposed.
  const int64_t H = n.conv1d ? up[1] : (n.fused ? up[0] / 2 : up[0]), D = n.conv1d ? up[0] : up[1];
  if (n.fused && up[0] % 2 != 0)
    throw Error(src->path() + ": tensor '" + n.up + "' holds gate and up fused, but has an odd number of rows (" +
                std::to_string(up[0]) + ")");
  if (gated && !n.fused) require_shape(*src, n.gate, {H, D});
  require_shape(*src, n.down, n.conv1d ? std::vector<int64_t>{H, D} : std::vector<int64_t>{D, H});
  check_declared_widths(*src, o.layer, D, H);

  std::vector<std::string> biases{n.up_bias, n.down_bias};
  if (gated) biases.push_back(n.gate_bias);
  size_t present = 0;
  std::string bias_list;
  for (const auto& b : biases) {
    present += src->has(b) ? 1 : 0;
    bias_list += (bias_list.empty() ? "" : ", ") + b;
  }
  if (present != 0 && present != biases.size())
    throw Error(src->path() + ": some projections have a bias and others do not; expected all or none of " + bias_list);
  const bool bias = present != 0;
  if (bias) {
    require_shape(*src, n.up_bias, {n.fused ? 2 * H : H});
    require_shape(*src, n.down_bias, {D});
    if (gated && !n.fused) require_shape(*src, n.gate_bias, {H});
  }

  const io::GateSparsityHint sparsity = io::find_gate_sparsity(*src, o.layer);
  if (sparsity.sparsity > 0.0) {
    if (!gated)
      throw Error(src->path() + ": " + sparsity.source + " gives layer " + std::to_string(o.layer) +
                  " a gate sparsity, but its block has no gate projection");
    char value[32];
    std::snprintf(value, sizeof value, "%g", sparsity.sparsity);
    source.gate_sparsity_source = std::string(value) + " (" + sparsity.source + ")";
  }
  const BlockConfig config{{gated, act}, D, H, bias, sparsity.sparsity};
  try {
    validate(config);
  } catch (const Error& e) {
    throw Error(src->path() + ": " + e.what());
  }
  return {n, config, std::move(source)};
}

}  // namespace

namespace {

// The whole block's configuration and names, and the hidden units [h0, h1) of it to read
// ((0, 0): all of them), checked.
struct Window {
  Resolved resolved;
  int64_t h0, h1;
};

Window window(const std::string& path, const io::TensorSource* src, const LoadOptions& o, int64_t h0, int64_t h1) {
  Resolved r = resolve(path, src, o);
  if (h0 == 0 && h1 == 0) h1 = r.config.hidden;
  if (h0 < 0 || h0 >= h1 || h1 > r.config.hidden)
    throw Error(path + ": hidden units [" + std::to_string(h0) + ", " + std::to_string(h1) +
                ") are not a slice of the block's " + std::to_string(r.config.hidden));
  if (h1 - h0 != r.config.hidden)
    refuse_gate_sparsity(r.config, path + ": layer " + std::to_string(o.layer) + "'s hidden units [" +
                                       std::to_string(h0) + ", " + std::to_string(h1) + ")",
                         "a slice would take the mean and std of only its own gate values (tensor parallelism)");
  return {std::move(r), h0, h1};
}

// The biases of hidden units [h0, h1) (gate and up) and the whole down bias, or none.
void read_biases(const io::TensorSource& src, const io::BlockNames& n, const BlockConfig& whole, int64_t h0,
                 int64_t h1, Matrix& gate_bias, Matrix& up_bias, Matrix& down_bias) {
  if (!whole.bias) return;
  const int64_t H = whole.hidden, up0 = n.up_row0(H), gate0 = n.gate_row0(H);
  up_bias = Matrix(1, h1 - h0);
  down_bias = Matrix(1, whole.d_model);
  src.read_f32_window(n.up_bias, 0, 1, up0 + h0, up0 + h1, up_bias.data());
  src.read_f32(n.down_bias, down_bias.data());
  if (whole.variant.gated) {
    gate_bias = Matrix(1, h1 - h0);
    src.read_f32_window(n.gate_bias, 0, 1, gate0 + h0, gate0 + h1, gate_bias.data());
  }
}

LoadedStoredWeights read_stored_block(const std::string& path, const io::TensorSource* src, const LoadOptions& o,
                                      int64_t h0, int64_t h1, ThreadPool& pool) {
  const Window win = window(path, src, o, h0, h1);
  const auto& [n, whole, source] = win.resolved;
  h0 = win.h0;
  h1 = win.h1;
  const int64_t D = whole.d_model;
  LoadedStoredWeights out{source, {whole.variant, D, h1 - h0, whole.bias, whole.gate_sparsity}, {}};
  StoredWeights& w = out.weights;
  // A fused gate and up is read as two windows of its rows: no copy beyond the one every
  // matrix gets on loading.
  const int64_t up0 = n.up_row0(whole.hidden), gate0 = n.gate_row0(whole.hidden);
  w.up = read_stored(*src, n.up, n.conv1d, up0 + h0, up0 + h1, 0, D, o.type, pool);
  w.down = read_stored(*src, n.down, n.conv1d, 0, D, h0, h1, o.type, pool);
  if (whole.variant.gated)
    w.gate = read_stored(*src, n.gate, n.conv1d, gate0 + h0, gate0 + h1, 0, D, o.type, pool);
  read_biases(*src, n, whole, h0, h1, w.gate_bias, w.up_bias, w.down_bias);
  return out;
}

// The dense layer's InferenceBlock; errors of laying it out name the checkpoint.
InferenceBlock inference_block(const std::string& path, const LoadedStoredWeights& s, ThreadPool& pool,
                               const std::optional<SparseDecode>& sparse) {
  try {
    const MatrixTypes types{s.config.variant.gated ? s.weights.gate.type : s.weights.up.type, s.weights.up.type,
                            s.weights.down.type};
    return inference_block_of_checked_weights(s.config, s.weights, &pool,
                                              sparse ? *sparse : auto_sparse_decode(s.config, types));
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  }
}

}  // namespace

LayerInfo Checkpoint::inspect(const LoadOptions& o) const {
  if (io::find_moe_names(*source_, o.layer)) {
    io::check_family_supported(*source_, true);
    LayerInfo info = io::moe_layer_info(path_, *source_, o);
    info.family = io::family_description(io::find_family(*source_, true));
    return info;
  }
  Resolved r = resolve(path_, source_.get(), o);
  return {std::move(r.source), r.config};
}

Layer Checkpoint::load_layer(const LoadOptions& o, ThreadPool* pool) const {
  ThreadPool& p = pool ? *pool : default_thread_pool();
  if (io::find_moe_names(*source_, o.layer)) {
    io::check_family_supported(*source_, true);
    LoadedMoeExperts m = io::read_moe_experts(path_, *source_, o, 0, std::nullopt, p);
    m.family = io::family_description(io::find_family(*source_, true));
    try {
      MoeBlock block(m.config, std::move(m.router), std::move(m.experts), std::move(m.shared));
      return {std::move(m), std::move(block)};
    } catch (const Error& e) {
      throw Error(path_ + ": " + e.what());
    }
  }
  LoadedStoredWeights s = read_stored_block(path_, source_.get(), o, 0, 0, p);
  InferenceBlock block = inference_block(path_, s, p, o.sparse);
  return {std::move(s), std::move(block)};
}

LoadedBlock Checkpoint::load_trainable(const LoadOptions& o, int64_t hidden_begin, int64_t hidden_end) const {
  const Window win = window(path_, source_.get(), o, hidden_begin, hidden_end);
  const auto& [n, whole, source] = win.resolved;
  const int64_t h0 = win.h0, h1 = win.h1;
  LoadedBlock out{source, Block({whole.variant, whole.d_model, h1 - h0, whole.bias, whole.gate_sparsity})};
  auto& w = out.block.weights();
  read_weight(*source_, n.up, n.conv1d, w.up, n.up_row0(whole.hidden) + h0, 0);
  read_weight(*source_, n.down, n.conv1d, w.down, 0, h0);
  if (whole.variant.gated) read_weight(*source_, n.gate, n.conv1d, w.gate, n.gate_row0(whole.hidden) + h0, 0);
  read_biases(*source_, n, whole, h0, h1, w.gate_bias, w.up_bias, w.down_bias);
  return out;
}

LoadedStoredWeights Checkpoint::load_stored(const LoadOptions& o, int64_t hidden_begin, int64_t hidden_end,
                                            ThreadPool* pool) const {
  return read_stored_block(path_, source_.get(), o, hidden_begin, hidden_end, pool ? *pool : default_thread_pool());
}

LoadedMoeExperts Checkpoint::load_moe_experts(const LoadOptions& o, int64_t first, int64_t last,
                                              ThreadPool* pool) const {
  io::check_family_supported(*source_, true);
  LoadedMoeExperts m = io::read_moe_experts(path_, *source_, o, first, last, pool ? *pool : default_thread_pool());
  m.family = io::family_description(io::find_family(*source_, true));
  return m;
}

}  // namespace ffn
