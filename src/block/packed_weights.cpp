// Packing an f32 block's weights into the forward kernels' panels (packed_weights.hpp), once.
#include "block/packed_weights.hpp"

#include <algorithm>
#include <string>

#include "ffn/error.hpp"

namespace ffn {
namespace {

constexpr int64_t kW = kernels::kPanelWidth;

// Columns [j0, j0 + rows) of one panel [K][64] from `rows` consecutive weight rows
// (src row r at src + r·K); other columns are left as they are (zero).
void fill_columns(float* panel, int64_t K, int64_t j0, const float* src, int64_t rows) {
  // 64 values of k at a time: the source rows are read front to back while the scattered
  // writes stay within a few KiB of the panel.
  constexpr int64_t kStep = 64;
  for (int64_t k0 = 0; k0 < K; k0 += kStep) {
    const int64_t kn = std::min(kStep, K - k0);
    for (int64_t r = 0; r < rows; ++r) {
      const float* s = src + r * K + k0;
      float* d = panel + k0 * kW + j0 + r;
      for (int64_t k = 0; k < kn; ++k) d[k * kW] = s[k];
    }
  }
}

}  // namespace

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
        fill_columns(panel, D, 0, w.gate.row(u0), nu);
        fill_columns(panel, D, kW / 2, w.up.row(u0), nu);
      } else {
        fill_columns(panel, D, 0, w.up.row(u0), nu);
      }
    }
    const auto [q0, q1] = split_range(out.down_panels, ith, nth);
    for (int64_t p = q0; p < q1; ++p)
      fill_columns(out.down.data() + p * H * kW, H, 0, w.down.row(p * kW), std::min(kW, D - p * kW));
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
