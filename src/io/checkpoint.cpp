// load_block: a tensor source, the names of the layer's block in it, the activation, then
// the shapes checked and the weights converted to f32 in nn.Linear layout.
#include "ffn/checkpoint.hpp"

#include <vector>

#include "ffn/error.hpp"
#include "io/activation_hint.hpp"
#include "io/block_names.hpp"
#include "io/tensor_source.hpp"

namespace ffn {
namespace {

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

// Reads rows [r0, r0 + m.rows()) and columns [c0, c0 + m.cols()) of a weight in nn.Linear
// layout [out][in] into m; a Conv1D weight is stored [in][out], so its window is transposed.
void read_weight(const io::TensorSource& src, const std::string& name, bool conv1d, Matrix& m, int64_t r0 = 0,
                 int64_t c0 = 0) {
  if (!conv1d) return src.read_f32_window(name, r0, r0 + m.rows(), c0, c0 + m.cols(), m.data());
  Matrix stored(m.cols(), m.rows());
  src.read_f32_window(name, c0, c0 + m.cols(), r0, r0 + m.rows(), stored.data());
  for (int64_t i = 0; i < stored.rows(); ++i)
    for (int64_t o = 0; o < stored.cols(); ++o) m.row(o)[i] = stored.row(i)[o];
}

Activation choose_activation(const std::string& path, const io::TensorSource& src, const LoadOptions& o, bool gated,
                             std::string& source_out) {
  const io::ActivationHint hint = io::find_activation_hint(path, src);
  if (o.variant) {
    if (o.variant->gated != gated)
      throw Error(path + (gated ? ": the block has a gate projection (a gated block) but variant " +
                                      variant_name(*o.variant) + " has two matrices; choose a gated variant"
                                : ": the block has no gate projection but variant " + variant_name(*o.variant) +
                                      " is gated; choose a 2-matrix variant"));
    if (hint.activation && *hint.activation != o.variant->activation)
      throw Error(path + ": " + hint.source + " means activation " + std::string(activation_name(*hint.activation)) +
                  ", but variant " + variant_name(*o.variant) + " uses " +
                  std::string(activation_name(o.variant->activation)));
    source_out = hint.activation ? hint.source + " (agrees with the variant given)" : "the variant given";
    return o.variant->activation;
  }
  if (!hint.activation)
    throw Error(path +
                ": the checkpoint does not say its activation (no config.json beside it); give the variant "
                "(--variant), e.g. " +
                std::string(gated ? "swiglu, geglu" : "gelu, relu"));
  source_out = hint.source;
  return *hint.activation;
}

// GGUF files declare the model's widths ({arch}.embedding_length, {arch}.feed_forward_length);
// a file whose tensors disagree with them is inconsistent, not something to guess around.
void check_declared_widths(const io::TensorSource& src, int64_t D, int64_t H) {
  const auto meta = src.metadata();
  const auto arch = meta.find("general.architecture");
  if (arch == meta.end()) return;
  for (const auto& [key, actual] :
       {std::pair{arch->second + ".embedding_length", D}, std::pair{arch->second + ".feed_forward_length", H}}) {
    const auto declared = src.metadata_int(key);
    if (declared && *declared != actual)
      throw Error(src.path() + ": metadata " + key + " = " + std::to_string(*declared) +
                  " but the feed-forward tensors say " + std::to_string(actual));
  }
}

// The block over the matrices' stored bytes (copied), when every matrix has the same
// stored weight type; nullopt otherwise (the caller widens to f32 then).
std::optional<Block> load_stored(const io::TensorSource& src, const io::BlockNames& n, const BlockConfig& config) {
  if (n.conv1d) return std::nullopt;
  const auto up = src.stored(n.up), down = src.stored(n.down);
  const auto gate = config.variant.gated ? src.stored(n.gate) : up;
  if (!up || !down || !gate || down->type != up->type || gate->type != up->type) return std::nullopt;
  const WeightType t = up->type;
  const auto& info = weight_type_info(t);
  auto matrix = [&](const io::TensorSource::Stored& s, int64_t rows, int64_t cols) {
    TypedMatrix m;
    m.type = t;
    m.rows = rows;
    m.cols = cols;
    m.row_bytes = cols / info.block_elements * info.block_bytes;
    m.bytes.assign(s.data, s.data + s.bytes);
    return m;
  };
  const int64_t D = config.d_model, H = config.hidden;
  TypedWeights w;
  w.up = matrix(*up, H, D);
  w.down = matrix(*down, D, H);
  if (config.variant.gated) w.gate = matrix(*gate, H, D);
  if (config.bias) {
    w.up_bias = Matrix(1, H);
    w.down_bias = Matrix(1, D);
    src.read_f32(n.up_bias, w.up_bias.data());
    src.read_f32(n.down_bias, w.down_bias.data());
    if (config.variant.gated) {
      w.gate_bias = Matrix(1, H);
      src.read_f32(n.gate_bias, w.gate_bias.data());
    }
  }
  try {
    return Block::from_stored(config, std::move(w));
  } catch (const Error& e) {
    throw Error(src.path() + ": " + e.what());
  }
}

}  // namespace

Checkpoint::Checkpoint(const std::string& path) : path_(path), source_(io::open_tensor_source(path)) {}
Checkpoint::~Checkpoint() = default;
Checkpoint::Checkpoint(Checkpoint&&) noexcept = default;
Checkpoint& Checkpoint::operator=(Checkpoint&&) noexcept = default;

std::vector<int64_t> Checkpoint::layers() const { return io::block_layers(*source_); }

namespace {

// What a layer's block is, from names, shapes and metadata alone.
struct Resolved {
  io::BlockNames names;
  BlockConfig config;
  std::string activation_source;
};

Resolved resolve(const std::string& path, const io::TensorSource* src, const LoadOptions& o) {
  const io::BlockNames n = io::find_block_names(*src, o.layer);
  const bool gated = !n.gate.empty();
  std::string activation_source;
  const Activation act = choose_activation(path, *src, o, gated, activation_source);

  const auto& up = src->tensors().at(n.up).shape;
  if (up.size() != 2)
    throw Error(src->path() + ": tensor '" + n.up + "' has shape " + shape_string(up) + "; expected 2 dimensions");
  // nn.Linear: up [H, D], down [D, H]; Conv1D stores both transposed.
  const int64_t H = n.conv1d ? up[1] : up[0], D = n.conv1d ? up[0] : up[1];
  if (gated) require_shape(*src, n.gate, {H, D});
  require_shape(*src, n.down, n.conv1d ? std::vector<int64_t>{H, D} : std::vector<int64_t>{D, H});
  check_declared_widths(*src, D, H);

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
    require_shape(*src, n.up_bias, {H});
    require_shape(*src, n.down_bias, {D});
    if (gated) require_shape(*src, n.gate_bias, {H});
  }

  const BlockConfig config{{gated, act}, D, H, bias};
  try {
    validate(config);
  } catch (const Error& e) {
    throw Error(src->path() + ": " + e.what());
  }
  return {n, config, activation_source};
}

}  // namespace

BlockConfig Checkpoint::config(const LoadOptions& o) const { return resolve(path_, source_.get(), o).config; }

namespace {

// The block's hidden units [h0, h1) (h1 = 0: all of them).
LoadedBlock read_block(const std::string& path, const io::TensorSource* src, const LoadOptions& o, int64_t h0,
                       int64_t h1) {
  const auto [n, whole, activation_source] = resolve(path, src, o);
  if (h1 == 0) h1 = whole.hidden;
  const bool gated = whole.variant.gated, bias = whole.bias;
  if (h0 < 0 || h0 >= h1 || h1 > whole.hidden)
    throw Error(path + ": hidden units [" + std::to_string(h0) + ", " + std::to_string(h1) +
                ") are not a slice of the block's " + std::to_string(whole.hidden));
  const bool whole_block = h0 == 0 && h1 == whole.hidden;
  if (o.keep_stored_type && whole_block)
    if (auto stored = load_stored(*src, n, whole)) return {std::move(*stored), n.scheme, activation_source};
  Block block({whole.variant, whole.d_model, h1 - h0, bias});
  auto& w = block.weights();
  read_weight(*src, n.up, n.conv1d, w.up, h0, 0);
  read_weight(*src, n.down, n.conv1d, w.down, 0, h0);
  if (gated) read_weight(*src, n.gate, n.conv1d, w.gate, h0, 0);
  if (bias) {
    src->read_f32_window(n.up_bias, 0, 1, h0, h1, w.up_bias.data());
    src->read_f32(n.down_bias, w.down_bias.data());
    if (gated) src->read_f32_window(n.gate_bias, 0, 1, h0, h1, w.gate_bias.data());
  }
  return {std::move(block), n.scheme, activation_source};
}

}  // namespace

LoadedBlock Checkpoint::load(const LoadOptions& o) const { return read_block(path_, source_.get(), o, 0, 0); }

LoadedBlock Checkpoint::load_slice(const LoadOptions& o, int64_t hidden_begin, int64_t hidden_end) const {
  if (hidden_end <= hidden_begin)
    throw Error(path_ + ": hidden units [" + std::to_string(hidden_begin) + ", " + std::to_string(hidden_end) +
                ") are not a slice of the block's hidden units: the range is empty");
  return read_block(path_, source_.get(), o, hidden_begin, hidden_end);
}

LoadedBlock load_block(const std::string& path, const LoadOptions& options) { return Checkpoint(path).load(options); }

LoadedBlock load_block_as(const std::string& path, LoadOptions options, WeightType t, ThreadPool* pool) {
  Checkpoint checkpoint(path);
  options.keep_stored_type = t != WeightType::f32;
  LoadedBlock loaded = checkpoint.load(options);
  if (loaded.block.weight_type() == t) return loaded;
  if (loaded.block.weight_type() != WeightType::f32) {  // stored as another type: from f32
    options.keep_stored_type = false;
    loaded = checkpoint.load(options);
  }
  if (t != WeightType::f32) loaded.block = loaded.block.stored_as(t, pool);
  return loaded;
}

std::vector<int64_t> checkpoint_layers(const std::string& path) { return Checkpoint(path).layers(); }

}  // namespace ffn
