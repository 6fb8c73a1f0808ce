// A layer's mixture of experts (moe_checkpoint.hpp): its router, routed experts and shared
// experts, from the names of moe_names.cpp, the routing rule of moe_hints.cpp and the shapes
// of the tensors, each checked against the others before any weight is read.
#include "block/loaded_weights.hpp"
#include "io/moe_checkpoint.hpp"

#include <string>
#include <vector>

#include "ffn/error.hpp"
#include "io/activation_hint.hpp"
#include "io/hf_mxfp4.hpp"
#include "io/moe_hints.hpp"
#include "io/moe_names.hpp"
#include "io/stored_read.hpp"
#include "io/tensor_source.hpp"

namespace ffn::io {
namespace {

std::string shape_text(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

// Where expert e's gate, up and down rows are: a tensor and its first row (3-D tensors are
// read as [E·rows][cols]).
struct ExpertRows {
  std::string gate, up, down;
  int64_t gate_row = 0, up_row = 0, down_row = 0;
};

struct MoeLayout {
  MoeNames names;
  MoeHints hints;
  MoeConfig config;
  std::string activation_source;
};

const std::vector<int64_t>& shape_of(const TensorSource& src, const std::string& name, const std::string& what) {
  const auto it = src.tensors().find(name);
  if (it == src.tensors().end()) throw Error(src.path() + ": " + what + " tensor '" + name + "' is missing");
  return it->second.shape;
}

void require(const TensorSource& src, const std::string& name, const std::vector<int64_t>& want,
             const std::string& what) {
  const auto& have = shape_of(src, name, what);
  if (have != want)
    throw Error(src.path() + ": " + what + " tensor '" + name + "' has shape " + shape_text(have) + ", expected " +
                shape_text(want));
}

ExpertRows expert_rows(const MoeNames& n, int64_t e, int64_t H, int64_t D) {
  if (!n.fused) return {expert_tensor(n.gate, e), expert_tensor(n.up, e), expert_tensor(n.down, e)};
  if (!n.gate_up.empty()) return {n.gate_up, n.gate_up, n.down, e * 2 * H, e * 2 * H + H, e * D};
  return {n.gate, n.up, n.down, e * H, e * H, e * D};
}

// The routed experts' count E, hidden H and width D from the tensors, each expert's (or the
// 3-D tensors') shapes checked. DBRX's stacked 2-D tensors take E from the hints.
void expert_shapes(const TensorSource& src, const MoeNames& n, const MoeHints& h, int64_t& E, int64_t& H,
                   int64_t& D) {
  if (n.stacked_down_in_out) {  // w1, v1, w2 each [E·H][D]
    const auto& s = shape_of(src, n.gate, "expert gate (w1)");
    if (!h.experts)
      throw Error(src.path() + ": the experts are stacked in 2-D tensors ('" + n.gate + "' " + shape_text(s) +
                  "), so the expert count must come from " + h.source + " (" +
                  (h.experts_field.empty() ? "the expert count" : h.experts_field) + "), which does not give it");
    E = *h.experts;
    if (s.size() != 2 || E < 1 || s[0] % E != 0)
      throw Error(src.path() + ": expert tensor '" + n.gate + "' has shape " + shape_text(s) + "; expected [" +
                  std::to_string(E) + " experts × hidden, d_model] (" + h.source + " " + h.experts_field + " = " +
                  std::to_string(E) + ")");
    H = s[0] / E;
    D = s[1];
    require(src, n.up, {E * H, D}, "expert up (v1)");
    require(src, n.down, {E * H, D}, "expert down (w2, stored in × out)");
    return;
  }
  if (n.mxfp4_blocks) {  // gate_up [E][2H][D], down [E][D][H], each as _blocks and _scales
    const auto gate_up = hf_mxfp4_shape(src, {n.gate_up, n.gate_up_scales}, "expert gate_up");
    if (gate_up[1] % 2 != 0)
      throw Error(src.path() + ": expert tensor '" + n.gate_up + "' has an odd row count " +
                  std::to_string(gate_up[1]) + "; expected 2·hidden (gate and up interleaved)");
    E = gate_up[0];
    H = gate_up[1] / 2;
    D = gate_up[2];
    const auto down = hf_mxfp4_shape(src, {n.down, n.down_scales}, "expert down");
    if (down != std::vector<int64_t>{E, D, H})
      throw Error(src.path() + ": expert tensor '" + n.down + "' holds [experts, rows, columns] = " + shape_text(down) +
                  ", expected " + shape_text({E, D, H}) + " from '" + n.gate_up + "'");
    return;
  }
  if (n.in_out_interleaved || n.in_out_halves) {
    const auto& s = shape_of(src, n.gate_up, "expert gate_up");
    if (s.size() != 3 || s[2] % 2 != 0)
      throw Error(src.path() + ": expert tensor '" + n.gate_up + "' has shape " + shape_text(s) +
                  "; expected [experts, d_model, 2·hidden] (" + (n.in_out_halves ? "Llama 4" : "gpt-oss") +
                  "'s layout)");
    E = s[0];
    D = s[1];
    H = s[2] / 2;
    require(src, n.down, {E, H, D}, "expert down");
    return;
  }
  if (n.fused) {
    const std::string& first = n.gate_up.empty() ? n.up : n.gate_up;
    const auto& s = shape_of(src, first, "expert");
    if (s.size() != 3)
      throw Error(src.path() + ": expert tensor '" + first + "' has shape " + shape_text(s) +
                  "; expected 3 dimensions [experts, hidden, d_model]");
    E = s[0];
    H = n.gate_up.empty() ? s[1] : s[1] / 2;
    D = s[2];
    if (!n.gate_up.empty() && s[1] % 2 != 0)
      throw Error(src.path() + ": fused gate and up tensor '" + first + "' has an odd row count " +
                  std::to_string(s[1]));
    if (n.gate_up.empty()) require(src, n.gate, {E, H, D}, "expert gate");
    require(src, n.down, {E, D, H}, "expert down");
    return;
  }
  const auto& s = shape_of(src, expert_tensor(n.up, 0), "expert 0's up");
  if (s.size() != 2)
    throw Error(src.path() + ": expert tensor '" + expert_tensor(n.up, 0) + "' has shape " + shape_text(s) +
                "; expected [hidden, d_model]");
  H = s[0];
  D = s[1];
  E = 0;
  while (src.has(expert_tensor(n.up, E)) || src.has(expert_tensor(n.gate, E))) ++E;
  for (int64_t e = 0; e < E; ++e) {
    const std::string what = "expert " + std::to_string(e) + "'s";
    require(src, expert_tensor(n.gate, e), {H, D}, what + " gate");
    require(src, expert_tensor(n.up, e), {H, D}, what + " up");
    require(src, expert_tensor(n.down, e), {D, H}, what + " down");
  }
}

// Whether the experts have biases: all of gate, up and down, or none (checked, shapes too).
bool expert_biases(const TensorSource& src, const MoeNames& n, int64_t E, int64_t H, int64_t D) {
  const bool fused_gate_up = !n.gate_up_bias.empty();
  const bool any = fused_gate_up || !n.gate_bias.empty() || !n.up_bias.empty() || !n.down_bias.empty();
  if (!any) return false;
  if (n.down_bias.empty() || (!fused_gate_up && (n.gate_bias.empty() || n.up_bias.empty())))
    throw Error(src.path() + ": some of the experts' projections have a bias and others do not; expected all or none");
  if (fused_gate_up) {
    require(src, n.gate_up_bias, {E, 2 * H}, "expert gate_up bias");
  } else {
    require(src, n.gate_bias, {E, H}, "expert gate bias");
    require(src, n.up_bias, {E, H}, "expert up bias");
  }
  require(src, n.down_bias, {E, D}, "expert down bias");
  return true;
}

MoeLayout layout(const std::string& path, const TensorSource& src, const LoadOptions& o) {
  const auto names = find_moe_names(src, o.layer);
  if (!names)
    throw Error(path + ": layer " + std::to_string(o.layer) +
                " is not a mixture of experts (no router under the Mixtral, Hugging Face, DBRX, Granite-MoE, Llama 4 or GGUF "
                "names)");
  if (!names->unsupported.empty()) throw Error(path + ": layer " + std::to_string(o.layer) + ": " + names->unsupported);
  MoeLayout l{*names, find_moe_hints(path, src), {}, {}};
  const MoeNames& n = l.names;
  const MoeHints& h = l.hints;
  int64_t E = 0, H = 0, D = 0;
  expert_shapes(src, n, h, E, H, D);
  const std::string counted = l.hints.source + " " + (h.experts_field.empty() ? "expert count" : h.experts_field);
  if (h.experts && *h.experts != E) {
    if (!n.fused && *h.experts > E)
      throw Error(path + ": " + counted + " = " + std::to_string(*h.experts) + ", but expert " + std::to_string(E) +
                  "'s tensors are missing ('" + expert_tensor(n.up, E) + "')");
    throw Error(path + ": " + counted + " = " + std::to_string(*h.experts) + ", but the expert tensors hold " +
                std::to_string(E) + " experts");
  }
  if (!h.top_k)
    throw Error(path + ": " + h.source + " does not give the experts per token (" +
                (h.top_k_field.empty() ? "num_experts_per_tok" : h.top_k_field) + ")");
  if (h.expert_hidden && *h.expert_hidden != H)
    throw Error(path + ": " + h.source + " gives the expert hidden size " + std::to_string(*h.expert_hidden) +
                " (moe_intermediate_size / expert_feed_forward_length), the tensors " + std::to_string(H));
  require(src, n.router, {E, D}, "router");

  MoeConfig& c = l.config;
  Activation act;
  if (h.activation) {  // the family's own activation (gpt-oss), whatever hidden_act says
    act = *h.activation;
    l.activation_source = h.activation_source;
    if (o.variant && *o.variant != Variant{true, act})
      throw Error(path + ": " + h.activation_source + " means the experts' variant " +
                  variant_name(Variant{true, act}) + ", but variant " + variant_name(*o.variant) + " was given");
  } else {
    act = choose_activation(path, src, o.variant, true, l.activation_source);
  }
  c.expert = BlockConfig{{true, act}, D, H, expert_biases(src, n, E, H, D), 0.0};
  c.experts = E;
  c.top_k = *h.top_k;
  c.scoring = h.scoring.value_or(RouterScoring::softmax);
  c.normalize_top_k = h.normalize_top_k.value_or(true);
  c.routed_scaling = h.routed_scaling.value_or(1.0);
  c.groups = h.groups.value_or(1);
  c.top_groups = h.top_groups.value_or(c.groups);
  c.choice_bias = !n.choice_bias.empty();
  c.router_bias = !n.router_bias.empty();
  c.weight_input = h.weight_input.value_or(false);
  if (c.router_bias) require(src, n.router_bias, {E}, "router bias");
  if (c.choice_bias) require(src, n.choice_bias, {E}, "router choice bias");
  if (!n.shared_gate_up.empty()) {  // Granite-MoE-Shared: gate and up in one [2S][D]
    const auto& s = shape_of(src, n.shared_gate_up, "shared expert gate_up");
    if (s.size() != 2 || s[1] != D || s[0] % 2 != 0)
      throw Error(src.path() + ": shared expert tensor '" + n.shared_gate_up + "' has shape " + shape_text(s) +
                  ", expected [2·hidden, " + std::to_string(D) + "] (gate rows, then up)");
    c.shared_hidden = s[0] / 2;
    require(src, n.shared_down, {D, c.shared_hidden}, "shared expert down");
    if (h.shared_hidden && *h.shared_hidden != c.shared_hidden)
      throw Error(path + ": " + h.source + " gives the shared experts' hidden size " +
                  std::to_string(*h.shared_hidden) + ", the tensors " + std::to_string(c.shared_hidden));
  } else if (!n.shared_up.empty()) {
    const auto& s = shape_of(src, n.shared_up, "shared expert up");
    if (s.size() != 2 || s[1] != D)
      throw Error(src.path() + ": shared expert tensor '" + n.shared_up + "' has shape " + shape_text(s) +
                  ", expected [hidden, " + std::to_string(D) + "]");
    c.shared_hidden = s[0];
    require(src, n.shared_gate, {c.shared_hidden, D}, "shared expert gate");
    require(src, n.shared_down, {D, c.shared_hidden}, "shared expert down");
    if (h.shared_hidden && *h.shared_hidden != c.shared_hidden)
      throw Error(path + ": " + h.source + " gives the shared experts' hidden size " +
                  std::to_string(*h.shared_hidden) + ", the tensors " + std::to_string(c.shared_hidden));
  } else if (h.shared_hidden && *h.shared_hidden > 0) {
    throw Error(path + ": " + h.source + " gives shared experts of hidden " + std::to_string(*h.shared_hidden) +
                " but layer " + std::to_string(o.layer) + " has no shared-expert tensors");
  }
  if (!n.shared_expert_gate.empty()) {
    const auto& s = shape_of(src, n.shared_expert_gate, "shared expert gate");
    if (s != std::vector<int64_t>{1, D} && s != std::vector<int64_t>{D})
      throw Error(src.path() + ": shared-expert gate tensor '" + n.shared_expert_gate + "' has shape " + shape_text(s) +
                  ", expected [1, " + std::to_string(D) + "]");
    c.shared_gate = true;
  }
  try {
    validate(c);
  } catch (const Error& e) {
    throw Error(path + ": " + h.source + " (" + (h.top_k_field.empty() ? "experts per token" : h.top_k_field) + " = " +
                std::to_string(c.top_k) + ", " + counted + " = " + std::to_string(E) + "): " + e.what());
  }
  return l;
}

// Rows [row0, row0 + rows) × cols of `name`, an in × out window, transposed to nn.Linear's
// [cols][rows] and stored as `want`, or as the file's type when it is f32, bf16 or f16 (the
// transposition leaves its values exact), else f32.
StoredMatrix read_transposed(const TensorSource& src, const std::string& name, int64_t row0, int64_t rows,
                             int64_t cols, std::optional<WeightType> want, const std::string& where, ThreadPool& pool) {
  const auto t = src.tensor(name).type;
  const bool plain = t == WeightType::f32 || t == WeightType::bf16 || t == WeightType::f16;
  Matrix in_out(rows, cols), out_in(cols, rows);
  src.read_f32_window(name, row0, row0 + rows, 0, cols, in_out.data());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) out_in.row(c)[r] = in_out.row(r)[c];
  return StoredMatrix::encode(out_in, want ? *want : plain ? *t : WeightType::f32, where, &pool);
}

// gpt-oss's and Llama 4's layouts: expert e's [D][2H] window of gate_up (in × out; the gate
// at even columns for gpt-oss, in the first H for Llama 4) and [H][D] window of down,
// transposed to nn.Linear's [out][in]. Stored as `want`, or as the file's type when it is
// f32, bf16 or f16 (the transposition leaves its values exact).
StoredWeights read_in_out(const TensorSource& src, const MoeNames& n, int64_t e, int64_t H, int64_t D,
                          std::optional<WeightType> want, ThreadPool& pool) {
  const auto file_type = [&](const std::string& name) {
    const auto t = src.tensor(name).type;
    const bool plain = t == WeightType::f32 || t == WeightType::bf16 || t == WeightType::f16;
    return want ? *want : plain ? *t : WeightType::f32;
  };
  Matrix gate_up(D, 2 * H), gate(H, D), up(H, D), down_in_out(H, D), down(D, H);
  src.read_f32_window(n.gate_up, e * D, (e + 1) * D, 0, 2 * H, gate_up.data());
  for (int64_t d = 0; d < D; ++d)
    for (int64_t h = 0; h < H; ++h) {
      gate.row(h)[d] = gate_up.row(d)[n.in_out_halves ? h : 2 * h];
      up.row(h)[d] = gate_up.row(d)[n.in_out_halves ? H + h : 2 * h + 1];
    }
  src.read_f32_window(n.down, e * H, (e + 1) * H, 0, D, down_in_out.data());
  for (int64_t h = 0; h < H; ++h)
    for (int64_t d = 0; d < D; ++d) down.row(d)[h] = down_in_out.row(h)[d];
  const std::string where = src.path() + ": expert " + std::to_string(e) + " of tensor '";
  StoredWeights w;
  w.gate = StoredMatrix::encode(gate, file_type(n.gate_up), where + n.gate_up + "' (gate)", &pool);
  w.up = StoredMatrix::encode(up, file_type(n.gate_up), where + n.gate_up + "' (up)", &pool);
  w.down = StoredMatrix::encode(down, file_type(n.down), where + n.down + "'", &pool);
  return w;
}

// The MXFP4 release: expert e's gate (even rows of its 2H gate_up rows), up (odd rows) and
// down, their bytes repacked into ggml's MXFP4 blocks (lossless). Stored as mxfp4, or, when
// `want` names another type, decoded to f32 (exact) and stored as that.
StoredWeights read_hf_mxfp4_expert(const TensorSource& src, const MoeNames& n, int64_t e, int64_t H, int64_t D,
                                   std::optional<WeightType> want, ThreadPool& pool) {
  const HfMxfp4Tensor gate_up{n.gate_up, n.gate_up_scales}, down{n.down, n.down_scales};
  StoredWeights w;
  w.gate = read_hf_mxfp4_rows(src, gate_up, e * 2 * H, 2, H);
  w.up = read_hf_mxfp4_rows(src, gate_up, e * 2 * H + 1, 2, H);
  w.down = read_hf_mxfp4_rows(src, down, e * D, 1, D);
  if (want && *want != WeightType::mxfp4) {
    const std::string where = src.path() + ": expert " + std::to_string(e) + " of tensor '";
    w.gate = StoredMatrix::encode(w.gate.decode(), *want, where + n.gate_up + "' (gate)", &pool);
    w.up = StoredMatrix::encode(w.up.decode(), *want, where + n.gate_up + "' (up)", &pool);
    w.down = StoredMatrix::encode(w.down.decode(), *want, where + n.down + "'", &pool);
  }
  return w;
}

// Expert e's biases: gate and up [1][H] (from a fused [E][2H] tensor: interleaved in
// gpt-oss's layouts, dense or MXFP4, halves otherwise), down [1][D].
void read_expert_biases(const TensorSource& src, const MoeNames& n, int64_t e, int64_t H, int64_t D,
                        StoredWeights& w) {
  w.gate_bias = Matrix(1, H);
  w.up_bias = Matrix(1, H);
  w.down_bias = Matrix(1, D);
  if (!n.gate_up_bias.empty()) {
    const bool interleaved = n.in_out_interleaved || n.mxfp4_blocks;  // gpt-oss's, in either form
    Matrix both(1, 2 * H);
    src.read_f32_window(n.gate_up_bias, e, e + 1, 0, 2 * H, both.data());
    for (int64_t h = 0; h < H; ++h) {
      w.gate_bias.data()[h] = interleaved ? both.data()[2 * h] : both.data()[h];
      w.up_bias.data()[h] = interleaved ? both.data()[2 * h + 1] : both.data()[H + h];
    }
  } else {
    src.read_f32_window(n.gate_bias, e, e + 1, 0, H, w.gate_bias.data());
    src.read_f32_window(n.up_bias, e, e + 1, 0, H, w.up_bias.data());
  }
  src.read_f32_window(n.down_bias, e, e + 1, 0, D, w.down_bias.data());
}

// The routed experts' types in the file: mxfp4 for the MXFP4 release (repacked, not
// converted), else those of the tensors holding expert 0's matrices (f32 where the file's
// type is none of ffn's weight types).
MatrixTypes expert_file_types(const TensorSource& src, const MoeNames& n, const MoeConfig& c) {
  if (n.mxfp4_blocks) return {WeightType::mxfp4, WeightType::mxfp4, WeightType::mxfp4};
  const ExpertRows r = expert_rows(n, 0, c.expert.hidden, c.d_model());
  const auto type = [&](const std::string& name) { return src.tensor(name).type.value_or(WeightType::f32); };
  return {type(r.gate), type(r.up), type(r.down)};
}

Matrix read_row_vector(const TensorSource& src, const std::string& name, int64_t n) {
  Matrix m(1, n);
  src.read_f32(name, m.data());
  return m;
}

LayerSource layer_source(const TensorSource& src, const LoadOptions& o, const MoeLayout& l) {
  return {o.layer, l.names.scheme, l.activation_source, l.hints.source, expert_file_types(src, l.names, l.config),
          {}, {}};  // the family: Checkpoint's loads add it; no gate sparsity
}

// Expert e's matrices, in their stored types or `type`. Their block scales are checked: the
// file's tensors by checked_data (read_stored), the MXFP4 release's by its repacking, and ffn's
// quantisers refuse a scale that is not finite.
StoredWeights read_expert(const TensorSource& src, const MoeNames& n, int64_t e, const MoeConfig& c,
                          std::optional<WeightType> type, ThreadPool& pool) {
  const int64_t H = c.expert.hidden, D = c.d_model();
  StoredWeights w;
  if (n.mxfp4_blocks) {
    w = read_hf_mxfp4_expert(src, n, e, H, D, type, pool);
  } else if (n.in_out_interleaved || n.in_out_halves) {
    w = read_in_out(src, n, e, H, D, type, pool);
  } else if (n.stacked_down_in_out) {  // DBRX: expert e's rows e·H … of w1, v1 and w2
    w.gate = read_stored(src, n.gate, false, e * H, (e + 1) * H, 0, D, type, pool);
    w.up = read_stored(src, n.up, false, e * H, (e + 1) * H, 0, D, type, pool);
    w.down = read_transposed(src, n.down, e * H, H, D, type,
                             src.path() + ": expert " + std::to_string(e) + " of tensor '" + n.down + "'", pool);
  } else {
    const ExpertRows r = expert_rows(n, e, H, D);
    w.gate = read_stored(src, r.gate, false, r.gate_row, r.gate_row + H, 0, D, type, pool);
    w.up = read_stored(src, r.up, false, r.up_row, r.up_row + H, 0, D, type, pool);
    w.down = read_stored(src, r.down, false, r.down_row, r.down_row + D, 0, H, type, pool);
  }
  if (c.expert.bias) read_expert_biases(src, n, e, H, D, w);
  return w;
}

}  // namespace

LayerInfo moe_layer_info(const std::string& path, const TensorSource& src, const LoadOptions& o) {
  const MoeLayout l = layout(path, src, o);
  return {layer_source(src, o, l), l.config};
}

LoadedMoeExperts read_moe_experts(const std::string& path, const TensorSource& src, const LoadOptions& o,
                                  int64_t first, std::optional<int64_t> last, ThreadPool& pool) {
  const MoeLayout l = layout(path, src, o);
  const MoeNames& n = l.names;
  const MoeConfig& c = l.config;
  const int64_t E = c.experts, D = c.d_model();
  const int64_t end = last.value_or(E);
  if (first < 0 || end > E || first >= end)
    throw Error(path + ": experts " + std::to_string(first) + "…" + std::to_string(end - 1) +
                " are not a range of layer " + std::to_string(o.layer) + "'s " + std::to_string(E) + " experts");
  LoadedMoeExperts out{layer_source(src, o, l), c, {}, {}, {}};
  out.router.weight = Matrix(E, D);
  src.read_f32(n.router, out.router.weight.data());
  if (c.choice_bias) out.router.choice_bias = read_row_vector(src, n.choice_bias, E);
  if (c.router_bias) out.router.bias = read_row_vector(src, n.router_bias, E);
  if (c.shared_gate) out.router.shared_gate = read_row_vector(src, n.shared_expert_gate, D);
  try {
    out.experts.reserve(static_cast<size_t>(end - first));
    for (int64_t e = first; e < end; ++e)
      out.experts.push_back(inference_block_of_checked_weights(c.expert, read_expert(src, n, e, c, o.type, pool), &pool));
    if (c.shared_hidden > 0) {
      const int64_t S = c.shared_hidden;
      StoredWeights w;
      if (!n.shared_gate_up.empty()) {
        w.gate = read_stored(src, n.shared_gate_up, false, 0, S, 0, D, o.type, pool);
        w.up = read_stored(src, n.shared_gate_up, false, S, 2 * S, 0, D, o.type, pool);
      } else {
        w.gate = read_stored(src, n.shared_gate, false, 0, S, 0, D, o.type, pool);
        w.up = read_stored(src, n.shared_up, false, 0, S, 0, D, o.type, pool);
      }
      w.down = read_stored(src, n.shared_down, false, 0, D, 0, S, o.type, pool);
      out.shared.emplace(inference_block_of_checked_weights(BlockConfig{c.expert.variant, D, S, false, 0.0}, w, &pool));
    }
  } catch (const Error& e) {
    const std::string what = e.what();
    if (what.rfind(path, 0) == 0) throw;
    throw Error(path + ": " + what);
  }
  return out;
}

}  // namespace ffn::io
