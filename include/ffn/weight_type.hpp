// The weight types a block's matrices can be stored and run in, and the activation formats the
// forward kernels take: one list (ffn/weight_type_list.hpp) makes the enum and a table indexed
// by it (src/core/weight_type_table.cpp); this header is the public view of it. `ffn types`
// prints the table.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ffn/isa.hpp"
#include "ffn/weight_type_list.hpp"

namespace ffn {

// f32 and the 16-bit floats store one weight per element; the others are ggml's block
// formats, byte for byte (ffn/weight_type_list.hpp gives each one's layout in a line, `ffn
// types` prints them). A block format needs each row's length to be a multiple of its block.
// Biases are always f32. q8_K is an activation format only: no matrix is stored in it.
enum class WeightType {
#define FFN_WEIGHT_TYPE_ENUMERATOR(name, ...) name,
  FFN_WEIGHT_TYPES(FFN_WEIGHT_TYPE_ENUMERATOR)
#undef FFN_WEIGHT_TYPE_ENUMERATOR
};
inline constexpr int kWeightTypeCount = 0
#define FFN_WEIGHT_TYPE_COUNT(name, ...) +1
    FFN_WEIGHT_TYPES(FFN_WEIGHT_TYPE_COUNT)
#undef FFN_WEIGHT_TYPE_COUNT
    ;

struct WeightTypeInfo {
  WeightType type;
  std::string_view name;     // "q8_0", "q4_K", as ggml names it (parse_weight_type ignores case)
  uint32_t gguf_type;        // ggml's type number in GGUF tensor infos
  int64_t block_elements;    // values per block (1 for the element types)
  int64_t block_bytes;       // bytes per block
  std::string_view summary;  // one line: the layout
  bool is_weight;            // false for the activation-only formats (q8_K)
  double bits_per_weight() const { return 8.0 * double(block_bytes) / double(block_elements); }
  // Bytes of a row of n values; n must be a multiple of block_elements.
  int64_t row_bytes(int64_t n) const { return n / block_elements * block_bytes; }
};

// The type of each matrix of a block; a 2-matrix block has no gate and ignores it.
// llama.cpp's quantisation mixes store gate and up in one type and down in another on some
// layers (Q4_K_M: down in Q6_K on the layers its rule picks).
struct MatrixTypes {
  WeightType gate = WeightType::f32;
  WeightType up = WeightType::f32;
  WeightType down = WeightType::f32;
  static MatrixTypes all(WeightType t) { return {t, t, t}; }
  bool operator==(const MatrixTypes&) const = default;
};
// "q8_0" when every matrix of the block (gated or not) has one type, else
// "gate q4_0, up q4_0, down q8_0".
std::string matrix_types_name(const MatrixTypes& types, bool gated);

// Every weight type (not the activation-only formats), in the list's order.
const std::vector<WeightTypeInfo>& weight_types();
// Any entry of the list, weight type or activation format.
const WeightTypeInfo& weight_type_info(WeightType t);
std::string_view weight_type_name(WeightType t);
// The weight type of that name; ffn::Error listing the weight types' names otherwise (an
// activation-only format's name too: no matrix is stored in it).
WeightType parse_weight_type(std::string_view name);
// The weight types' names joined: "f32, bf16, f16, q8_0, q4_0, …".
std::string weight_type_names();

// What the forward of matrices of type t runs on ISA `isa` (which this CPU must support):
// the panel kernel's name, how it multiplies, and the activation format it takes (an entry
// of the same list: f32, bf16, q8_0 or q8_K).
struct WeightTypeKernel {
  std::string_view kernel;      // "q4_K_panel_gemm_avx512_vnni_2x64"
  std::string_view arithmetic;  // "vdpbf16ps", "f32 FMA", ...
  WeightType activations;
};
WeightTypeKernel weight_type_kernel(WeightType t, Isa isa);

}  // namespace ffn
