// The integer form of a quantised weight type's values, as the integer panels hold them
// (qblock_panels.hpp, qsub_panels.hpp) and the kernels dot them: each type's line of
// ffn/weight_type_list.hpp gives the fields that differ from the defaults below.
//
// Every weight of block b (`block` values along K) of row j is, for the value i of sub-block u
// (`sub` consecutive values), an integer expression
//     w_i = d·sc_u·(q_i − offset) − dmin·m_u
// with q_i unsigned (0 … 2^bits − 1), sc_u a signed integer scale (1 where the type has none),
// m_u an unsigned integer min (zero for the types without mins) and d, dmin binary16. The
// codebook types (IQ4_NL, IQ4_XS, MXFP4) store a nibble n_i and have q_i = codebook[n_i], a
// signed int8 (|q| ≤ 127), offset 0 and no mins; MXFP4's d is 2^(e − 128) from an e8m0 byte
// (codebooks.hpp) instead of binary16, exact in f32.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/codebooks.hpp"

namespace ffn::kernels {

// The 16 signed values a codebook type's nibbles index (none: the nibble is the code).
enum class Codebook { none, iq4, mxfp4 };

struct QFormat {
  int sub = 32;                        // values a sub-block: 16 or 32 (qblock: 32, its block)
  int offset = 0;                      // subtracted from q (Q8_0 128, Q4_0 8, Q6_K 32, …)
  bool nibbles = false;                // q's low 4 bits, two values a byte (else q a byte a value)
  bool crumbs = false;                 // (nibble types) q of 2 bits, four values a byte (qsub_panels.hpp)
  bool unit_scales = false;            // every sub-block's sc is 1 (the ternary types), as with one sub-block
  bool has_min = false;                // dmin and m present
  int high_bits = 0;                   // bits of q above the nibble, in the h section (nibble types only)
  Codebook codebook = Codebook::none;  // the nibbles are looked up (vpshufb) rather than used
  bool e8m0 = false;                   // d is an e8m0 exponent byte (MXFP4), not binary16
  int block = 0;                       // values a block: the list's block column (set from it)

  constexpr int subs() const { return block / sub; }
  // Whether the panel holds the sub-blocks' scales: not where each is 1 (a format of one
  // sub-block a block, or unit_scales), which the kernels then leave out of the sums.
  constexpr bool stores_scales() const { return !unit_scales && subs() > 1; }
  // Whether the panel holds the sub-blocks' mins: not where the one sub-block's min is 1
  // (Q4_1, Q5_1, whose dmin carries the min), so that M = B_0, the block's sum of x.
  constexpr bool stores_mins() const { return has_min && subs() > 1; }
  constexpr bool has_codebook() const { return codebook != Codebook::none; }
  // The codebook's 16 signed values (codebook types only).
  constexpr const int8_t* codebook_values() const { return codebook == Codebook::iq4 ? kIq4Values : kMxfp4Values; }
  // The largest |q| a panel value takes (the unsigned code, or the codebook entry): bounds the
  // AVX2 kernels' int16 pair sums.
  constexpr int max_abs_q() const {
    int m = (crumbs ? 4 : nibbles ? 16 << high_bits : 256) - 1;
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

// How far ahead the integer panel kernels' first strip of tokens prefetches the panel:
// about this many bytes, in whole blocks — into L2 on x86 (prefetch_share_to_l2) but, on
// AMD's cores, for the qblock kernels' rows that read the most bytes per instruction and the
// qsub kernels' one token (into L1: prefetch_share<true>), into L1 in the NEON kernels, not
// measured on Arm hardware (docs/performance.md, the integer kernels).
inline constexpr int64_t kQPanelPrefetchBytes = 8192;

// Share `part` of `parts` of the `bytes` bytes at p (cache lines from p, each once over the
// shares) prefetched into L2 — prefetcht1 on x86 — or, IntoL1, into L1 (prefetcht0): a
// kernel issues one share per step of its loop over a block, so that no burst of a block's
// lines overruns the core's outstanding-miss buffers. Into L2 the lines wait there until
// the loads take them; into L1 suits a loop whose loads would otherwise wait on L2 for most
// of their lines.
template <bool IntoL1>
inline void prefetch_share(const std::byte* p, int64_t bytes, int64_t part, int64_t parts) {
  for (int64_t line = part * bytes / parts / 64 * 64; line < (part + 1) * bytes / parts; line += 64)
    __builtin_prefetch(p + line, 0, IntoL1 ? 3 : 2);
}
inline void prefetch_share_to_l2(const std::byte* p, int64_t bytes, int64_t part, int64_t parts) {
  prefetch_share<false>(p, bytes, part, parts);
}

// The n cache lines of a region of `bytes` bytes (from a line's start) dealt out in order to
// `shares` shares, share i taking lines [⌊i·n/shares⌋, ⌊(i + 1)·n/shares⌋), one
// share after another from share `first`, each found by a step without a division. For the
// loops that prefetch a share every step with a share count known only at run time (the
// tiles of a super-block dividing its lines among them; the tokens of a block): prefetch_share
// there made two 64-bit divisions a step, a tenth of the AVX2 Q6_K tile's time at 8 tokens
// (docs/performance.md, "Prefetch shares without a division").
class LineShares {
 public:
  LineShares(int64_t bytes, int64_t shares, int64_t first = 0)
      : shares_(shares),
        per_share_(lines(bytes) / shares),
        extra_(lines(bytes) % shares),
        line_(first * lines(bytes) / shares),
        carry_(first * lines(bytes) % shares) {}

  // The next share's lines of the region at p prefetched into L2 (IntoL1: into L1).
  template <bool IntoL1 = false>
  void prefetch_next(const std::byte* p) {
    int64_t end = line_ + per_share_;
    carry_ += extra_;
    if (carry_ >= shares_) {
      carry_ -= shares_;
      ++end;
    }
    for (; line_ < end; ++line_) __builtin_prefetch(p + 64 * line_, 0, IntoL1 ? 3 : 2);
  }

 private:
  static constexpr int64_t lines(int64_t bytes) { return (bytes + 63) / 64; }
  int64_t shares_, per_share_, extra_;
  int64_t line_, carry_;  // the next share's first line; (its index · n) mod shares
};

// Rows of q8 activations (activation_rows.hpp) as the integer kernels index them: the codes
// [T][K], the block scales [T][K/block] and the sums of 16 [T][K/16] from token 0 of a tile.
struct Q8Rows {
  const int8_t* codes;
  const float* scales;
  const int16_t* sums;
};

}  // namespace ffn::kernels
