// Packing an f32 block's weights into the forward kernels' panels (packed_weights.hpp), once.
#include "block/packed_weights.hpp"

#include <algorithm>
#include <string>

#include "block/panels.hpp"
#include "ffn/error.hpp"

namespace ffn {

using panels::kW;

namespace {

// Rows of one weight matrix as Elem values: f32 rows, or bf16 / f16 rows as stored.
template <class Elem>
struct Rows {
  const Elem* data = nullptr;
  int64_t ld = 0;  // elements between consecutive rows
  const Elem* row(int64_t r) const { return data + r * ld; }
};

Rows<float> rows_of(const Matrix& m) { return {m.data(), m.cols()}; }
Rows<uint16_t> rows_of(const TypedMatrix& m) {
  return {reinterpret_cast<const uint16_t*>(m.bytes.data()), m.row_bytes / 2};
}

template <class Elem>
Elem* as(AlignedFloats& a) {
  return reinterpret_cast<Elem*>(a.data());
}

template <class Elem>
PackedWeights pack(const BlockConfig& config, WeightType type, Rows<Elem> gate, Rows<Elem> up, Rows<Elem> down,
                   ThreadPool& pool) {
  const int64_t D = config.d_model, H = config.hidden;
  const bool gated = config.variant.gated;
  PackedWeights out;
  out.type = type;
  out.units_per_panel = gated ? kW / 2 : kW;
  out.first_panels = (H + out.units_per_panel - 1) / out.units_per_panel;
  out.down_panels = (D + kW - 1) / kW;
  // Elements per float of storage: 1, or 2 for 16-bit panels (rounded up).
  const int64_t per_float = int64_t(sizeof(float) / sizeof(Elem));
  out.first = AlignedFloats((out.first_panels * D * kW + per_float - 1) / per_float);
  out.down = AlignedFloats((out.down_panels * H * kW + per_float - 1) / per_float);
  Elem* first = as<Elem>(out.first);
  Elem* down_panels = as<Elem>(out.down);
  pool.run([&](int ith, int nth) {
    const auto [p0, p1] = split_range(out.first_panels, ith, nth);
    for (int64_t p = p0; p < p1; ++p) {
      Elem* panel = first + p * D * kW;
      const int64_t u0 = p * out.units_per_panel, nu = std::min(out.units_per_panel, H - u0);
      if (gated) {
        panels::transpose_rows_into(gate.row(u0), gate.ld, nu, D, panel, 0);
        panels::transpose_rows_into(up.row(u0), up.ld, nu, D, panel, kW / 2);
      } else {
        panels::transpose_rows_into(up.row(u0), up.ld, nu, D, panel, 0);
      }
    }
    const auto [q0, q1] = split_range(out.down_panels, ith, nth);
    for (int64_t p = q0; p < q1; ++p)
      panels::transpose_rows_into(down.row(p * kW), down.ld, std::min(kW, D - p * kW), H, down_panels + p * H * kW, 0);
  });
  return out;
}

}  // namespace

PackedWeights pack_weights(const BlockConfig& config, const BlockWeights& w, ThreadPool& pool) {
  PackedWeights out = pack(config, WeightType::f32, rows_of(w.gate), rows_of(w.up), rows_of(w.down), pool);
  out.gate_bias = w.gate_bias.clone();
  out.up_bias = w.up_bias.clone();
  out.down_bias = w.down_bias.clone();
  return out;
}

PackedWeights pack_weights(const BlockConfig& config, const TypedWeights& w, ThreadPool& pool) {
  const WeightType t = w.up.type;
  if (t != WeightType::bf16 && t != WeightType::f16)
    throw Error("packed: " + std::string(weight_type_info(t).name) +
                " blocks are read as stored (integer kernels); f32, bf16 and f16 blocks are packed");
  PackedWeights out = pack(config, t, rows_of(w.gate), rows_of(w.up), rows_of(w.down), pool);
  out.gate_bias = w.gate_bias.clone();
  out.up_bias = w.up_bias.clone();
  out.down_bias = w.down_bias.clone();
  return out;
}

Block Block::packed(ThreadPool* pool) const {
  if (packed_) throw Error("packed: the block is already packed");
  ThreadPool& p = pool ? *pool : default_thread_pool();
  Block b(config_, Unallocated{});
  b.weight_type_ = weight_type_;
  b.packed_ = std::make_shared<const PackedWeights>(weight_type_ == WeightType::f32 ? pack_weights(config_, weights_, p)
                                                                                     : pack_weights(config_, typed_, p));
  return b;
}

}  // namespace ffn
