// Super-block weights (ggml's K-quants: Q2_K … Q6_K, and in the same form its older Q4_1,
// Q5_0, Q5_1 and its codebook types IQ4_NL, IQ4_XS, MXFP4) packed at load for the integer
// kernels (kq_panel_gemm, kernels.hpp), and the activations they are dotted with.
//
// Every such weight of block b (`block` values along K: 256 for the K-quants, 32 for the
// others) of row j is, for the value i of sub-block u (`sub` consecutive values), an
// integer expression
//     w_i = d·sc_u·(q_i − offset) − dmin·m_u
// with q_i unsigned (0 … 2^bits − 1), sc_u a signed integer scale, m_u an unsigned integer
// min (zero for the types without mins) and d, dmin binary16. The codebook types (IQ4_NL,
// IQ4_XS, MXFP4) store a nibble n_i and have q_i = codebook[n_i], a signed int8 (|q| ≤ 127),
// offset 0 and no mins; MXFP4's d is 2^(e − 128) from an e8m0 byte (codebooks.hpp) instead of
// binary16 (exact in f32, so the chain below is unchanged). Against activations
// quantised to int8 blocks of the same length (x_i in −127 … 127, one scale d_x a block —
// q8_K's f32 for the K-quants, q8_0's binary16 for the 32-blocks — B_u = Σ_{i∈u} x_i):
//     Σ_i w_i·d_x·x_i = d_x·(d·I − dmin·M),
//     I = Σ_u sc_u·(Σ_{i∈u} q_i·x_i − offset·B_u),   M = Σ_u m_u·B_u,
// I and M exact int32 (|I| < 2^28). The kernels compute exactly that, per element one f32
// chain over the super-blocks in order: acc ← fma(float(I), d·d_x, acc), then, with mins,
// acc ← fma(float(M), −(dmin·d_x), acc) — the same bits on every ISA.
//
// Panel layout, per super-block of the 64 rows (kq_panel_block_bytes(type) bytes, every
// section a multiple of 64 bytes):
//   d      [64]    binary16 bits, row order                               128 bytes
//                  (MXFP4: the e8m0 byte e of each row                     64 bytes)
//   dmin   [64]    binary16 bits (types with mins only)                   128 bytes
//   sc     [U][64] int8, sub-block u of row r at u·64 + r                 U·64 bytes
//                  (1 for the formats of one sub-block a block: the vector kernels may
//                  skip it)
//   m      [U][64] uint8 (types with mins only)                           U·64 bytes
//   q      sub-block after sub-block, each in groups of 4 consecutive values of the 64
//          rows, 256 bytes a group (byte 4r + l: value 4g + l of row r) —
//            nibbles (the low 4 bits of q): sub / 8 group pairs, each byte two values, the
//              low nibble value 4g + l and the high nibble value 4(g + sub/8) + l of the
//              sub-block (for sub = 32 as q4_0's panels);
//            bytes: sub / 4 groups, one unsigned byte a value;
//          (codebook types: the nibbles n, to be mapped through the codebook);
//   h      (nibble types with more than 4 bits: Q5_K 1, Q6_K 2) per sub-block 256 bytes,
//          byte 4r + l holding the high bits of value 4g + l of row r for every group g of
//          the sub-block, group g at bits high_bits·g … (sub/4 · high_bits = 8 bits).
// So one vector of a group holds 16 (zmm) or 8 (ymm) rows × 4 values, the operand of one
// unsigned × signed dot product against 4 activation bytes broadcast, and the panel holds
// the stored bits and no more (Q6_K: exactly its 6.5625 bits a weight).
#pragma once

#include <cstdint>

#include "ffn/weight_type.hpp"
#include "kernels/codebooks.hpp"

namespace ffn::kernels {

inline constexpr int64_t kSuperBlockValues = 256;

struct KQFormat {
  int sub;                             // values per sub-block: 16 or 32
  int offset;                          // subtracted from q (Q6_K 32, Q3_K 4)
  bool nibbles;                        // q's low 4 bits two values a byte (else q a byte a value)
  bool has_min;                        // dmin and m present
  int high_bits;                       // bits of q above the nibble, in the h section (nibble types only)
  int block = int(kSuperBlockValues);  // values a block of the type: 256 (super-block), or 32
  // The signed values of the 16 nibbles (nibble types without high bits); null: q is the code.
  // The panel keeps the 4-bit codes and the kernels look them up in registers (vpshufb):
  // storing the looked-up bytes instead would double the panel's bytes, and decode (T = 1)
  // is bound by them, while the lookup costs AVX-512 VNNI nothing measurable and AVX2 at most
  // its vpshufb (docs/performance.md, "The codebook types").
  // (An enumerator, not a pointer: GCC's sanitizer builds refuse a pointer's comparison with
  // null in a constant expression.)
  enum class Codebook { none, iq4, mxfp4 };
  Codebook codebook = Codebook::none;
  bool e8m0 = false;  // d is an e8m0 exponent byte (MXFP4), not binary16
  constexpr int subs() const { return block / sub; }
  constexpr bool has_codebook() const { return codebook != Codebook::none; }
  // The codebook's 16 signed values (codebook types only).
  constexpr const int8_t* codebook_values() const {
    return codebook == Codebook::iq4 ? kIq4Values : kMxfp4Values;
  }
  // The largest |q| a panel value takes (the unsigned code, or the codebook entry): bounds
  // the AVX2 kernel's int16 pair sums.
  constexpr int max_abs_q() const {
    int m = (nibbles ? 16 << high_bits : 256) - 1;
    if (has_codebook()) {
      m = 0;
      for (int i = 0; i < 16; ++i) {
        const int v = codebook_values()[i];
        m = v > m ? v : (-v > m ? -v : m);
      }
    }
    return m;
  }
};

// The format of a K-quant type's panels. Only the super-block types have one.
constexpr KQFormat kq_format(WeightType t) {
  switch (t) {
    // Q2_K's 2-bit and Q3_K's 3-bit values fit a nibble: 4 bits a weight in the panel
    // (2.625 and 3.4375 stored) rather than a byte.
    case WeightType::q2_K:
      return {16, 0, true, true, 0};
    case WeightType::q3_K:
      return {16, 4, true, false, 0};
    case WeightType::q4_K:
      return {32, 0, true, true, 0};
    case WeightType::q5_K:
      return {32, 0, true, true, 1};
    case WeightType::q6_K:
      return {16, 32, true, false, 2};
    // ggml's older 32-blocks in the same form: one sub-block of scale 1 a block; Q4_1 and
    // Q5_1's additive min m is dmin = −m with m_u = 1 (the panel stores −m's bits).
    case WeightType::q5_0:
      return {32, 16, true, false, 1, 32};
    case WeightType::q4_1:
      return {32, 0, true, true, 0, 32};
    case WeightType::q5_1:
      return {32, 0, true, true, 1, 32};
    // The codebook types: IQ4_NL as Q4_0 with its values looked up, IQ4_XS's 8 sub-blocks
    // with their scale ls − 32, MXFP4 as IQ4_NL with its own values and an e8m0 scale.
    case WeightType::iq4_nl:
      return {32, 0, true, false, 0, 32, KQFormat::Codebook::iq4};
    case WeightType::iq4_xs:
      return {32, 0, true, false, 0, 256, KQFormat::Codebook::iq4};
    case WeightType::mxfp4:
      return {32, 0, true, false, 0, 32, KQFormat::Codebook::mxfp4, true};
    default:
      return {0, 0, false, false, 0};
  }
}
constexpr bool is_kq_type(WeightType t) { return kq_format(t).sub != 0; }

// Calls f.template operator()<T>() with T the K-panel type t, for the vector kernels'
// compile-time formats: their one switch from the runtime type. Other types do nothing.
template <class F>
void with_kq_type(WeightType t, F&& f) {
  switch (t) {
    case WeightType::q2_K:
      return f.template operator()<WeightType::q2_K>();
    case WeightType::q3_K:
      return f.template operator()<WeightType::q3_K>();
    case WeightType::q4_K:
      return f.template operator()<WeightType::q4_K>();
    case WeightType::q5_K:
      return f.template operator()<WeightType::q5_K>();
    case WeightType::q6_K:
      return f.template operator()<WeightType::q6_K>();
    case WeightType::q5_0:
      return f.template operator()<WeightType::q5_0>();
    case WeightType::q4_1:
      return f.template operator()<WeightType::q4_1>();
    case WeightType::q5_1:
      return f.template operator()<WeightType::q5_1>();
    case WeightType::iq4_nl:
      return f.template operator()<WeightType::iq4_nl>();
    case WeightType::iq4_xs:
      return f.template operator()<WeightType::iq4_xs>();
    case WeightType::mxfp4:
      return f.template operator()<WeightType::mxfp4>();
    default:
      return;
  }
}

// Byte offsets of the sections of one super-block of a panel (layout above).
struct KQLayout {
  int64_t dmin, sc, m, q, h, bytes;
  // The first byte of sub-block u's high bits (formats with high_bits).
  int64_t h_of(int u) const { return h + int64_t(u) * 256; }
  // The first byte of sub-block u's values.
  int64_t q_of(const KQFormat& f, int u) const { return q + int64_t(u) * (f.nibbles ? f.sub / 8 : f.sub / 4) * 256; }
};
constexpr KQLayout kq_layout(const KQFormat& f) {
  const int64_t U = f.subs();
  const int64_t dmin = f.e8m0 ? 64 : 128, sc = f.has_min ? dmin + 128 : dmin;
  const int64_t m = sc + U * 64, q = f.has_min ? m + U * 64 : m;
  const int64_t q_bytes = int64_t(f.block) * 64 / (f.nibbles ? 2 : 1);
  const int64_t h = q + q_bytes, h_bytes = f.high_bits ? U * 256 : 0;
  return {dmin, sc, m, q, h, h + h_bytes};
}

// The value q of group g of a sub-block (g < sub/4) from its nibble-pair byte and its
// high-bits byte (both at the same place 4r + l): the portable form of what the vector
// kernels do a vector at a time.
constexpr int kq_value(const KQFormat& f, int g, uint8_t nibble_pair, uint8_t high) {
  const int low = g < f.sub / 8 ? nibble_pair & 0x0F : nibble_pair >> 4;
  if (f.has_codebook()) return f.codebook_values()[low];
  return low | ((high >> (f.high_bits * g)) & ((1 << f.high_bits) - 1)) << 4;
}
constexpr int64_t kq_panel_block_bytes(WeightType t) { return kq_layout(kq_format(t)).bytes; }

// Activations quantised for these kernels, rows of K values (K a multiple of the weights'
// block), stored apart so that the kernels load whole vectors:
//   qs    [T][K]         int8, the blocks' values, in order;
//   d     [T][K/block]   each block's scale, as f32;
//   bsums [T][K/16]      int16, the sum of each 16 consecutive qs.
// Block b of row t is, field for field, what ggml's quantize_row_q8_K makes of
// x[t][256b … 256b+255] (blocks of 256), or quantize_row_q8_0 of x[t][32b … 32b+31]
// (blocks of 32: ggml dots Q4_1 / Q5_0 / Q5_1 / IQ4_NL / MXFP4 with q8_1 / q8_0, whose codes
// and scale these are).
struct Q8KRows {
  const int8_t* qs;
  const float* d;
  const int16_t* bsums;
};

}  // namespace ffn::kernels
