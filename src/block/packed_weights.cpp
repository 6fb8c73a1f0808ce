// Packing a block's weights (f32, bf16, f16, q8_0, q4_0) into the forward kernels' panels
// (packed_weights.hpp), once.
#include "block/packed_weights.hpp"

#include <algorithm>
#include <string>

#include "block/panels.hpp"
#include "ffn/error.hpp"

namespace ffn {

using panels::kW;

namespace {

// Bytes of one panel of 64 rows of K weights of type t: f32 / f16 [K][64] elements, bf16
// pairs of k (K rounded up to even); q8_0 / q4_0 K/32 blocks of kernels::q_panel_block_bytes.
int64_t panel_bytes(WeightType t, int64_t K) {
  switch (t) {
    case WeightType::f32: return K * kW * 4;
    case WeightType::bf16: return kernels::bf16_panel_rows(K) * kW * 2;
    case WeightType::f16: return K * kW * 2;
    case WeightType::q8_0:
    case WeightType::q4_0: break;
  }
  return K / kQuantBlock * kernels::q_panel_block_bytes(t);
}


// The three matrices' panels; `fill(m, r0, rows, K, panel, j0)` lays rows of matrix m
// (0 gate, 1 up, 2 down) into a panel.
template <class Fill>
PackedWeights pack(const BlockConfig& config, WeightType type, Fill fill, ThreadPool& pool) {
  const int64_t D = config.d_model, H = config.hidden;
  const bool gated = config.variant.gated;
  PackedWeights out;
  out.type = type;
  out.units_per_panel = gated ? kW / 2 : kW;
  out.first_panels = (H + out.units_per_panel - 1) / out.units_per_panel;
  out.down_panels = (D + kW - 1) / kW;
  out.first_panel_bytes = panel_bytes(type, D);
  out.down_panel_bytes = panel_bytes(type, H);
  out.first = AlignedFloats((out.first_panels * out.first_panel_bytes + 3) / 4);
  out.down = AlignedFloats((out.down_panels * out.down_panel_bytes + 3) / 4);
  auto* first = reinterpret_cast<std::byte*>(out.first.data());
  auto* down = reinterpret_cast<std::byte*>(out.down.data());
  pool.run([&](int ith, int nth) {
    const auto [p0, p1] = split_range(out.first_panels, ith, nth);
    for (int64_t p = p0; p < p1; ++p) {
      std::byte* panel = first + p * out.first_panel_bytes;
      const int64_t u0 = p * out.units_per_panel, nu = std::min(out.units_per_panel, H - u0);
      if (gated) {
        fill(0, u0, nu, D, panel, 0);
        fill(1, u0, nu, D, panel, kW / 2);
      } else {
        fill(1, u0, nu, D, panel, 0);
      }
    }
    const auto [q0, q1] = split_range(out.down_panels, ith, nth);
    for (int64_t p = q0; p < q1; ++p) fill(2, p * kW, std::min(kW, D - p * kW), H, down + p * out.down_panel_bytes, 0);
  });
  return out;
}

template <class Weights>
void copy_biases(const Weights& w, PackedWeights& out) {
  out.gate_bias = w.gate_bias.clone();
  out.up_bias = w.up_bias.clone();
  out.down_bias = w.down_bias.clone();
}

}  // namespace

PackedWeights pack_weights(const BlockConfig& config, const BlockWeights& w, ThreadPool& pool) {
  const Matrix* m[] = {&w.gate, &w.up, &w.down};
  const kernels::RowsToPanel32 to_panel = kernels::active_kernels().rows_to_panel32;
  PackedWeights out = pack(
      config, WeightType::f32,
      [&](int i, int64_t r0, int64_t rows, int64_t K, std::byte* panel, int64_t j0) {
        to_panel(rows, K, reinterpret_cast<const std::byte*>(m[i]->row(r0)), K * 4, reinterpret_cast<uint32_t*>(panel),
                 j0);
      },
      pool);
  copy_biases(w, out);
  return out;
}

PackedWeights pack_weights(const BlockConfig& config, const TypedWeights& w, ThreadPool& pool) {
  const WeightType t = w.up.type;
  const TypedMatrix* m[] = {&w.gate, &w.up, &w.down};
  const kernels::RowsToPanel32 to_panel = kernels::active_kernels().rows_to_panel32;
  const kernels::RowsToPanel16 to_panel16 = kernels::active_kernels().rows_to_panel16;
  PackedWeights out = pack(
      config, t,
      [&](int i, int64_t r0, int64_t rows, int64_t K, std::byte* panel, int64_t j0) {
        auto* panel16 = reinterpret_cast<uint16_t*>(panel);
        if (t == WeightType::bf16)
          panels::bf16_rows_into_pairs(to_panel, m[i]->row(r0), m[i]->row_bytes, rows, K, panel16, j0);
        else if (t == WeightType::f16)
          to_panel16(rows, K, m[i]->row(r0), m[i]->row_bytes, panel16, j0);
        else
          panels::q_rows_into(t, m[i]->bytes.data(), m[i]->row_bytes, r0, rows, K, panel, j0);
      },
      pool);
  copy_biases(w, out);
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
