// Making an InferenceBlock: every matrix checked, then laid once into the panels of its
// weight type (inference_panels.hpp), from stored bytes as they are or from f32 rows
// encoded a panel's rows at a time (no whole encoded copy of a matrix is made).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "block/inference_panels.hpp"
#include "block/inference_stages.hpp"
#include "block/loaded_weights.hpp"
#include "core/activation_formats.hpp"
#include "core/quant.hpp"
#include "core/weight_type_table.hpp"
#include "ffn/accounting.hpp"
#include "ffn/error.hpp"
#include "kernels/kernels.hpp"
#include "kernels/q8_0_split_rows.hpp"

namespace ffn {
namespace {

constexpr int64_t kW = kernels::kPanelWidth;

// Where a matrix's rows come from while packing: stored bytes, or an f32 matrix whose rows
// are encoded as `type` when asked for.
struct RowSource {
  const char* name;
  WeightType type;
  int64_t cols;
  const StoredMatrix* stored = nullptr;
  const Matrix* f32 = nullptr;

  int64_t row_bytes() const { return weight_type_info(type).row_bytes(cols); }
  // Rows [r0, r0 + n) in the type's stored layout (buf holds them when they are encoded).
  const std::byte* rows(int64_t r0, int64_t n, std::vector<std::byte>& buf) const {
    if (stored) return stored->row(r0);
    if (type == WeightType::f32) return reinterpret_cast<const std::byte*>(f32->row(r0));
    const auto& traits = weight_type_traits(type);
    buf.resize(static_cast<size_t>(n * row_bytes()));
    try {
      for (int64_t r = 0; r < n; ++r) traits.from_f32(f32->row(r0 + r), buf.data() + r * row_bytes(), cols);
    } catch (const Error& e) {
      throw Error(std::string(name) + ": " + e.what());
    }
    return buf.data();
  }
};

// The panels of `rows` rows over K, rows_per_panel of each part's rows a panel, part i's
// in columns parts[i].second onwards; panels split across the pool.
PanelSet pack(WeightType type, int64_t K, int64_t rows, int64_t rows_per_panel,
              std::initializer_list<std::pair<const RowSource*, int64_t>> parts, ThreadPool& pool) {
  const auto& traits = weight_type_traits(type);
  PanelSet s;
  s.type = type;
  s.count = (rows + rows_per_panel - 1) / rows_per_panel;
  s.panel_bytes = traits.panel_bytes(K);
  s.storage = AlignedFloats((s.count * s.panel_bytes + 3) / 4);
  auto* base = reinterpret_cast<std::byte*>(s.storage.data());
  const auto& k = kernels::active_kernels();
  pool.run([&](int ith, int nth) {
    std::vector<std::byte> buf;
    const auto [p0, p1] = split_range(s.count, ith, nth);
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t r0 = p * rows_per_panel, n = std::min(rows_per_panel, rows - r0);
      for (const auto& [src, j0] : parts)
        traits.rows_into_panel(k, src->rows(r0, n, buf), src->row_bytes(), n, K, base + p * s.panel_bytes, j0);
    }
  });
  return s;
}

void check_row_length(const char* name, WeightType t, int64_t cols) {
  const auto& info = weight_type_info(t);
  if (cols % info.block_elements != 0)
    throw Error(std::string(name) + " rows have " + std::to_string(cols) + " weights; " + std::string(info.name) +
                " stores rows in blocks of " + std::to_string(info.block_elements));
}

void check_stored(const StoredMatrix& m, const char* name, int64_t rows, int64_t cols, bool check_scales) {
  const std::string n = name;
  if (m.rows != rows || m.cols != cols)
    throw Error(n + " is [" + std::to_string(m.rows) + ", " + std::to_string(m.cols) + "]; the block needs [" +
                std::to_string(rows) + ", " + std::to_string(cols) + "]");
  check_row_length(name, m.type, cols);
  const int64_t row_bytes = m.row_bytes();
  if (static_cast<int64_t>(m.bytes.size()) != rows * row_bytes)
    throw Error(n + " holds " + std::to_string(m.bytes.size()) + " bytes; " + std::string(weight_type_name(m.type)) +
                " needs " + std::to_string(rows) + " rows of " + std::to_string(row_bytes));
  if (check_scales) check_block_scales(m.type, m.bytes.data(), rows, cols, n);
}

void check_bias(const Matrix& b, const char* name, bool wanted, int64_t n) {
  if (wanted ? (b.rows() != 1 || b.cols() != n) : !b.empty())
    throw Error(std::string(name) + " has " + std::to_string(b.size()) + " values; the block needs " +
                std::to_string(wanted ? n : 0));
}

}  // namespace

std::string sparse_decode_rule(const SparseDecode& sparse) {
  std::string rule =
      sparse.threshold > 0 ? "|act(gate)| ≤ " + std::to_string(sparse.threshold) + " dropped" : "exact zeros skipped";
  if (sparse.down_threshold > 0) rule += ", from down also |h| ≤ " + std::to_string(sparse.down_threshold);
  return rule;
}

WeightType sparse_rows_type(WeightType stored) {
  return stored == WeightType::f32 || stored == WeightType::f16 || stored == WeightType::bf16 ? stored
                                                                                              : WeightType::q8_0;
}

namespace {

void check_sparse(const SparseDecode& s, const BlockConfig& c, WeightType up, WeightType down) {
  if (!s.enabled) return;
  // A block type's rows are held as q8_0 along D: D must be whole q8_0 blocks (up's rows of a
  // block type already are; down's transpose has rows of D whatever down's type).
  const int64_t q8_block = weight_type_info(WeightType::q8_0).block_elements;
  for (auto [name, t] : {std::pair{"up", c.variant.gated ? up : WeightType::f32}, std::pair{"down", down}})
    if (weight_type_info(t).block_elements > 1 && c.d_model % q8_block != 0)
      throw Error(std::string("sparse decode holds ") + name + " (" + std::string(weight_type_name(t)) +
                  ") as q8_0 rows of d_model = " + std::to_string(c.d_model) +
                  " values, which must be whole blocks of 32 (run the block dense)");
  if (!std::isfinite(s.threshold) || s.threshold < 0)
    throw Error("sparse decode threshold " + std::to_string(s.threshold) + ": must be finite and ≥ 0");
  if (!std::isfinite(s.down_threshold) || s.down_threshold < 0)
    throw Error("sparse decode down_threshold " + std::to_string(s.down_threshold) + ": must be finite and ≥ 0");
  if (s.down_threshold > 0 && !c.variant.gated)
    throw Error("sparse decode down_threshold: a 2-matrix block's h is its activation, which threshold judges already");
  if (s.max_tokens < 1) throw Error("sparse decode max_tokens " + std::to_string(s.max_tokens) + ": must be ≥ 1");
  if (!(s.max_kept_share >= 0.0 && s.max_kept_share <= 1.0))
    throw Error("sparse decode max_kept_share " + std::to_string(s.max_kept_share) + ": must be in [0, 1]");
  if (!(s.down_kept_share > 0.0 && s.down_kept_share <= 1.0))
    throw Error("sparse decode down_kept_share " + std::to_string(s.down_kept_share) + ": must be in (0, 1]");
  if (c.hidden > std::numeric_limits<int32_t>::max())
    throw Error("sparse decode lists hidden channels as int32; hidden = " + std::to_string(c.hidden));
}

// One q8_0 block (ggml's block_q8_0: d, then 32 codes) into block b of a row of n values in
// the sparse kernels' layout (kernels/q8_0_split_rows.hpp: the row's scales, then its codes).
void put_split_q8_0_block(const std::byte* block, int64_t b, std::byte* row, int64_t n) {
  namespace split = kernels::q8_0_split;
  std::memcpy(row + 2 * b, block, 2);
  std::memcpy(row + split::scale_bytes(n) + split::kBlock * b, block + 2, split::kBlock);
}

// Up's rows ([H][D]) into Panels::channel_rows' up rows, in sparse_rows_type: as stored, or
// a block type's values (exactly widened) requantised to q8_0 along the same row; q8_0 rows
// reordered into the kernels' split layout (the same bytes). Rows split across the pool.
void copy_up_rows(const RowSource& src, int64_t H, InferenceBlock::Panels::ChannelRows& out, ThreadPool& pool) {
  const int64_t stride = out.stride(), in_bytes = src.row_bytes(), D = src.cols;
  std::byte* const first = out.up();
  pool.run([&](int ith, int nth) {
    std::vector<std::byte> buf, converted(static_cast<size_t>(out.up_bytes));
    std::vector<float> values(static_cast<size_t>(D));
    const auto [r0, r1] = split_range(H, ith, nth, 64);
    if (r1 <= r0) return;
    const std::byte* in = src.rows(r0, r1 - r0, buf);
    for (int64_t r = r0; r < r1; ++r) {
      const std::byte* row = in + (r - r0) * in_bytes;
      std::byte* to = first + r * stride;
      if (out.up_type != src.type) {
        weight_type_traits(src.type).to_f32(row, values.data(), D);
        weight_type_traits(out.up_type).from_f32(values.data(), converted.data(), D);
        row = converted.data();
      }
      if (out.up_type != WeightType::q8_0) {
        std::memcpy(to, row, static_cast<size_t>(out.up_bytes));
        continue;
      }
      constexpr int64_t kBlockBytes = 2 + kernels::q8_0_split::kBlock;
      for (int64_t b = 0; b < D / kernels::q8_0_split::kBlock; ++b)
        put_split_q8_0_block(row + b * kBlockBytes, b, to, D);
    }
  });
}

// Down ([D][H]) transposed into Panels::channel_rows' down rows ([H][D], a row per hidden
// channel) in sparse_rows_type: f32 / f16 / bf16 a bit copy of every value; a block type's
// values (exactly widened; q8_0's too, whose blocks ran along H) requantised to q8_0 along D,
// 32 output columns a block, in the kernels' split layout (kernels/q8_0_split_rows.hpp).
// 64 rows of down at a time across the pool (each writes its own 64 columns of every output
// row: whole q8_0 blocks).
void transpose_down(const RowSource& src, int64_t D, InferenceBlock::Panels::ChannelRows& out, ThreadPool& pool) {
  const int64_t H = src.cols, stride = out.stride();
  const WeightType type = out.down_type;
  const WeightTypeInfo& info = weight_type_info(type);
  // An element type's bytes a value (bit copies), or 0: a block type's blocks run along H.
  const int64_t elem = type == src.type && info.block_elements == 1 ? info.row_bytes(1) : 0;
  const int64_t q8_block = weight_type_info(WeightType::q8_0).block_elements;
  std::byte* const first = out.up() + out.up_bytes;  // channel 0's down row
  const int64_t blocks = (D + kW - 1) / kW;
  pool.run([&](int ith, int nth) {
    std::vector<std::byte> buf;
    std::vector<float> values, column(static_cast<size_t>(q8_block));
    std::vector<std::byte> block(static_cast<size_t>(weight_type_info(WeightType::q8_0).row_bytes(q8_block)));
    const auto [b0, b1] = split_range(blocks, ith, nth);
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t r0 = b * kW, n = std::min(kW, D - r0), ld = src.row_bytes();
      const std::byte* in = src.rows(r0, n, buf);
      if (elem > 0) {
        for (int64_t r = 0; r < n; ++r) {
          std::byte* col = first + info.row_bytes(r0 + r);  // column r0 + r of channel 0's row
          for (int64_t j = 0; j < H; ++j)
            std::memcpy(col + j * stride, in + r * ld + j * elem, static_cast<size_t>(elem));
        }
        continue;
      }
      values.resize(static_cast<size_t>(n * H));
      for (int64_t r = 0; r < n; ++r) weight_type_traits(src.type).to_f32(in + r * ld, values.data() + r * H, H);
      for (int64_t d0 = 0; d0 < n; d0 += q8_block) {
        for (int64_t j = 0; j < H; ++j) {
          for (int64_t i = 0; i < q8_block; ++i) column[size_t(i)] = values[size_t((d0 + i) * H + j)];
          weight_type_traits(type).from_f32(column.data(), block.data(), q8_block);
          put_split_q8_0_block(block.data(), (r0 + d0) / q8_block, first + j * stride, D);
        }
      }
    }
  });
}

// Panels::channel_rows of a block: a 2-matrix block (gate null) holds down rows only.
InferenceBlock::Panels::ChannelRows channel_rows_of(const RowSource* gate, const RowSource& up, const RowSource& down,
                                                    int64_t D, ThreadPool& pool) {
  const int64_t H = down.cols;
  InferenceBlock::Panels::ChannelRows rows;
  rows.up_type = sparse_rows_type(up.type);
  rows.down_type = sparse_rows_type(down.type);
  rows.up_bytes = gate ? weight_type_info(rows.up_type).row_bytes(D) : 0;
  rows.down_bytes = weight_type_info(rows.down_type).row_bytes(D);
  rows.allocate(H);
  if (gate) copy_up_rows(up, H, rows, pool);
  transpose_down(down, D, rows, pool);
  return rows;
}

std::unique_ptr<InferenceBlock::Panels> build(const BlockConfig& c, const RowSource* gate, const RowSource& up,
                                              const RowSource& down, ThreadPool& pool, const SparseDecode& sparse) {
  const int64_t D = c.d_model, H = c.hidden;
  check_sparse(sparse, c, up.type, down.type);
  auto p = std::make_unique<InferenceBlock::Panels>();
  p->config = c;
  p->sparse = sparse;
  p->types = {gate ? gate->type : up.type, up.type, down.type};
  p->fused = gate && gate->type == up.type && !p->gate_first();
  p->units_per_panel = p->fused ? kW / 2 : kW;
  if (p->fused) {
    p->first = pack(up.type, D, H, kW / 2, {{gate, 0}, {&up, kW / 2}}, pool);
  } else {
    p->first = pack(up.type, D, H, kW, {{&up, 0}}, pool);
    if (gate) p->gate = pack(gate->type, D, H, kW, {{gate, 0}}, pool);
  }
  p->down = pack(down.type, H, D, kW, {{&down, 0}}, pool);
  if (sparse.enabled) {
    p->channel_rows = channel_rows_of(gate, up, down, D, pool);
    // A kept channel's bytes: its up row and its down row, or with a down threshold the share
    // of down rows expected to be read beside the gate's (SparseDecode::down_kept_share).
    const double stored = double((gate ? up.row_bytes() * H : 0) + down.row_bytes() * D);
    const double down_share = gate && sparse.down_threshold > 0 ? sparse.down_kept_share : 1.0;
    const double a_channel = double(p->channel_rows.up_bytes) + down_share * double(p->channel_rows.down_bytes);
    p->sparse_kept_limit = int64_t(std::floor(sparse.max_kept_share * stored / a_channel));
  }
  return p;
}

}  // namespace

InferenceBlock::InferenceBlock(const Block& block, WeightType type, ThreadPool* pool, const SparseDecode& sparse)
    : InferenceBlock(block, MatrixTypes::all(type), pool, sparse) {}

InferenceBlock::InferenceBlock(const Block& block, const MatrixTypes& types, ThreadPool* pool,
                               const SparseDecode& sparse) {
  const BlockConfig& c = block.config();
  const auto& w = block.weights();
  const bool gated = c.variant.gated;
  if (gated) check_row_length("gate", types.gate, c.d_model);
  check_row_length("up", types.up, c.d_model);
  check_row_length("down", types.down, c.hidden);
  const RowSource gate{"gate", types.gate, c.d_model, nullptr, &w.gate};
  const RowSource up{"up", types.up, c.d_model, nullptr, &w.up};
  const RowSource down{"down", types.down, c.hidden, nullptr, &w.down};
  auto p = build(c, gated ? &gate : nullptr, up, down, pool ? *pool : default_thread_pool(), sparse);
  p->gate_bias = w.gate_bias.clone();
  p->up_bias = w.up_bias.clone();
  p->down_bias = w.down_bias.clone();
  panels_ = std::move(p);
}

InferenceBlock::InferenceBlock(const BlockConfig& c, const StoredWeights& w, ThreadPool* pool,
                               const SparseDecode& sparse)
    : InferenceBlock(c, w, pool, sparse, true) {}

InferenceBlock inference_block_of_checked_weights(const BlockConfig& c, const StoredWeights& w, ThreadPool* pool,
                                                  const SparseDecode& sparse) {
  return InferenceBlock(c, w, pool, sparse, false);
}

InferenceBlock::InferenceBlock(const BlockConfig& c, const StoredWeights& w, ThreadPool* pool,
                               const SparseDecode& sparse, bool check_scales) {
  validate(c);
  const int64_t D = c.d_model, H = c.hidden;
  const bool gated = c.variant.gated;
  if (gated)
    check_stored(w.gate, "gate", H, D, check_scales);
  else if (!w.gate.empty())
    throw Error("gate is given but the block is not gated");
  check_stored(w.up, "up", H, D, check_scales);
  check_stored(w.down, "down", D, H, check_scales);
  check_bias(w.gate_bias, "gate bias", c.bias && gated, H);
  check_bias(w.up_bias, "up bias", c.bias, H);
  check_bias(w.down_bias, "down bias", c.bias, D);
  const RowSource gate{"gate", w.gate.type, D, &w.gate};
  const RowSource up{"up", w.up.type, D, &w.up};
  const RowSource down{"down", w.down.type, H, &w.down};
  auto p = build(c, gated ? &gate : nullptr, up, down, pool ? *pool : default_thread_pool(), sparse);
  p->gate_bias = w.gate_bias.clone();
  p->up_bias = w.up_bias.clone();
  p->down_bias = w.down_bias.clone();
  panels_ = std::move(p);
}

InferenceBlock::~InferenceBlock() = default;
InferenceBlock::InferenceBlock(InferenceBlock&&) noexcept = default;
InferenceBlock& InferenceBlock::operator=(InferenceBlock&&) noexcept = default;

const BlockConfig& InferenceBlock::config() const { return panels_->config; }
const MatrixTypes& InferenceBlock::types() const { return panels_->types; }
const SparseDecode& InferenceBlock::sparse() const { return panels_->sparse; }
int64_t InferenceBlock::sparse_layout_bytes() const { return panels_->channel_rows.size_bytes; }

int64_t InferenceBlock::weight_bytes() const { return *ffn::weight_bytes(panels_->config, panels_->types); }

std::string InferenceBlock::describe() const {
  const auto& k = kernels::active_kernels();
  const Panels& p = *panels_;
  auto stage = [&](const char* what, WeightType t) {
    const kernels::PanelKernel& kern = k.panel(t);
    return std::string(what) + " " + std::string(weight_type_name(t)) + " panels: " + kern.name + ", " +
           std::string(kern.arithmetic) + " on " + std::string(weight_type_name(kern.activations)) + " activations";
  };
  std::string first;
  if (!p.config.variant.gated)
    first = stage("up", p.types.up) + ", activation fused";
  else if (p.fused)
    first = stage("gate+up", p.types.up) + ", gate and up in one panel, activation fused";
  else
    first = stage("gate", p.types.gate) + "; " + stage("up", p.types.up) + ", activation fused";
  std::string text = first + "; " + stage("down", p.types.down);
  if (p.config.gate_sparsity > 0)
    text += "; Gaussian top-k on the gate (s = " + std::to_string(p.config.gate_sparsity) + "), gate first";
  if (p.sparse.enabled)
    text += "; sparse decode at T ≤ " + std::to_string(p.sparse.max_tokens) + " (" + sparse_decode_rule(p.sparse) +
            "): " + (p.channel_rows.up_type == WeightType::q8_0 ? k.rows_dot_q8_0.name : k.rows_dot.name) + ", " +
            k.rows_axpy.name + " on up's rows and down transposed";
  return text;
}

int64_t InferenceBlock::workspace_bytes(int64_t T, int threads) const {
  const Panels& p = *panels_;
  const int64_t D = p.config.d_model, H = p.config.hidden;
  const auto& k = kernels::active_kernels();
  auto format_bytes = [&](WeightType t, int64_t K) { return activation_bytes(k.panel(t).activations, T, K); };
  // A tile per thread: [min(T, 256)][64], twice as wide where gate and up run side by side.
  const bool split = p.config.variant.gated && !p.fused && !p.gate_first();
  const int64_t tiles = std::min<int64_t>(T, kernels::kPanelTokenBlock) * (split ? 2 * kW : kW) * 4 * threads;
  if (!p.gate_first()) return inference::dense_batch_bytes(p, T) + tiles;  // the fused forward's one buffer
  // Gate-first (gate_first_forward.cpp): the activated gate values [T][H] and x in the gate
  // panels' format; then the dense rest (h [T][H], x and h in up's and down's formats), and
  // where the sparse path may run, its channel list with u and h, and its groups' sums.
  // Slots the two paths share (x_activations) counted at the larger.
  const bool gated = p.config.variant.gated;
  const PanelSet& gate_panels = gated ? p.gate : p.first;
  int64_t bytes = 4 * T * H + format_bytes(gate_panels.type, D) + tiles;
  int64_t x_rest = gated ? format_bytes(p.first.type, D) : 0;
  bytes += 4 * T * H + format_bytes(p.types.down, H);
  if (p.sparse.enabled && T <= p.sparse.max_tokens) {
    bytes += (4 + 8 * T) * H + 64 + p.down_groups() * T * D * 4;
    if (gated && p.channel_rows.up_type == WeightType::q8_0)
      x_rest = std::max(x_rest, activation_bytes(WeightType::q8_0, T, D));
  }
  return bytes + x_rest;
}

}  // namespace ffn
