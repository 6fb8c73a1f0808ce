// Forward of a packed block (Block::packed, packed_weights.hpp): the two stages of the f32
// forward, each a sweep over panels of weights laid out at load — f32; bf16 / f16 widened
// exactly in registers by the panel kernel's loads, or on AVX512_BF16 bf16 dotted with the
// activations rounded to bf16; q8_0 / q4_0 dotted in integers with the activations
// quantised to q8_0 (in both cases x for the first stage, h for the down projection).
//   stage 1 (first-stage panels split across threads): one panel product gives a [T][64]
//     tile — for gated blocks the gate and up values of the same 32 hidden units, so
//     h = act(g + b_g) ⊙ (u + b_u) is applied to the tile while it is hot and no [T][H]
//     gate tensor exists; for 2-matrix blocks h = act(u + b_u) over 64 units.
//   stage 2 (output panels split across threads): y = h·W_downᵀ (+ b), 64 outputs a panel.
// One kernel for every T: the weights stream once per 256 tokens whatever the batch (decode
// reads them at the memory roof; prefill reuses each panel block from cache), and every
// element is one fixed chain (kernels.hpp), so y is bit-identical for any thread count
// and any batch a token is in. Threads take a stage's panels in guided chunks
// (parallel/guided_chunks.hpp) rather than a fixed half each: on a shared machine one core
// often runs slower than the other, and the stage ends when its last panel does.
#include <algorithm>

#include "block/bf16_activations.hpp"
#include "block/bias_rows.hpp"
#include "block/packed_weights.hpp"
#include "block/q8_buffer.hpp"
#include "ffn/block.hpp"
#include "kernels/kernels.hpp"
#include "parallel/guided_chunks.hpp"
#include "parallel/scratch.hpp"

namespace ffn {
namespace {

// A chunk holds at least this many bytes of panels, so that a thread's stream of small
// panels (q4_0: 147 KB at K = 4096) is not cut into pieces the hardware prefetcher must
// start again: measured at T = 1 on the 7B shape, alternating in one process, q4_0 ran
// 1.02–1.05× and q8_0 1.05–1.08× faster than with chunks of one panel.
constexpr int64_t kMinChunkBytes = int64_t(1) << 20;

// Runs body(t0, n, p0, p1) on the pool's threads for every chunk of a stage: panels
// [p0, p1) of `panels` (panel_bytes each) against the token block [t0, t0 + n) of T
// tokens, every (token block, panel) pair once, claimed in guided chunks within a token
// block.
template <class Body>
void sweep_panels(ThreadPool& p, int64_t T, int64_t panels, int64_t panel_bytes, Body body) {
  constexpr int64_t kTokenBlock = kernels::kPanelTokenBlock;
  const int64_t token_blocks = (T + kTokenBlock - 1) / kTokenBlock;
  const int64_t min_chunk = std::max<int64_t>(1, kMinChunkBytes / std::max<int64_t>(panel_bytes, 1));
  run_in_guided_chunks(p, token_blocks * panels, panels, min_chunk, [&](int64_t i0, int64_t i1) {
    const int64_t t0 = i0 / panels * kTokenBlock, p0 = i0 % panels;
    body(t0, std::min(kTokenBlock, T - t0), p0, p0 + (i1 - i0));
  });
}

}  // namespace

void Block::forward_packed(ConstMatrixView x, MatrixView y, ThreadPool& p) const {
  constexpr int64_t kW = kernels::kPanelWidth;
  const int64_t D = config_.d_model, H = config_.hidden, T = x.rows;
  const PackedWeights& w = *packed_;
  const auto& k = kernels::active_kernels();
  const bool integer = w.type == WeightType::q8_0 || w.type == WeightType::q4_0;
  // Integer panels take the activations quantised to q8_0: x once, h by the thread that
  // computed it (its panels are whole blocks of 32 hidden units).
  Q8Buffer xq = integer ? Q8Buffer(T, D) : Q8Buffer();
  Q8Buffer hq = integer ? Q8Buffer(T, H) : Q8Buffer();
  // bf16 panels where the CPU dots bf16 pairs: x and h rounded to bf16 (bf16_activations.hpp).
  const bool bf16_dot = w.type == WeightType::bf16 && k.bf16_dot_panel_gemm;
  uint16_t* const xb = bf16_dot ? bf16_activation_rows(Scratch::x_bf16, T, D) : nullptr;
  uint16_t* const hb = bf16_dot ? bf16_activation_rows(Scratch::hidden_bf16, T, H) : nullptr;
  // One stage's activations in the forms the panel kernels take.
  struct Operand {
    ConstMatrixView f32;
    const Q8Buffer& q8;
    const uint16_t* bf16;  // [T][bf16_panel_rows(K)]
  };
  // C [n][64] = A[t0 … t0 + n)·panel (K = D with x, K = H with h), with the panel kernel of
  // the type. Every kernel gives a token the same bits in any batch, so the token blocks
  // below change no result.
  auto panel_product = [&](const std::byte* panel, int64_t K, const Operand& a, int64_t t0, int64_t n, float* C) {
    switch (w.type) {
      case WeightType::f32:
        return k.f32_panel_gemm(n, K, a.f32.row(t0), a.f32.stride, reinterpret_cast<const float*>(panel), C, kW);
      case WeightType::bf16:
        if (bf16_dot) {
          const int64_t ld = kernels::bf16_panel_rows(K);
          return k.bf16_dot_panel_gemm(n, K, a.bf16 + t0 * ld, ld, reinterpret_cast<const uint16_t*>(panel), C, kW);
        }
        [[fallthrough]];
      case WeightType::f16:
        return k.half_panel_gemm(w.type == WeightType::bf16, n, K, a.f32.row(t0), a.f32.stride,
                                 reinterpret_cast<const uint16_t*>(panel), C, kW);
      case WeightType::q8_0:
      case WeightType::q4_0: {
        const kernels::Q8Rows q = a.q8.rows();
        return k.q_panel_gemm(w.type, n, K, {q.qs + t0 * K, q.d + t0 * K / kQuantBlock, q.corr + t0 * K / 4}, panel, C,
                              kW);
      }
    }
  };
  // Tokens in blocks of the kernels' own token block, outermost in both stages: the threads
  // sweep the panels over one block of activations (x: 4 MB, h: 11 MB at 256 tokens of the
  // 7B shape) while it is still in cache — chunks never span two token blocks, and are
  // claimed in order — rather than streaming all T rows of them from memory again for
  // every panel.
  constexpr int64_t kTokenBlock = kernels::kPanelTokenBlock;
  const Activation act = config_.variant.activation;
  const bool gated = config_.variant.gated;
  if (integer)
    p.run([&](int ith, int nth) {
      const auto [c0, c1] = split_range(D, ith, nth, kQuantBlock);
      if (c1 > c0)
        kernels::quantize_q8_rows(w.type, T, D, c0, c1, x.data, x.stride, xq.qs.data(), xq.d.data(), xq.corr.data());
    });
  if (bf16_dot) round_rows_to_bf16(k, x, xb, p);
  const MatrixView h = scratch_matrix(Scratch::hidden, T, H);
  const Operand x_operand{x, xq, xb}, h_operand{h, hq, hb};

  // Stage 1. A chunk's h columns of its token block are complete when its panels are, so
  // the chunk also quantises them (integer panels) or rounds them to bf16 (vdpbf16ps): its
  // units are whole q8_0 blocks and whole bf16 pairs (panels of 32 or 64 units).
  sweep_panels(p, T, w.first_panels, w.first_panel_bytes, [&](int64_t t0, int64_t n, int64_t p0, int64_t p1) {
    const MatrixView tile = scratch_matrix(Scratch::tile, std::min(T, kTokenBlock), kW);
    for (int64_t panel = p0; panel < p1; ++panel) {
      panel_product(w.first_panel(panel), D, x_operand, t0, n, tile.data);
      const int64_t u0 = panel * w.units_per_panel, nu = std::min(w.units_per_panel, H - u0);
      // Gated: columns 0–31 are the gate's, 32–63 the up projection's. The biases are
      // added in the tile, and the activation writes h from it in one call for the tile.
      float* const up = gated ? tile.data + kW / 2 : tile.data;
      if (config_.bias) {
        add_bias_rows(up, kW, n, w.up_bias.data() + u0, nu);
        if (gated) add_bias_rows(tile.data, kW, n, w.gate_bias.data() + u0, nu);
      }
      if (gated)
        kernels::f32_gated_activation_rows(act, n, nu, tile.data, kW, up, kW, h.row(t0) + u0, h.stride);
      else
        kernels::f32_activation_rows(act, n, nu, up, kW, h.row(t0) + u0, h.stride);
    }
    const int64_t u0 = p0 * w.units_per_panel, u1 = std::min(H, p1 * w.units_per_panel);
    if (integer) {
      kernels::quantize_q8_rows(w.type, n, H, u0, u1, h.row(t0), H, hq.qs.data() + t0 * H,
                                hq.d.data() + t0 * H / kQuantBlock, hq.corr.data() + t0 * H / 4);
    }
    // The chunk that ends at H writes the padding of an odd H.
    if (bf16_dot) {
      const int64_t ld = kernels::bf16_panel_rows(H);
      k.f32_to_bf16_rows(n, u1 - u0, h.row(t0) + u0, H, hb + t0 * ld + u0, ld);
    }
  });

  // Stage 2: y = h·W_downᵀ (+ b), 64 outputs a panel.
  sweep_panels(p, T, w.down_panels, w.down_panel_bytes, [&](int64_t t0, int64_t n, int64_t p0, int64_t p1) {
    const MatrixView tile = scratch_matrix(Scratch::tile, std::min(T, kTokenBlock), kW);
    for (int64_t panel = p0; panel < p1; ++panel) {
      panel_product(w.down_panel(panel), H, h_operand, t0, n, tile.data);
      const int64_t d0 = panel * kW, nd = std::min(kW, D - d0);
      for (int64_t t = 0; t < n; ++t) {
        const float* c = tile.row(t);
        float* yt = y.row(t0 + t) + d0;
        for (int64_t i = 0; i < nd; ++i) yt[i] = config_.bias ? c[i] + w.down_bias.data()[d0 + i] : c[i];
      }
    }
  });
}

}  // namespace ffn
