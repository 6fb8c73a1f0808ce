// Packing an f32 block's weights into the forward kernels' panels (packed_weights.hpp), once.
#include "block/packed_weights.hpp"

#include <algorithm>
#include <string>

#include "block/panels.hpp"
#include "ffn/error.hpp"

namespace ffn {

using panels::kW;

PackedWeights pack_weights(const BlockConfig& config, const BlockWeights& w, ThreadPool& pool) {
  const int64_t D = config.d_model, H = config.hidden;
  const bool gated = config.variant.gated;
  PackedWeights out;
  out.units_per_panel = gated ? kW / 2 : kW;
  out.first_panels = (H + out.units_per_panel - 1) / out.units_per_panel;
  out.down_panels = (D + kW - 1) / kW;
  out.first = AlignedFloats(out.first_panels * D * kW);
  out.down = AlignedFloats(out.down_panels * H * kW);
  pool.run([&](int ith, int nth) {
    const auto [p0, p1] = split_range(out.first_panels, ith, nth);
    for (int64_t p = p0; p < p1; ++p) {
      float* panel = out.first.data() + p * D * kW;
      const int64_t u0 = p * out.units_per_panel, nu = std::min(out.units_per_panel, H - u0);
      if (gated) {
        panels::transpose_rows_into(w.gate.row(u0), D, nu, D, panel, 0);
        panels::transpose_rows_into(w.up.row(u0), D, nu, D, panel, kW / 2);
      } else {
        panels::transpose_rows_into(w.up.row(u0), D, nu, D, panel, 0);
      }
    }
    const auto [q0, q1] = split_range(out.down_panels, ith, nth);
    for (int64_t p = q0; p < q1; ++p)
      panels::transpose_rows_into(w.down.row(p * kW), H, std::min(kW, D - p * kW), H, out.down.data() + p * H * kW, 0);
  });
  out.gate_bias = w.gate_bias.clone();
  out.up_bias = w.up_bias.clone();
  out.down_bias = w.down_bias.clone();
  return out;
}

Block Block::packed(ThreadPool* pool) const {
  if (packed_) throw Error("packed: the block is already packed");
  if (weight_type_ != WeightType::f32)
    throw Error("packed: the block is stored as " + std::string(weight_type_info(weight_type_).name) +
                "; only f32 blocks are packed");
  ThreadPool& p = pool ? *pool : default_thread_pool();
  Block b(config_, Unallocated{});
  b.packed_ = std::make_shared<const PackedWeights>(pack_weights(config_, weights_, p));
  return b;
}

}  // namespace ffn
