// The weight-type table: one entry per type (weight_type_table.hpp says what each field is).
#include "core/weight_type_table.hpp"

#include <array>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/ggml_blocks.hpp"
#include "core/kq_pack.hpp"
#include "ffn/error.hpp"
#include "ffn/quant.hpp"

namespace ffn {
namespace {

using kernels::KernelTable;
constexpr int64_t kW = kernels::kPanelWidth;

// ---- element types: f32, bf16, f16 ----

void f32_to_f32(const std::byte* row, float* out, int64_t n) { std::memcpy(out, row, size_t(n) * 4); }
void f32_from_f32(const float* x, std::byte* row, int64_t n) { std::memcpy(row, x, size_t(n) * 4); }
void bf16_to_f32_row(const std::byte* row, float* out, int64_t n) { bf16_bytes_to_f32(row, out, n); }
void f16_to_f32_row(const std::byte* row, float* out, int64_t n) { f16_bytes_to_f32(row, out, n); }
template <uint16_t (*Round)(float)>
void half_from_f32(const float* x, std::byte* row, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t h = Round(x[i]);
    std::memcpy(row + 2 * i, &h, 2);
  }
}

int64_t f32_panel_bytes(int64_t K) { return K * kW * 4; }
int64_t f16_panel_bytes(int64_t K) { return K * kW * 2; }
int64_t bf16_panel_bytes(int64_t K) { return kernels::bf16_panel_rows(K) * kW * 2; }

void f32_rows_into_panel(const KernelTable& k, const std::byte* src, int64_t row_bytes, int64_t rows, int64_t K,
                         std::byte* panel, int64_t j0) {
  k.rows_to_panel32(rows, K, src, row_bytes, reinterpret_cast<uint32_t*>(panel), j0);
}

void f16_rows_into_panel(const KernelTable& k, const std::byte* src, int64_t row_bytes, int64_t rows, int64_t K,
                         std::byte* panel, int64_t j0) {
  k.rows_to_panel16(rows, K, src, row_bytes, reinterpret_cast<uint16_t*>(panel), j0);
}

// bf16 pair panels (kernels.hpp): the pairs of k moved 32 bits at a time, an odd K's last
// weight beside a zero padding weight.
void bf16_rows_into_panel(const KernelTable& k, const std::byte* src, int64_t row_bytes, int64_t rows, int64_t K,
                          std::byte* panel_bytes, int64_t j0) {
  auto* panel = reinterpret_cast<uint16_t*>(panel_bytes);
  k.rows_to_panel32(rows, K / 2, src, row_bytes, reinterpret_cast<uint32_t*>(panel), j0);
  if (K % 2 == 0) return;
  for (int64_t r = 0; r < rows; ++r) {
    std::memcpy(panel + kernels::bf16_panel_index(K - 1, j0 + r), src + r * row_bytes + 2 * (K - 1), 2);
    panel[kernels::bf16_panel_index(K, j0 + r)] = 0;
  }
}

PanelKernel f32_kernel(const KernelTable& k) {
  return {k.f32_panel_gemm.name, "f32 FMA", ActivationFormat::f32,
          [](const KernelTable& k, int64_t T, int64_t K, const ActivationRows& a, const std::byte* p, float* C,
             int64_t ldc) { k.f32_panel_gemm(T, K, a.f32, a.f32_stride, reinterpret_cast<const float*>(p), C, ldc); }};
}

PanelKernel f16_kernel(const KernelTable& k) {
  return {k.half_panel_gemm.name, "widened exactly in registers, f32 FMA", ActivationFormat::f32,
          [](const KernelTable& k, int64_t T, int64_t K, const ActivationRows& a, const std::byte* p, float* C,
             int64_t ldc) {
            k.half_panel_gemm(false, T, K, a.f32, a.f32_stride, reinterpret_cast<const uint16_t*>(p), C, ldc);
          }};
}

// bf16: AVX512_BF16's dot product where the table has it (activations rounded to bf16),
// else the weights widened exactly in registers and f32 activations.
PanelKernel bf16_kernel(const KernelTable& k) {
  if (k.bf16_dot_panel_gemm)
    return {k.bf16_dot_panel_gemm.name, "vdpbf16ps", ActivationFormat::bf16,
            [](const KernelTable& k, int64_t T, int64_t K, const ActivationRows& a, const std::byte* p, float* C,
               int64_t ldc) {
              k.bf16_dot_panel_gemm(T, K, a.bf16, a.bf16_stride, reinterpret_cast<const uint16_t*>(p), C, ldc);
            }};
  return {k.half_panel_gemm.name, "widened exactly in registers, f32 FMA", ActivationFormat::f32,
          [](const KernelTable& k, int64_t T, int64_t K, const ActivationRows& a, const std::byte* p, float* C,
             int64_t ldc) {
            k.half_panel_gemm(true, T, K, a.f32, a.f32_stride, reinterpret_cast<const uint16_t*>(p), C, ldc);
          }};
}

// ---- ggml's 32-blocks: q8_0, q4_0 ----

template <class Block, void (*Quantize)(const float*, Block*, int64_t), int64_t Elements = kQuantBlock>
void blocks_from_f32(const float* x, std::byte* row, int64_t n) {
  // The whole row at once (errors name the element of the row), through a copy: the row
  // need not be aligned for Block.
  std::vector<Block> blocks(static_cast<size_t>(n / Elements));
  Quantize(x, blocks.data(), n);
  if (n > 0) std::memcpy(row, blocks.data(), blocks.size() * sizeof(Block));
}
template <class Block, void (*Dequantize)(const Block*, float*, int64_t), int64_t Elements = kQuantBlock>
void blocks_to_f32(const std::byte* row, float* out, int64_t n) {
  for (int64_t b = 0; b < n / Elements; ++b) {
    Block blk;
    std::memcpy(&blk, row + b * int64_t(sizeof(Block)), sizeof blk);
    Dequantize(&blk, out + b * Elements, Elements);
  }
}

template <WeightType Type>
int64_t q_panel_bytes(int64_t K) {
  return K / kQuantBlock * kernels::q_panel_block_bytes(Type);
}

// Integer panels (kernels.hpp): per block the 64 rows' scales, then groups of 4 weights of
// every row as unsigned bytes. q8_0 stores w + 128; q4_0 keeps ggml's nibbles (w + 8),
// regrouped: ggml's weight i < 16 is the low nibble of qs[i], weight i ≥ 16 the high nibble
// of qs[i − 16]; group g < 4 here takes weights 4g + l (low) and 4(g + 4) + l (high).
template <WeightType Type>
void q_rows_into_panel(const KernelTable&, const std::byte* src, int64_t row_bytes, int64_t rows, int64_t K,
                       std::byte* panel, int64_t j0) {
  const int64_t blocks = K / kQuantBlock, out_bytes = kernels::q_panel_block_bytes(Type);
  for (int64_t r = 0; r < rows; ++r) {
    const std::byte* row = src + r * row_bytes;
    const int64_t j = j0 + r;
    for (int64_t b = 0; b < blocks; ++b) {
      auto* out = reinterpret_cast<uint8_t*>(panel + b * out_bytes);
      uint8_t* q = out + kernels::kQPanelScaleBytes;
      if constexpr (Type == WeightType::q8_0) {
        BlockQ8_0 blk;
        std::memcpy(&blk, row + b * int64_t(sizeof(BlockQ8_0)), sizeof blk);
        std::memcpy(out + 2 * j, &blk.d, 2);
        for (int i = 0; i < kQuantBlock; ++i) q[(i / 4) * 256 + 4 * j + i % 4] = uint8_t(blk.qs[i] + 128);
      } else {
        BlockQ4_0 blk;
        std::memcpy(&blk, row + b * int64_t(sizeof(BlockQ4_0)), sizeof blk);
        std::memcpy(out + 2 * j, &blk.d, 2);
        auto nib = [&](int i) { return i < 16 ? blk.qs[i] & 0x0F : blk.qs[i - 16] >> 4; };
        for (int g = 0; g < 4; ++g)
          for (int l = 0; l < 4; ++l) q[g * 256 + 4 * j + l] = uint8_t(nib(4 * g + l) | nib(4 * (g + 4) + l) << 4);
      }
    }
  }
}

template <WeightType Type>
PanelKernel q_kernel(const KernelTable& k) {
  return {k.q_panel_gemm.name, "exact integer dot products per block", ActivationFormat::q8_0,
          [](const KernelTable& k, int64_t T, int64_t K, const ActivationRows& a, const std::byte* p, float* C,
             int64_t ldc) { k.q_panel_gemm(Type, T, K, a.q8, p, C, ldc); }};
}

// ---- ggml's K-quants: super-blocks of 256 (kernels/kq_panels.hpp) ----

template <WeightType Type>
int64_t kq_panel_bytes(int64_t K) {
  return K / kernels::kq_format(Type).block * kernels::kq_panel_block_bytes(Type);
}
template <WeightType Type>
void kq_into_panel(const KernelTable&, const std::byte* src, int64_t row_bytes, int64_t rows, int64_t K,
                   std::byte* panel, int64_t j0) {
  kq_rows_into_panel(Type, src, row_bytes, rows, K, panel, j0);
}
template <WeightType Type>
PanelKernel kq_kernel(const KernelTable& k) {
  constexpr kernels::KQFormat f = kernels::kq_format(Type);
  constexpr bool super = f.block == kernels::kSuperBlockValues;
  return {k.kq_panel_gemm.name,
          f.has_codebook() ? (super ? "nibbles through a 16-entry codebook, exact integer sums per super-block"
                                    : "nibbles through a 16-entry codebook, exact integer sums per block")
          : super          ? "exact integer sums per super-block"
                           : "exact integer sums per block (a scale and a min each)",
          super ? ActivationFormat::q8_K : ActivationFormat::q8_1,
          [](const KernelTable& k, int64_t T, int64_t K, const ActivationRows& a, const std::byte* p, float* C,
             int64_t ldc) { k.kq_panel_gemm(Type, T, K, a.q8k, p, C, ldc); }};
}
// The table. GGUF numbers are ggml's enum ggml_type.
const std::array<WeightTypeTraits, 16> kTable{{
    {{WeightType::f32, "f32", 0, 1, 4, "IEEE binary32"},
     f32_to_f32,
     f32_from_f32,
     f32_panel_bytes,
     f32_rows_into_panel,
     f32_kernel},
    {{WeightType::bf16, "bf16", 30, 1, 2, "bfloat16: the upper half of an f32, rounded to nearest even"},
     bf16_to_f32_row,
     half_from_f32<f32_to_bf16>,
     bf16_panel_bytes,
     bf16_rows_into_panel,
     bf16_kernel},
    {{WeightType::f16, "f16", 1, 1, 2, "IEEE binary16, rounded to nearest even"},
     f16_to_f32_row,
     half_from_f32<f32_to_f16>,
     f16_panel_bytes,
     f16_rows_into_panel,
     f16_kernel},
    {{WeightType::q8_0, "q8_0", 8, 32, 34, "ggml Q8_0: 32 int8 weights and a binary16 scale"},
     blocks_to_f32<BlockQ8_0, dequantize_row_q8_0>,
     blocks_from_f32<BlockQ8_0, quantize_row_q8_0>,
     q_panel_bytes<WeightType::q8_0>,
     q_rows_into_panel<WeightType::q8_0>,
     q_kernel<WeightType::q8_0>,
     {0, -1}},
    {{WeightType::q4_0, "q4_0", 2, 32, 18, "ggml Q4_0: 32 4-bit weights (offset 8) and a binary16 scale"},
     blocks_to_f32<BlockQ4_0, dequantize_row_q4_0>,
     blocks_from_f32<BlockQ4_0, quantize_row_q4_0>,
     q_panel_bytes<WeightType::q4_0>,
     q_rows_into_panel<WeightType::q4_0>,
     q_kernel<WeightType::q4_0>,
     {0, -1}},
    {{WeightType::q6_K, "q6_K", 14, 256, 210,
      "ggml Q6_K: 16 sub-blocks of 16 6-bit weights (offset 32), int8 scales, a binary16 scale"},
     blocks_to_f32<BlockQ6_K, dequantize_row_q6_K, kSuperBlock>,
     blocks_from_f32<BlockQ6_K, quantize_row_q6_K, kSuperBlock>,
     kq_panel_bytes<WeightType::q6_K>,
     kq_into_panel<WeightType::q6_K>,
     kq_kernel<WeightType::q6_K>,
     {208, -1}},
    {{WeightType::q5_K, "q5_K", 13, 256, 176,
      "ggml Q5_K: 8 sub-blocks of 32 5-bit weights, 6-bit scales and mins, binary16 d and dmin"},
     blocks_to_f32<BlockQ5_K, dequantize_row_q5_K, kSuperBlock>,
     blocks_from_f32<BlockQ5_K, quantize_row_q5_K, kSuperBlock>,
     kq_panel_bytes<WeightType::q5_K>,
     kq_into_panel<WeightType::q5_K>,
     kq_kernel<WeightType::q5_K>,
     {0, 2}},
    {{WeightType::q4_K, "q4_K", 12, 256, 144,
      "ggml Q4_K: 8 sub-blocks of 32 4-bit weights, 6-bit scales and mins, binary16 d and dmin"},
     blocks_to_f32<BlockQ4_K, dequantize_row_q4_K, kSuperBlock>,
     blocks_from_f32<BlockQ4_K, quantize_row_q4_K, kSuperBlock>,
     kq_panel_bytes<WeightType::q4_K>,
     kq_into_panel<WeightType::q4_K>,
     kq_kernel<WeightType::q4_K>,
     {0, 2}},
    {{WeightType::q3_K, "q3_K", 11, 256, 110,
      "ggml Q3_K: 16 sub-blocks of 16 3-bit weights (offset 4), 6-bit scales, a binary16 scale"},
     blocks_to_f32<BlockQ3_K, dequantize_row_q3_K, kSuperBlock>,
     blocks_from_f32<BlockQ3_K, quantize_row_q3_K, kSuperBlock>,
     kq_panel_bytes<WeightType::q3_K>,
     kq_into_panel<WeightType::q3_K>,
     kq_kernel<WeightType::q3_K>,
     {108, -1}},
    {{WeightType::q2_K, "q2_K", 10, 256, 84,
      "ggml Q2_K: 16 sub-blocks of 16 2-bit weights, 4-bit scales and mins, binary16 d and dmin"},
     blocks_to_f32<BlockQ2_K, dequantize_row_q2_K, kSuperBlock>,
     blocks_from_f32<BlockQ2_K, quantize_row_q2_K, kSuperBlock>,
     kq_panel_bytes<WeightType::q2_K>,
     kq_into_panel<WeightType::q2_K>,
     kq_kernel<WeightType::q2_K>,
     {80, 82}},
    // ggml's older 32-blocks, run through the K-quant panels (kernels/kq_panels.hpp).
    {{WeightType::q5_1, "q5_1", 7, 32, 24,
      "ggml Q5_1: 32 5-bit weights, a binary16 scale and an additive binary16 min"},
     blocks_to_f32<BlockQ5_1, dequantize_row_q5_1>,
     blocks_from_f32<BlockQ5_1, quantize_row_q5_1>,
     kq_panel_bytes<WeightType::q5_1>,
     kq_into_panel<WeightType::q5_1>,
     kq_kernel<WeightType::q5_1>,
     {0, 2}},
    {{WeightType::q5_0, "q5_0", 6, 32, 22, "ggml Q5_0: 32 5-bit weights (offset 16) and a binary16 scale"},
     blocks_to_f32<BlockQ5_0, dequantize_row_q5_0>,
     blocks_from_f32<BlockQ5_0, quantize_row_q5_0>,
     kq_panel_bytes<WeightType::q5_0>,
     kq_into_panel<WeightType::q5_0>,
     kq_kernel<WeightType::q5_0>,
     {0, -1}},
    {{WeightType::q4_1, "q4_1", 3, 32, 20,
      "ggml Q4_1: 32 4-bit weights, a binary16 scale and an additive binary16 min"},
     blocks_to_f32<BlockQ4_1, dequantize_row_q4_1>,
     blocks_from_f32<BlockQ4_1, quantize_row_q4_1>,
     kq_panel_bytes<WeightType::q4_1>,
     kq_into_panel<WeightType::q4_1>,
     kq_kernel<WeightType::q4_1>,
     {0, 2}},
    // ggml's codebook types, run through the K-quant panels with the nibbles looked up.
    {{WeightType::iq4_nl, "iq4_nl", 20, 32, 18,
      "ggml IQ4_NL: 32 4-bit indices into a non-linear int8 codebook and a binary16 scale"},
     blocks_to_f32<BlockIQ4_NL, dequantize_row_iq4_nl>,
     blocks_from_f32<BlockIQ4_NL, quantize_row_iq4_nl>,
     kq_panel_bytes<WeightType::iq4_nl>,
     kq_into_panel<WeightType::iq4_nl>,
     kq_kernel<WeightType::iq4_nl>,
     {0, -1}},
    {{WeightType::iq4_xs, "iq4_xs", 23, 256, 136,
      "ggml IQ4_XS: 8 sub-blocks of 32 IQ4_NL codebook indices, 6-bit scales (offset 32), a binary16 scale"},
     blocks_to_f32<BlockIQ4_XS, dequantize_row_iq4_xs, kSuperBlock>,
     blocks_from_f32<BlockIQ4_XS, quantize_row_iq4_xs, kSuperBlock>,
     kq_panel_bytes<WeightType::iq4_xs>,
     kq_into_panel<WeightType::iq4_xs>,
     kq_kernel<WeightType::iq4_xs>,
     {0, -1}},
    {{WeightType::mxfp4, "mxfp4", 39, 32, 17,
      "OCP MXFP4 (ggml's layout): 32 e2m1 4-bit floats and an e8m0 power-of-two scale"},
     blocks_to_f32<BlockMXFP4, dequantize_row_mxfp4>,
     blocks_from_f32<BlockMXFP4, quantize_row_mxfp4>,
     kq_panel_bytes<WeightType::mxfp4>,
     kq_into_panel<WeightType::mxfp4>,
     kq_kernel<WeightType::mxfp4>,
     {0, -1},
     true},
}};

}  // namespace

std::span<const WeightTypeTraits> weight_type_table() { return kTable; }

const WeightTypeTraits& weight_type_traits(WeightType t) {
  for (const auto& e : kTable)
    if (e.info.type == t) return e;
  throw Error("weight type " + std::to_string(static_cast<int>(t)) + " is unknown");
}

const std::vector<WeightTypeInfo>& weight_types() {
  static const std::vector<WeightTypeInfo> all = [] {
    std::vector<WeightTypeInfo> v;
    for (const auto& e : kTable) v.push_back(e.info);
    return v;
  }();
  return all;
}

const WeightTypeInfo& weight_type_info(WeightType t) { return weight_type_traits(t).info; }

std::string_view weight_type_name(WeightType t) { return weight_type_info(t).name; }

std::string weight_type_names() {
  std::string names;
  for (const auto& e : kTable) names += (names.empty() ? "" : ", ") + std::string(e.info.name);
  return names;
}

WeightType parse_weight_type(std::string_view name) {
  auto same = [](std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i])))
        return false;
    return true;
  };
  for (const auto& e : kTable)
    if (same(e.info.name, name)) return e.info.type;
  throw Error("weight type '" + std::string(name) + "' is unknown; accepted: " + weight_type_names());
}

bool weight_type_from_gguf(uint32_t gguf_type, WeightType& out) {
  for (const auto& e : kTable)
    if (e.info.gguf_type == gguf_type) {
      out = e.info.type;
      return true;
    }
  return false;
}

void check_block_scales(WeightType t, const std::byte* data, int64_t rows, int64_t cols, const std::string& what) {
  const WeightTypeTraits& e = weight_type_traits(t);
  if (e.scale_fields[0] < 0) return;
  const int64_t blocks = cols / e.info.block_elements, row_bytes = e.info.row_bytes(cols);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t b = 0; b < blocks; ++b)
      for (const int field : e.scale_fields) {
        if (field < 0) continue;
        if (e.e8m0_scale) {
          const auto byte = static_cast<uint8_t>(data[r * row_bytes + b * e.info.block_bytes + field]);
          if (byte == 0xFF)
            throw Error(what + ": row " + std::to_string(r) + ", block " + std::to_string(b) + " of " +
                        std::string(e.info.name) + " has a NaN scale (e8m0 0xff at byte " + std::to_string(field) +
                        " of the block)");
          continue;
        }
        uint16_t h;
        std::memcpy(&h, data + r * row_bytes + b * e.info.block_bytes + field, 2);
        if ((h & 0x7C00) == 0x7C00)
          throw Error(what + ": row " + std::to_string(r) + ", block " + std::to_string(b) + " of " +
                      std::string(e.info.name) + " has a " + ((h & 0x03FF) ? "NaN" : "infinite") +
                      " scale (binary16 0x" +
                      [&] {
                        char hex[8];
                        std::snprintf(hex, sizeof hex, "%04x", h);
                        return std::string(hex);
                      }() +
                      " at byte " + std::to_string(field) + " of the block)");
      }
}

WeightTypeKernel weight_type_kernel(WeightType t, Isa isa) {
  const PanelKernel p = weight_type_traits(t).kernel(kernels::kernel_table(isa));
  return {p.name, p.arithmetic, p.activations};
}

std::string matrix_types_name(const MatrixTypes& t, bool gated) {
  if (t.up == t.down && (!gated || t.gate == t.up)) return std::string(weight_type_name(t.up));
  std::string out = gated ? "gate " + std::string(weight_type_name(t.gate)) + ", " : "";
  return out + "up " + std::string(weight_type_name(t.up)) + ", down " + std::string(weight_type_name(t.down));
}

std::string_view activation_format_name(ActivationFormat f) {
  switch (f) {
    case ActivationFormat::f32:
      return "f32";
    case ActivationFormat::bf16:
      return "bf16";
    case ActivationFormat::q8_0:
      return "q8_0";
    case ActivationFormat::q8_K:
      return "q8_K";
    case ActivationFormat::q8_1:
      return "q8_1";
  }
  return "?";
}

}  // namespace ffn
