// Forward of a packed block (Block::packed, packed_weights.hpp): the two stages of the f32
// forward, each a sweep over panels of weights laid out at load (f32, or bf16 / f16 widened
// exactly in registers by the panel kernel's loads).
//   stage 1 (first-stage panels split across threads): one panel product gives a [T][64]
//     tile — for gated blocks the gate and up values of the same 32 hidden units, so
//     h = act(g + b_g) ⊙ (u + b_u) is applied to the tile while it is hot and no [T][H]
//     gate tensor exists; for 2-matrix blocks h = act(u + b_u) over 64 units.
//   stage 2 (output panels split across threads): y = h·W_downᵀ (+ b), 64 outputs a panel.
// One kernel for every T: the weights stream once per 256 tokens whatever the batch (decode
// reads them at the memory roof; prefill reuses each panel block from cache), and every
// element is one fixed chain (kernels.hpp), so y is bit-identical for any thread count
// and any batch a token is in.
#include <algorithm>

#include "block/packed_weights.hpp"
#include "ffn/block.hpp"
#include "kernels/kernels.hpp"

namespace ffn {

void Block::forward_packed(ConstMatrixView x, MatrixView y, ThreadPool& p) const {
  constexpr int64_t kW = kernels::kPanelWidth;
  const int64_t D = config_.d_model, H = config_.hidden, T = x.rows;
  const PackedWeights& w = *packed_;
  const auto& k = kernels::active_kernels();
  // C [T][64] = A·panel, with the panel kernel of the panels' element type.
  auto panel_product = [&](const std::byte* panel, int64_t K, const float* A, int64_t lda, float* C) {
    if (w.type == WeightType::f32)
      k.f32_panel_gemm(T, K, A, lda, reinterpret_cast<const float*>(panel), C, kW);
    else
      k.half_panel_gemm(w.type == WeightType::bf16, T, K, A, lda, reinterpret_cast<const uint16_t*>(panel), C, kW);
  };
  const Activation act = config_.variant.activation;
  const bool gated = config_.variant.gated;
  Matrix h(T, H);

  p.run([&](int ith, int nth) {
    const auto [p0, p1] = split_range(w.first_panels, ith, nth);
    if (p1 <= p0) return;
    Matrix tile(T, kW);
    for (int64_t panel = p0; panel < p1; ++panel) {
      panel_product(w.first_panel(panel, D), D, x.data, x.stride, tile.data());
      const int64_t u0 = panel * w.units_per_panel, nu = std::min(w.units_per_panel, H - u0);
      for (int64_t t = 0; t < T; ++t) {
        float* c = tile.row(t);
        float* ht = h.row(t) + u0;
        // Gated: columns 0–31 are the gate's, 32–63 the up projection's.
        const float* up = gated ? c + kW / 2 : c;
        for (int64_t i = 0; i < nu; ++i) ht[i] = config_.bias ? up[i] + w.up_bias.data()[u0 + i] : up[i];
        if (gated) {
          if (config_.bias)
            for (int64_t i = 0; i < nu; ++i) c[i] += w.gate_bias.data()[u0 + i];
          kernels::f32_gated_activation(act, c, ht, nu);
        } else {
          kernels::f32_activation(act, ht, nu);
        }
      }
    }
  });

  p.run([&](int ith, int nth) {
    const auto [p0, p1] = split_range(w.down_panels, ith, nth);
    if (p1 <= p0) return;
    Matrix tile(T, kW);
    for (int64_t panel = p0; panel < p1; ++panel) {
      panel_product(w.down_panel(panel, H), H, h.data(), H, tile.data());
      const int64_t d0 = panel * kW, nd = std::min(kW, D - d0);
      for (int64_t t = 0; t < T; ++t) {
        const float* c = tile.row(t);
        float* yt = y.row(t) + d0;
        for (int64_t i = 0; i < nd; ++i) yt[i] = config_.bias ? c[i] + w.down_bias.data()[d0 + i] : c[i];
      }
    }
  });
}

}  // namespace ffn
