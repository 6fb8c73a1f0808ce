// The weight-type table, made from the list (ffn/weight_type_list.hpp): one entry per line, in
// its order, so that the enum indexes it (weight_type_table.hpp says what each field is).
#include "core/weight_type_table.hpp"

#include <array>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/codecs.hpp"
#include "core/qsub_pack.hpp"
#include "ffn/error.hpp"
#include "kernels/qblock_panels.hpp"
#include "kernels/qsub_panels.hpp"

namespace ffn {
namespace {

using kernels::PanelFamily;
constexpr int64_t kW = kernels::kPanelWidth;

#define FFN_EXPAND_FIELDS(...) __VA_ARGS__
const std::array<WeightTypeTraits, kWeightTypeCount> kTable{{
#define FFN_TRAITS_ENTRY(name, gguf, block, bytes, panels, scales, format, summary)                  \
  {{WeightType::name, #name, gguf, block, bytes, summary, PanelFamily::panels != PanelFamily::none}, \
   PanelFamily::panels,                                                                              \
   kernels::q_format(WeightType::name),                                                              \
   decode<WeightType::name>,                                                                         \
   encode<WeightType::name>,                                                                         \
   {FFN_EXPAND_FIELDS scales}},
    FFN_WEIGHT_TYPES(FFN_TRAITS_ENTRY)
#undef FFN_TRAITS_ENTRY
}};
#undef FFN_EXPAND_FIELDS

// q8_0 / q4_0 as their panels hold them (kernels/qblock_panels.hpp): per block the 64 rows'
// scales, then groups of 4 weights of every row as unsigned bytes — q8_0 stores w + 128; q4_0
// keeps ggml's nibbles (w + 8), regrouped: ggml's weight i < 16 is the low nibble of qs[i],
// weight i ≥ 16 the high nibble of qs[i − 16]; group g < 4 here takes weights 4g + l (low) and
// 4(g + 4) + l (high). Read from ggml's block: d at byte 0, then the 32 codes (bytes of int8
// for q8_0, 16 nibble pairs for q4_0).
void qblock_rows_into_panel(const kernels::QFormat& f, int64_t block_bytes, const std::byte* src, int64_t row_bytes,
                            int64_t rows, int64_t K, std::byte* panel, int64_t j0) {
  const int64_t blocks = K / 32, out_bytes = kernels::qblock_bytes(f);
  for (int64_t r = 0; r < rows; ++r) {
    const std::byte* row = src + r * row_bytes;
    const int64_t j = j0 + r;
    for (int64_t b = 0; b < blocks; ++b) {
      const auto* in = reinterpret_cast<const uint8_t*>(row + b * block_bytes);
      auto* out = reinterpret_cast<uint8_t*>(panel + b * out_bytes);
      uint8_t* q = out + kernels::kQBlockScaleBytes;
      std::memcpy(out + 2 * j, in, 2);
      const uint8_t* codes = in + 2;
      if (!f.nibbles) {
        for (int i = 0; i < 32; ++i) q[(i / 4) * 256 + 4 * j + i % 4] = uint8_t(int8_t(codes[i]) + f.offset);
      } else {
        auto nib = [&](int i) { return i < 16 ? codes[i] & 0x0F : codes[i - 16] >> 4; };
        for (int g = 0; g < 4; ++g)
          for (int l = 0; l < 4; ++l) q[g * 256 + 4 * j + l] = uint8_t(nib(4 * g + l) | nib(4 * (g + 4) + l) << 4);
      }
    }
  }
}

// bf16 pair panels (kernels.hpp): the pairs of k moved 32 bits at a time, an odd K's last
// weight beside a zero padding weight.
void bf16_rows_into_panel(const kernels::KernelTable& k, const std::byte* src, int64_t row_bytes, int64_t rows,
                          int64_t K, std::byte* panel_bytes, int64_t j0) {
  auto* panel = reinterpret_cast<uint16_t*>(panel_bytes);
  k.rows_to_panel32(rows, K / 2, src, row_bytes, reinterpret_cast<uint32_t*>(panel), j0);
  if (K % 2 == 0) return;
  for (int64_t r = 0; r < rows; ++r) {
    std::memcpy(panel + kernels::bf16_panel_index(K - 1, j0 + r), src + r * row_bytes + 2 * (K - 1), 2);
    panel[kernels::bf16_panel_index(K, j0 + r)] = 0;
  }
}

std::string hex16(uint16_t h) {
  char hex[8];
  std::snprintf(hex, sizeof hex, "%04x", h);
  return hex;
}

}  // namespace

int64_t WeightTypeTraits::panel_bytes(int64_t K) const {
  switch (panels) {
    case PanelFamily::f32:
      return K * kW * 4;
    case PanelFamily::f16:
      return K * kW * 2;
    case PanelFamily::bf16:
      return kernels::bf16_panel_rows(K) * kW * 2;
    case PanelFamily::qblock:
      return K / 32 * kernels::qblock_bytes(format);
    case PanelFamily::qsub:
      return K / format.block * kernels::qsub_layout(format).bytes;
    case PanelFamily::none:
      break;
  }
  throw Error(std::string(info.name) + " is an activation format: no matrix is laid out in it");
}

void WeightTypeTraits::rows_into_panel(const kernels::KernelTable& k, const std::byte* src, int64_t row_bytes,
                                       int64_t rows, int64_t K, std::byte* panel, int64_t j0) const {
  switch (panels) {
    case PanelFamily::f32:
      return k.rows_to_panel32(rows, K, src, row_bytes, reinterpret_cast<uint32_t*>(panel), j0);
    case PanelFamily::f16:
      return k.rows_to_panel16(rows, K, src, row_bytes, reinterpret_cast<uint16_t*>(panel), j0);
    case PanelFamily::bf16:
      return bf16_rows_into_panel(k, src, row_bytes, rows, K, panel, j0);
    case PanelFamily::qblock:
      return qblock_rows_into_panel(format, info.block_bytes, src, row_bytes, rows, K, panel, j0);
    case PanelFamily::qsub:
      return qsub_rows_into_panel(info.type)(src, row_bytes, rows, K, panel, j0);
    case PanelFamily::none:
      break;
  }
  throw Error(std::string(info.name) + " is an activation format: no matrix is laid out in it");
}

std::span<const WeightTypeTraits> weight_type_table() { return kTable; }

const WeightTypeTraits& weight_type_traits(WeightType t) {
  const auto i = static_cast<size_t>(t);
  if (i >= kTable.size()) throw Error("weight type " + std::to_string(static_cast<int>(t)) + " is unknown");
  return kTable[i];
}

const std::vector<WeightTypeInfo>& weight_types() {
  static const std::vector<WeightTypeInfo> all = [] {
    std::vector<WeightTypeInfo> v;
    for (const auto& e : kTable)
      if (e.info.is_weight) v.push_back(e.info);
    return v;
  }();
  return all;
}

const WeightTypeInfo& weight_type_info(WeightType t) { return weight_type_traits(t).info; }

std::string_view weight_type_name(WeightType t) { return weight_type_info(t).name; }

std::string weight_type_names() {
  std::string names;
  for (const auto& info : weight_types()) names += (names.empty() ? "" : ", ") + std::string(info.name);
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
    if (same(e.info.name, name)) {
      if (!e.info.is_weight)
        throw Error("weight type '" + std::string(name) +
                    "' is an activation format only; accepted: " + weight_type_names());
      return e.info.type;
    }
  throw Error("weight type '" + std::string(name) + "' is unknown; accepted: " + weight_type_names());
}

bool weight_type_from_gguf(uint32_t gguf_type, WeightType& out) {
  for (const auto& e : kTable)
    if (e.info.is_weight && e.info.gguf_type == gguf_type) {
      out = e.info.type;
      return true;
    }
  return false;
}

namespace {
std::atomic<int64_t> g_blocks_checked{0};
}  // namespace

int64_t block_scales_checked() { return g_blocks_checked.load(std::memory_order_relaxed); }

void check_block_scales(WeightType t, const std::byte* data, int64_t rows, int64_t cols, const std::string& what) {
  const WeightTypeTraits& e = weight_type_traits(t);
  if (e.scale_fields[0] < 0) return;
  const int64_t blocks = cols / e.info.block_elements, row_bytes = e.info.row_bytes(cols);
  g_blocks_checked.fetch_add(rows * blocks, std::memory_order_relaxed);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t b = 0; b < blocks; ++b)
      for (const int field : e.scale_fields) {
        if (field < 0) continue;
        const std::byte* at = data + r * row_bytes + b * e.info.block_bytes + field;
        const std::string where = what + ": row " + std::to_string(r) + ", block " + std::to_string(b) + " of " +
                                  std::string(e.info.name) + " has a ";
        if (e.format.e8m0) {
          if (static_cast<uint8_t>(*at) == 0xFF)
            throw Error(where + "NaN scale (e8m0 0xff at byte " + std::to_string(field) + " of the block)");
          continue;
        }
        uint16_t h;
        std::memcpy(&h, at, 2);
        if ((h & 0x7C00) == 0x7C00)
          throw Error(where + ((h & 0x03FF) ? "NaN" : "infinite") + " scale (binary16 0x" + hex16(h) + " at byte " +
                      std::to_string(field) + " of the block)");
      }
}

WeightTypeKernel weight_type_kernel(WeightType t, Isa isa) {
  const kernels::PanelKernel& p = kernels::kernel_table(isa).panel(t);
  if (!p) throw Error(std::string(weight_type_name(t)) + " has no panel kernel: it is an activation format");
  return {p.name, p.arithmetic, p.activations};
}

std::string matrix_types_name(const MatrixTypes& t, bool gated) {
  if (t.up == t.down && (!gated || t.gate == t.up)) return std::string(weight_type_name(t.up));
  std::string out = gated ? "gate " + std::string(weight_type_name(t.gate)) + ", " : "";
  return out + "up " + std::string(weight_type_name(t.up)) + ", down " + std::string(weight_type_name(t.down));
}

}  // namespace ffn
