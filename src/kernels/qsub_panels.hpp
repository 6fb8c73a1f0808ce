// The qsub panels (ffn/weight_type_list.hpp): the types whose blocks are sub-blocks with
// integer scales and mins — ggml's K-quants Q2_K … Q6_K, and in the same form its older Q4_1,
// Q5_0, Q5_1, its codebook types IQ4_NL, IQ4_XS and MXFP4, and the ternary TQ1_0 and TQ2_0 —
// packed at load for the integer panel kernels, and the activations they are dotted with.
//
// The values are the integer form of q_format.hpp. Against activations quantised to int8
// blocks of the same length (x_i in −127 … 127, one scale d_x a block: q8_K's f32 for blocks of
// 256, q8_0's binary16 for blocks of 32; B_u = Σ_{i∈u} x_i):
//     Σ_i w_i·d_x·x_i = d_x·(d·I − dmin·M),
//     I = Σ_u sc_u·(Σ_{i∈u} q_i·x_i − offset·B_u),   M = Σ_u m_u·B_u,
// I and M exact int32 (|I| < 2^28). The kernels compute exactly that, per element one f32
// chain over the blocks in order: acc ← fma(float(I), d·d_x, acc), then, with mins,
// acc ← fma(float(M), −(dmin·d_x), acc) — the same bits on every ISA.
//
// Panel layout, per block of the 64 rows (qsub_layout(format).bytes bytes, every section a
// multiple of 64 bytes):
//   d      [64]    binary16 bits, row order                               128 bytes
//                  (MXFP4: the e8m0 byte e of each row                     64 bytes)
//   dmin   [64]    binary16 bits (types with mins only)                   128 bytes
//   sc     [U][64] int8, sub-block u of row r at u·64 + r                 U·64 bytes
//                  (none where every scale is 1, QFormat::stores_scales: the formats
//                  of one sub-block a block and the ternary types)
//   m      [U][64] uint8 (types with mins only)                           U·64 bytes
//                  (none where the one sub-block's min is 1, QFormat::stores_mins:
//                  Q4_1 and Q5_1)
//   q      sub-block after sub-block, each in groups of 4 consecutive values of the 64
//          rows, 256 bytes a group (byte 4r + l: value 4g + l of row r) —
//            nibbles (4-bit codes): sub / 8 group pairs, each byte two values, the low
//              nibble value 4g + l and the high nibble value 4(g + sub/8) + l of the
//              sub-block (for sub = 32 as q4_0's panels);
//            codes of 4 + high_bits bits (Q5_0, Q5_1, Q5_K: 5; Q6_K: 6): the same group
//              pairs, each byte the whole code of value 4g + l in its low 4 + high_bits
//              bits and the low 4 − high_bits bits of its partner 4(g + sub/8) + l above
//              them (qsub_value);
//            crumbs (2-bit codes: Q2_K, TQ1_0, TQ2_0): sub / 16 planes of 256 bytes, plane p
//              the group pairs 2p and 2p + 1, pair g's first value at bits 2(g % 2) of the
//              byte and its partner at bits 4 + 2(g % 2) (pair_shift) — so that a byte moved
//              right by pair_shift reads as the pair's nibbles would, each code under a
//              2-bit mask (pair_code_mask);
//            bytes: sub / 4 groups, one unsigned byte a value;
//          (codebook types: the nibbles n, to be mapped through the codebook);
//   h      (the codes of 4 + high_bits bits) per sub-block 256 bytes, byte 4r + l holding
//          the partners' remaining 2·high_bits bits for every pair g of row r, pair g at
//          bits 2·high_bits·g … (sub/8 · 2·high_bits = 8 bits).
// So one vector of a group holds 16 (zmm) or 8 (ymm) rows × 4 values, the operand of one
// unsigned × signed dot product against 4 activation bytes broadcast, and the panel holds
// the stored bits and no more where the codes fill their nibbles (Q6_K: exactly its 6.5625
// bits a weight); the 2-bit codes take a crumb each, four a byte (Q2_K's panel 3.125 bits a
// weight against the 5.125 a nibble each took: decode reads the bytes, docs/performance.md,
// "Q2_K and the ternary types a crumb a code"); the 3-bit codes (Q3_K) a nibble each.
// Why a pair's first code is whole: a vector kernel then makes it by one AND, and the
// partner by a shift and a mask of the byte and one of h — where the high bits of both
// codes, each in h, had cost a shift, a mask and an OR apiece; a few tokens of Q6_K are
// bound by the core's vector instructions (docs/performance.md, "Q6_K and the 5-bit types:
// a pair's first code whole").
#pragma once

#include <cstdint>

#include "kernels/q_format.hpp"

namespace ffn::kernels {

inline constexpr int64_t kSuperBlockValues = 256;

// Byte offsets of the sections of one block of a panel (layout above).
struct QSubLayout {
  int64_t dmin, sc, m, q, h, bytes;
  // The first byte of sub-block u's high bits (formats with high_bits).
  int64_t h_of(int u) const { return h + int64_t(u) * 256; }
  // The first byte of sub-block u's values.
  int64_t q_of(const QFormat& f, int u) const {
    return q + int64_t(u) * (f.crumbs ? f.sub / 16 : f.nibbles ? f.sub / 8 : f.sub / 4) * 256;
  }
};
constexpr QSubLayout qsub_layout(const QFormat& f) {
  const int64_t U = f.subs();
  const int64_t dmin = f.e8m0 ? 64 : 128, sc = f.has_min ? dmin + 128 : dmin;
  const int64_t m = sc + (f.stores_scales() ? U * 64 : 0), q = f.stores_mins() ? m + U * 64 : m;
  const int64_t q_bytes = int64_t(f.block) * 64 / (f.crumbs ? 4 : f.nibbles ? 2 : 1);
  const int64_t h = q + q_bytes, h_bytes = f.high_bits ? U * 256 : 0;
  return {dmin, sc, m, q, h, h + h_bytes};
}

// Where a nibble type's pair g of a sub-block lies (layout above): the byte offset of its
// 256-byte plane from the sub-block's values (q_of), how far right its bytes move to bring
// its first code to bit 0 and its partner's to bit 4, and the mask of one code there (of
// the codes without high bits; with them, code_mask below).
constexpr int pair_offset(const QFormat& f, int g) { return 256 * (f.crumbs ? g / 2 : g); }
constexpr int pair_shift(const QFormat& f, int g) { return f.crumbs ? 2 * (g % 2) : 0; }
constexpr int pair_code_mask(const QFormat& f) { return f.crumbs ? 0x03 : 0x0F; }

// Where the codes of 4 + high_bits bits lie in a pair's byte and h (layout above): the
// pair's first code in the byte's low code_bits(f) bits, its partner's low
// partner_low_bits(f) bits above them and its other 2·high_bits bits in h at bits
// partner_h_shift(f, pair).
constexpr int code_bits(const QFormat& f) { return 4 + f.high_bits; }
constexpr int partner_low_bits(const QFormat& f) { return 4 - f.high_bits; }
constexpr int partner_h_shift(const QFormat& f, int pair) { return 2 * f.high_bits * pair; }
// The masks and the move the unpacking takes, byte by byte: the first code's bits; the
// partner's bits that come from h, in their place in its code; and how far h moves left
// (right where negative) to put pair `pair`'s bits there.
constexpr int code_mask(const QFormat& f) { return (1 << code_bits(f)) - 1; }
constexpr int partner_h_mask(const QFormat& f) { return ((1 << (2 * f.high_bits)) - 1) << partner_low_bits(f); }
constexpr int partner_h_move(const QFormat& f, int pair) { return partner_low_bits(f) - partner_h_shift(f, pair); }

// The value q of group g of a sub-block (g < sub/4) from its pair's byte (its plane's, at
// pair_offset) and its h byte (both at the same place 4r + l): the portable form of what the vector kernels do a vector
// at a time.
constexpr int qsub_value(const QFormat& f, int g, uint8_t pair_byte, uint8_t high) {
  const int pairs = f.sub / 8;
  if (f.high_bits == 0) {
    const int byte = pair_byte >> pair_shift(f, g % pairs);
    const int nibble = (g < pairs ? byte : byte >> 4) & pair_code_mask(f);
    return f.has_codebook() ? f.codebook_values()[nibble] : nibble;
  }
  if (g < pairs) return pair_byte & code_mask(f);
  const int move = partner_h_move(f, g - pairs);
  return pair_byte >> code_bits(f) | ((move >= 0 ? high << move : high >> -move) & partner_h_mask(f));
}

// B_u, the activations' sum over sub-block u of a block, from the block's sums of 16 (bs).
inline int32_t qsub_sum(const int16_t* bs, int sub, int u) { return sub == 16 ? bs[u] : bs[2 * u] + bs[2 * u + 1]; }
// Σ_u B_u, the activations' sum over the whole block: the factor of a term whose every
// sub-block's coefficient is 1 (an offset where every scale is 1, a min of 1).
inline int32_t qsub_block_sum(const int16_t* bs, const QFormat& f) {
  int32_t B = 0;
  for (int u = 0; u < f.subs(); ++u) B += qsub_sum(bs, f.sub, u);
  return B;
}

}  // namespace ffn::kernels
