// Laying the qsub types' rows into their panels (kernels/qsub_panels.hpp), and the unpacking
// of ggml's K-quants, older 32-blocks and codebook types (the layouts of core/ggml_blocks.hpp,
// as ggml's dequantize_row_* reads them) into the panels' integers (codecs.hpp, unpack<W>).
#include "core/qsub_pack.hpp"

#include <array>
#include <cassert>
#include <cstring>

#include "core/ggml_blocks.hpp"
#include "kernels/panel_family.hpp"
#include "kernels/qsub_panels.hpp"

namespace ffn {
namespace {

using codec_detail::read_block;

// Q4_K and Q5_K: 8 sub-blocks of 32; sub-blocks 2i and 2i+1 are the low and high nibbles of
// qs[32i … 32i+31]; Q5_K's fifth bits: bit 2i (2i+1) of qh[l] for value l of sub-block 2i
// (2i+1).
template <class Block>
void unpack_k4(const Block& b, SubBlockInts& out, const uint8_t* qh) {
  out.d = b.d;
  out.dmin = b.dmin;
  for (int u = 0; u < 8; ++u) {
    uint8_t scale, min;
    k4_scale_min(u, b.scales, scale, min);
    out.sc[u] = static_cast<int8_t>(scale);
    out.m[u] = min;
  }
  for (int i = 0; i < 4; ++i)
    for (int l = 0; l < 32; ++l) {
      uint8_t lo = b.qs[32 * i + l] & 0x0F, hi = b.qs[32 * i + l] >> 4;
      if (qh) {
        lo |= ((qh[l] >> (2 * i)) & 1) << 4;
        hi |= ((qh[l] >> (2 * i + 1)) & 1) << 4;
      }
      out.q[64 * i + l] = lo;
      out.q[64 * i + 32 + l] = hi;
    }
}

// Q6_K: in each half of 128 values, value l (l < 32) is ql[l]'s low nibble with qh[l]'s bits
// 0–1 above it, value 32 + l ql[32 + l]'s low with bits 2–3, 64 + l ql[l]'s high with bits
// 4–5, 96 + l ql[32 + l]'s high with bits 6–7; q − 32 is the signed value.
void unpack_q6(const BlockQ6_K& b, SubBlockInts& out) {
  out.d = b.d;
  for (int u = 0; u < 16; ++u) out.sc[u] = b.scales[u];
  for (int half = 0; half < 2; ++half) {
    const uint8_t* ql = b.ql + 64 * half;
    const uint8_t* qh = b.qh + 32 * half;
    uint8_t* q = out.q + 128 * half;
    for (int l = 0; l < 32; ++l) {
      q[l] = (ql[l] & 0x0F) | ((qh[l] & 3) << 4);
      q[32 + l] = (ql[32 + l] & 0x0F) | (((qh[l] >> 2) & 3) << 4);
      q[64 + l] = (ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4);
      q[96 + l] = (ql[32 + l] >> 4) | (((qh[l] >> 6) & 3) << 4);
    }
  }
}

// Q3_K and Q2_K: in each half of 128 values, value 32j + l (l < 16) is bits 2j–2j+1 of qs[l]
// of the half's 32 bytes, value 32j + 16 + l those of qs[16 + l]. Q3_K adds the high bit, bit
// 4·half + j of hmask[l] (hmask[16 + l]); its value is q − 4. Q3_K's 16 scales are 6 bits
// (offset 32): the low nibble of byte u (u < 8) or the high nibble of byte u − 8, the high
// two bits bits 2(u/4)… of byte 8 + u%4. Q2_K's scales byte is scale | min << 4.
void unpack_low2(const uint8_t* qs, const uint8_t* hmask, SubBlockInts& out) {
  for (int half = 0; half < 2; ++half)
    for (int j = 0; j < 4; ++j)
      for (int l = 0; l < 32; ++l) {
        uint8_t q = (qs[32 * half + l] >> (2 * j)) & 3;
        if (hmask) q |= ((hmask[l] >> (4 * half + j)) & 1) << 2;
        out.q[128 * half + 32 * j + l] = q;
      }
}

void unpack_q3(const BlockQ3_K& b, SubBlockInts& out) {
  out.d = b.d;
  for (int u = 0; u < 16; ++u) {
    const int low = u < 8 ? b.scales[u] & 0x0F : b.scales[u - 8] >> 4;
    const int high = (b.scales[8 + u % 4] >> (2 * (u / 4))) & 3;
    out.sc[u] = static_cast<int8_t>((low | high << 4) - 32);
  }
  unpack_low2(b.qs, b.hmask, out);
}

void unpack_q2(const BlockQ2_K& b, SubBlockInts& out) {
  out.d = b.d;
  out.dmin = b.dmin;
  for (int u = 0; u < 16; ++u) {
    out.sc[u] = static_cast<int8_t>(b.scales[u] & 0x0F);
    out.m[u] = b.scales[u] >> 4;
  }
  unpack_low2(b.qs, nullptr, out);
}

// Q4_1, Q5_0, Q5_1: one sub-block of scale 1; value j's nibble as Q4_0's (j < 16 the low
// nibble of qs[j], else the high nibble of qs[j − 16]), its fifth bit bit j of qh (a
// little-endian u32). Q4_1 / Q5_1's additive min m becomes dmin = −m (the sign bit
// flipped: exact) with m_u = 1.
template <class Block>
void unpack_32(const Block& b, SubBlockInts& out, const uint8_t* qh, bool has_min) {
  out.d = b.d;
  out.sc[0] = 1;
  uint32_t high = 0;
  if (qh) std::memcpy(&high, qh, 4);
  for (int j = 0; j < 32; ++j) {
    const uint8_t nibble = j < 16 ? b.qs[j] & 0x0F : b.qs[j - 16] >> 4;
    out.q[j] = static_cast<uint8_t>(nibble | ((high >> j) & 1) << 4);
  }
  if (has_min) {
    uint16_t m;
    std::memcpy(&m, reinterpret_cast<const std::byte*>(&b) + 2, 2);  // d, m: the first two halves
    out.dmin = static_cast<uint16_t>(m ^ 0x8000);
    out.m[0] = 1;
  }
}

// IQ4_NL and MXFP4: one sub-block of scale 1, the nibbles as Q4_0's (the codebook applied by
// the kernels); MXFP4's d is its e8m0 byte. IQ4_XS: sub-block u is the low (values 0 … 15)
// and high (16 … 31) nibbles of qs[16u … 16u+15], its scale the 6-bit ls − 32 (4 low bits
// nibble u%2 of scales_l[u/2], 2 high bits bits 2u… of scales_h).
void unpack_nibbles_32(const uint8_t* qs, uint8_t* q) {
  for (int j = 0; j < 16; ++j) {
    q[j] = qs[j] & 0x0F;
    q[j + 16] = qs[j] >> 4;
  }
}

void unpack_iq4_xs(const BlockIQ4_XS& b, SubBlockInts& out) {
  out.d = b.d;
  for (int u = 0; u < 8; ++u) {
    const int low = (b.scales_l[u / 2] >> (4 * (u % 2))) & 0x0F, high = (b.scales_h >> (2 * u)) & 3;
    out.sc[u] = static_cast<int8_t>((low | high << 4) - 32);
    unpack_nibbles_32(b.qs + 16 * u, out.q + 32 * u);
  }
}

}  // namespace

template <>
void unpack<WeightType::q4_K>(const std::byte* block, SubBlockInts& out) {
  out = {};
  unpack_k4(read_block<BlockQ4_K>(block), out, nullptr);
}
template <>
void unpack<WeightType::q5_K>(const std::byte* block, SubBlockInts& out) {
  out = {};
  const auto b = read_block<BlockQ5_K>(block);
  unpack_k4(b, out, b.qh);
}
template <>
void unpack<WeightType::q6_K>(const std::byte* block, SubBlockInts& out) {
  out = {};
  unpack_q6(read_block<BlockQ6_K>(block), out);
}
template <>
void unpack<WeightType::q3_K>(const std::byte* block, SubBlockInts& out) {
  out = {};
  unpack_q3(read_block<BlockQ3_K>(block), out);
}
template <>
void unpack<WeightType::q2_K>(const std::byte* block, SubBlockInts& out) {
  out = {};
  unpack_q2(read_block<BlockQ2_K>(block), out);
}
template <>
void unpack<WeightType::q5_0>(const std::byte* block, SubBlockInts& out) {
  out = {};
  const auto b = read_block<BlockQ5_0>(block);
  unpack_32(b, out, b.qh, false);
}
template <>
void unpack<WeightType::q4_1>(const std::byte* block, SubBlockInts& out) {
  out = {};
  unpack_32(read_block<BlockQ4_1>(block), out, nullptr, true);
}
template <>
void unpack<WeightType::q5_1>(const std::byte* block, SubBlockInts& out) {
  out = {};
  const auto b = read_block<BlockQ5_1>(block);
  unpack_32(b, out, b.qh, true);
}
template <>
void unpack<WeightType::iq4_nl>(const std::byte* block, SubBlockInts& out) {
  out = {};
  const auto b = read_block<BlockIQ4_NL>(block);
  out.d = b.d;
  out.sc[0] = 1;
  unpack_nibbles_32(b.qs, out.q);
}
template <>
void unpack<WeightType::iq4_xs>(const std::byte* block, SubBlockInts& out) {
  out = {};
  unpack_iq4_xs(read_block<BlockIQ4_XS>(block), out);
}
template <>
void unpack<WeightType::mxfp4>(const std::byte* block, SubBlockInts& out) {
  out = {};
  const auto b = read_block<BlockMXFP4>(block);
  out.d = b.e;
  out.sc[0] = 1;
  unpack_nibbles_32(b.qs, out.q);
}

namespace {

// Rows ≤ 64 − j0 of K values of qsub type W (row r at src + r·row_bytes, ggml's layout) into
// columns j0 … of a panel of K / block blocks (kernels/qsub_panels.hpp).
template <WeightType W>
void rows_into_panel(const std::byte* src, int64_t row_bytes, int64_t rows, int64_t K, std::byte* panel, int64_t j0) {
  constexpr kernels::QFormat f = kernels::q_format(W);
  constexpr kernels::QSubLayout L = kernels::qsub_layout(f);
  constexpr int64_t block_bytes = kernels::type_block_bytes(W);
  SubBlockInts s;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t j = j0 + r;
    for (int64_t b = 0; b < K / f.block; ++b) {
      unpack<W>(src + r * row_bytes + b * block_bytes, s);
      auto* out = reinterpret_cast<uint8_t*>(panel + b * L.bytes);
      if (f.e8m0)
        out[j] = static_cast<uint8_t>(s.d);
      else
        std::memcpy(out + 2 * j, &s.d, 2);
      if (f.has_min) std::memcpy(out + L.dmin + 2 * j, &s.dmin, 2);
      for (int u = 0; u < f.subs(); ++u) {
        if (f.stores_scales()) out[L.sc + u * 64 + j] = static_cast<uint8_t>(s.sc[u]);
        assert(f.stores_scales() || s.sc[u] == 1);
        if (f.stores_mins()) out[L.m + u * 64 + j] = s.m[u];
        assert(!f.has_min || f.stores_mins() || s.m[u] == 1);
        uint8_t* q = out + L.q_of(f, u);
        const uint8_t* v = s.q + u * f.sub;
        if (f.nibbles) {
          // Pair g: values 4g + l and their partners 4(g + pairs) + l (kernels/qsub_panels.hpp).
          const int pairs = f.sub / 8;
          uint8_t* h = out + L.h_of(u);
          for (int l = 0; l < 4; ++l) {
            int high = 0;
            for (int g = 0; g < pairs; ++g) {
              const int first = v[4 * g + l], partner = v[4 * (g + pairs) + l];
              if (f.crumbs) {  // pairs g and g + 1 (g even) make one byte of plane g / 2
                if (g % 2 == 0) {
                  const int next = v[4 * (g + 1) + l] | v[4 * (g + 1 + pairs) + l] << 4;
                  q[kernels::pair_offset(f, g) + 4 * j + l] =
                      uint8_t(first | partner << 4 | next << kernels::pair_shift(f, g + 1));
                }
              } else if (f.high_bits == 0) {
                q[g * 256 + 4 * j + l] = uint8_t(first | partner << 4);
              } else {
                q[g * 256 + 4 * j + l] = uint8_t(first | partner << kernels::code_bits(f));
                high |= (partner >> kernels::partner_low_bits(f)) << kernels::partner_h_shift(f, g);
              }
            }
            if (f.high_bits) h[4 * j + l] = uint8_t(high);
          }
        } else {
          for (int i = 0; i < f.sub; ++i) q[(i / 4) * 256 + 4 * j + i % 4] = v[i];
        }
      }
    }
  }
}

}  // namespace

QSubRowsIntoPanel qsub_rows_into_panel(WeightType t) {
  static constexpr auto table = [] {
    std::array<QSubRowsIntoPanel, kWeightTypeCount> a{};
    kernels::for_each_type_of<kernels::PanelFamily::qsub>(
        [&]<WeightType W>() { a[static_cast<size_t>(W)] = &rows_into_panel<W>; });
    return a;
  }();
  return table[static_cast<size_t>(t)];
}

}  // namespace ffn
