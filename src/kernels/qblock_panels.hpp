// The qblock panels (ffn/weight_type_list.hpp: ggml's Q8_0 and Q4_0, 32-value blocks with one
// binary16 scale), packed at load for the integer panel kernels. A panel holds 64 weight rows,
// block after block of 32 weights along K. Block b of a panel is qblock_bytes(format) bytes:
//   128 bytes  the 64 rows' scales, binary16 bits, row order;
//   then groups of 4 consecutive weights: byte 4r + i of group g is weight 4g + i of the
//   block in row r, as an unsigned byte, the code q (w = d·(q − offset), q_format.hpp) —
//     bytes (Q8_0, offset 128): 8 groups × 256 bytes, the weight + 128;
//     nibbles (Q4_0, offset 8): 4 groups × 256 bytes, the low nibble weight 4g + i + 8 and
//           the high nibble weight 4(g + 4) + i + 8 (ggml's nibbles, regrouped).
// So a vector of the group holds 16 rows × 4 weights, the operand of one vpdpbusd against
// 4 activation bytes broadcast. The codes are unsigned, so each block's exact integer sum
// starts from −offset·Σx, Σx the activations' block sum (the two sums of 16 of q8_0 rows).
//
// qblock_panel_gemm_<isa>: C[t][j] = Σ_b d_w[j][b]·d_x[t][b] · S_b[t][j],  S_b the exact
//   integer Σ_{i<32} w[j][32b+i]·x[t][32b+i], for j < 64 rows of one panel, K/32 blocks,
//   activations in q8_0 (activation_rows.hpp). Arithmetic, the same on every ISA (so results
//   agree bit for bit): per element one chain acc ← fma(float(S_b), d_w·d_x, acc) over b in
//   order from 0 (d_w·d_x is exact: two binary16 values). C: [T][64], row stride ldc. K a
//   multiple of 32; T ≥ 0.
#pragma once

#include <cstdint>

#include "kernels/q_format.hpp"

namespace ffn::kernels {

inline constexpr int64_t kQBlockScaleBytes = 128;

constexpr int64_t qblock_bytes(const QFormat& f) { return kQBlockScaleBytes + (f.nibbles ? 4 : 8) * 256; }

// The activations' Σx of block b of a q8_0 row (its two sums of 16).
inline int32_t q8_block_sum(const int16_t* sums, int64_t b) { return int32_t(sums[2 * b]) + int32_t(sums[2 * b + 1]); }

}  // namespace ffn::kernels
