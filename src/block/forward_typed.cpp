// Forward of a block whose matrices are stored as bf16, f16, q8_0 or q4_0, reading them as
// stored. The two stages of the f32 forward (forward.cpp):
//   stage 1 (hidden units split across threads, 64 at a time): u = x·W_upᵀ (+b) into h;
//     for gated blocks g = x·W_gateᵀ (+b) into a [T][64] tile and h = act(g) ⊙ u at once;
//   stage 2 (outputs split across threads): y = h·W_downᵀ (+b).
// Each product x·Wᵀ goes one of two ways, chosen by T alone (never by the thread count):
//   few tokens (T < stored_packed_min_tokens): the weights stream from memory once, so
//     reading fewer bytes is the whole gain — bf16 / f16 rows widened in registers
//     (half_gemm_nt); q8_0 / q4_0 rows dotted in integers (q_gemm_nt) with the activations
//     quantised to q8_0 blocks: x once per forward for gate and up, h for down (each
//     thread quantises the hidden columns it computed: thread ranges are whole blocks);
//   many tokens: the FMAs are the cost, so 64 weight rows at a time are widened exactly to
//     f32 and laid out as one panel in per-thread scratch (O(64·K) against the product's
//     O(T·64·K)) for the panel kernel of packed f32 blocks; no activation is quantised.
//     bf16 where the CPU dots bf16 pairs (AVX512_BF16) does as a packed bf16 block does:
//     its rows laid, as stored, into a bf16 pair panel, x and h rounded to bf16 (x once,
//     h by the thread that computed it), and vdpbf16ps — twice the multiply-adds per
//     instruction, with the activations' rounding in its accuracy contract (README).
// Every output element is computed by one thread with a fixed sequence of operations, so
// y is bit-identical for any thread count.
#include <algorithm>
#include <string>
#include <vector>

#include "block/bf16_activations.hpp"
#include "block/bias_rows.hpp"
#include "block/panels.hpp"
#include "block/q8_buffer.hpp"
#include "parallel/scratch.hpp"
#include "ffn/block.hpp"
#include "ffn/error.hpp"
#include "ffn/quant.hpp"
#include "kernels/kernels.hpp"

namespace ffn {
namespace {

constexpr int64_t kHiddenChunk = 64;  // hidden units per scratch tile (two q8_0 blocks)
constexpr int64_t kDownChunk = 64;    // W_down rows widened at a time on the many-token path (a panel)
using panels::kW;

bool is_integer(WeightType t) { return t == WeightType::q8_0 || t == WeightType::q4_0; }

}  // namespace

// Crossovers measured with the whole block (SwiGLU 4096→11008, 2 threads, AVX-512 VNNI,
// ms; each path forced at every T, alternating in one process), with the rows laid into
// panels by rows_to_panel32 (8 × 8 transposes in registers):
//   q8_0 integer vs widened panels: T = 256: 202 vs 200; 384: 309 vs 291; 512: 446 vs 404.
//     q4_0: 256: 209 vs 214; 384: 345 vs 304; 512: 445 vs 426  → widen from 384.
//   f16 widened in registers vs widened panels: T = 32: 35.2 vs 38.9; 48: 49.9 vs 47.9;
//     64: 64.8 vs 57.9; 96: 95.4 vs 79.4. bf16 without AVX512_BF16 (FFN_ISA=avx512): 32:
//     36.5 vs 38.9; 48: 53.2 vs 50.7; 64: 73.1 vs 62.5  → panels from 64.
//   bf16 on AVX512_BF16, per token vs bf16 pair panels: T = 4: 9.4 vs 12.9; 8: 13.6 vs 13.9;
//     12: 17.6 vs 15.7; 16: 21.3 vs 17.5; 64: 65.2 vs 32.9  → panels from 12.
// (Before rows_to_panel32, a scalar transposition: 16-bit panels from 96, integer from 512.)
int64_t stored_packed_min_tokens(WeightType t) {
  switch (t) {
    case WeightType::bf16:
      return kernels::active_kernels().bf16_dot_panel_gemm ? 12 : 64;
    case WeightType::f16:
      return 64;
    case WeightType::q8_0:
    case WeightType::q4_0:
      return 384;
    case WeightType::f32:
      break;
  }
  return kernels::kPackedMinTokens;
}

void Block::forward_stored(ConstMatrixView x, MatrixView y, ThreadPool& p) const {
  const int64_t D = config_.d_model, H = config_.hidden, T = x.rows;
  const WeightType type = weight_type_;
  const auto& k = kernels::active_kernels();
  const auto& w = typed_;
  const Activation act = config_.variant.activation;
  const bool gated = config_.variant.gated;
  const bool wide = T >= stored_packed_min_tokens(type);
  const bool integer = is_integer(type) && !wide;
  const bool bf16_dot = wide && type == WeightType::bf16 && k.bf16_dot_panel_gemm;

  // The activations of a product in the forms the paths take: f32 rows (lda apart), q8_0
  // blocks (integer path), bf16 rows of bf16_panel_rows(K) values (bf16_dot).
  struct Operand {
    const float* f32;
    int64_t lda;
    const Q8Buffer& q8;
    const uint16_t* bf16;
  };
  // One panel of `rows` ≤ 64 weight rows (wide paths): multiply(c, ldc) straight into C
  // when the panel is full; otherwise into the [T][64] `tile`, whose columns past `rows`
  // (from the panel's stale values) are dropped and the others copied to C.
  auto into_c = [&](int64_t rows, float* tile, float* C, int64_t ldc, auto&& multiply) {
    if (rows == kW) return multiply(C, ldc);
    multiply(tile, kW);
    for (int64_t t = 0; t < T; ++t) std::copy(tile + t * kW, tile + t * kW + rows, C + t * ldc);
  };
  // C[T][rows] = A·W[r0 : r0+rows]ᵀ, K = W's row length; rows ≤ 64 on the wide paths.
  auto product = [&](const TypedMatrix& m, int64_t r0, int64_t rows, const Operand& a, float* C, int64_t ldc) {
    const int64_t K = m.cols;
    if (bf16_dot) {
      // Scratch: the pair panel (bf16_panel_rows(K) · 64 values), then the tile.
      const int64_t Kp = kernels::bf16_panel_rows(K);
      auto* panel = reinterpret_cast<uint16_t*>(scratch_matrix(Scratch::tile2, 1, Kp * kW / 2 + T * kW).data);
      float* tile = reinterpret_cast<float*>(panel + Kp * kW);
      // (An odd K's padding weights, which meet the activations' zero padding, are written
      // zero: stale NaNs or infinities there would reach the outputs.)
      panels::bf16_rows_into_pairs(k.rows_to_panel32, m.row(r0), m.row_bytes, rows, K, panel, 0);
      into_c(rows, tile, C, ldc, [&](float* c, int64_t ld) { k.bf16_dot_panel_gemm(T, K, a.bf16, Kp, panel, c, ld); });
    } else if (wide) {
      // Scratch: the rows widened, their panel, then the tile.
      float* widened = scratch_matrix(Scratch::tile2, 1, rows * K + K * kW + T * kW).data;
      float* panel = widened + rows * K;
      float* tile = panel + K * kW;
      k.widen_rows(type, rows, K, m.row(r0), m.row_bytes, widened);
      k.rows_to_panel32(rows, K, reinterpret_cast<const std::byte*>(widened), K * 4, reinterpret_cast<uint32_t*>(panel),
                        0);
      into_c(rows, tile, C, ldc, [&](float* c, int64_t ld) { k.f32_panel_gemm(T, K, a.f32, a.lda, panel, c, ld); });
    } else if (integer) {
      k.q_gemm_nt(type, T, rows, K, a.q8.rows(), m.row(r0), m.row_bytes / weight_type_info(type).block_bytes, C, ldc);
    } else {
      k.half_gemm_nt(type == WeightType::bf16, T, rows, K, a.f32, a.lda, reinterpret_cast<const uint16_t*>(m.row(r0)),
                     m.row_bytes / 2, C, ldc);
    }
  };

  Q8Buffer xq = integer ? Q8Buffer(T, D) : Q8Buffer();
  Q8Buffer hq = integer ? Q8Buffer(T, H) : Q8Buffer();
  if (integer)
    p.run([&](int ith, int nth) {
      const auto [c0, c1] = split_range(D, ith, nth, kQuantBlock);
      if (c1 > c0)
        kernels::quantize_q8_rows(type, T, D, c0, c1, x.data, x.stride, xq.qs.data(), xq.d.data(), xq.corr.data());
    });

  // bf16_dot: x and h rounded to bf16 (bf16_activations.hpp).
  uint16_t* const xb = bf16_dot ? bf16_activation_rows(Scratch::x_bf16, T, D) : nullptr;
  uint16_t* const hb = bf16_dot ? bf16_activation_rows(Scratch::hidden_bf16, T, H) : nullptr;
  if (bf16_dot) round_rows_to_bf16(k, x, xb, p);

  const MatrixView h = scratch_matrix(Scratch::hidden, T, H);
  const Operand x_operand{x.data, x.stride, xq, xb}, h_operand{h.data, H, hq, hb};
  p.run([&](int ith, int nth) {
    // Ranges of whole 64-unit chunks: whole q8_0 blocks (and bf16 pairs) of h for this
    // thread to quantise (round).
    const auto [h0, h1] = split_range(H, ith, nth, kHiddenChunk);
    if (h1 <= h0) return;
    const MatrixView gate_tile = scratch_matrix(Scratch::tile, gated ? T : 0, kHiddenChunk);
    for (int64_t c0 = h0; c0 < h1; c0 += kHiddenChunk) {
      const int64_t nb = std::min(kHiddenChunk, h1 - c0);
      float* h_tile = h.data + c0;
      product(w.up, c0, nb, x_operand, h_tile, H);
      if (config_.bias) add_bias_rows(h_tile, H, T, w.up_bias.data() + c0, nb);
      if (gated) {
        product(w.gate, c0, nb, x_operand, gate_tile.data, kHiddenChunk);
        if (config_.bias) add_bias_rows(gate_tile.data, kHiddenChunk, T, w.gate_bias.data() + c0, nb);
        kernels::f32_gated_activation_rows(act, T, nb, gate_tile.data, kHiddenChunk, h_tile, H, h_tile, H);
      } else {
        kernels::f32_activation_rows(act, T, nb, h_tile, H, h_tile, H);
      }
    }
    if (integer) kernels::quantize_q8_rows(type, T, H, h0, h1, h.data, H, hq.qs.data(), hq.d.data(), hq.corr.data());
    // The thread whose range ends at H writes the padding of an odd H.
    if (bf16_dot) {
      const int64_t ld = kernels::bf16_panel_rows(H);
      k.f32_to_bf16_rows(T, h1 - h0, h.data + h0, H, hb + h0, ld);
    }
  });

  p.run([&](int ith, int nth) {
    const auto [d0, d1] = split_range(D, ith, nth, kDownChunk);
    const int64_t step = wide ? kDownChunk : d1 - d0;
    for (int64_t r0 = d0; r0 < d1; r0 += step) {
      const int64_t rows = std::min(step, d1 - r0);
      product(w.down, r0, rows, h_operand, y.data + r0, y.stride);
      if (config_.bias) add_bias_rows(y.data + r0, y.stride, T, w.down_bias.data() + r0, rows);
    }
  });
}

}  // namespace ffn
