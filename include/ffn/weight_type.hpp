// The weight types a block's matrices can be stored and run in. Every fact about a type —
// its name, GGUF number, block geometry, quantiser, panel layout, the activations its
// kernels take and its kernel per ISA — lives in one table (src/core/weight_type_table.cpp);
// this header is the public view of it. `ffn types` prints the table.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ffn/isa.hpp"

namespace ffn {

// f32 and the 16-bit floats store one weight per element; q8_0 / q4_0 are ggml's block
// formats: 32 weights of one row per block with a binary16 scale (34 and 18 bytes), q5_1,
// q5_0 and q4_1 its older 32-blocks (with a fifth bit, an additive min); q6_K … q2_K
// ggml's K-quants: super-blocks of 256 weights of one row in sub-blocks of 16 or 32
// with integer scales (and mins); iq4_nl, iq4_xs its non-linear 4-bit codebook types
// (blocks of 32, super-blocks of 256), mxfp4 the OCP microscaling FP4 (e2m1 codes, an e8m0
// scale a block of 32). `ffn types` gives each layout. A block format needs each
// row's length to be a multiple of its block. Biases are always f32.
enum class WeightType {
  f32,
  bf16,
  f16,
  q8_0,
  q4_0,
  q6_K,
  q5_K,
  q4_K,
  q3_K,
  q2_K,
  q5_1,
  q5_0,
  q4_1,
  iq4_nl,
  iq4_xs,
  mxfp4
};

// What the forward kernels of a type take as activations: f32 rows; bf16 rows (x and h
// rounded to bf16 once per forward, for AVX512_BF16's dot product); q8_0 blocks (x and h
// quantised as ggml's quantize_row_q8_0 does, for integer dot products); q8_K blocks
// (256 values, an f32 scale and sums of 16, ggml's quantize_row_q8_K: the K-quants'
// integer dot products); or q8_1 blocks (q8_0's codes and scale with sums of 16, as ggml
// dots Q4_1 / Q5_0 / Q5_1 / IQ4_NL / MXFP4 with its q8_1 / q8_0).
enum class ActivationFormat { f32, bf16, q8_0, q8_K, q8_1 };

struct WeightTypeInfo {
  WeightType type;
  std::string_view name;     // "q8_0", "q4_K", as ggml names it (parse_weight_type ignores case)
  uint32_t gguf_type;        // ggml's type number in GGUF tensor infos
  int64_t block_elements;    // weights per block (1 for the element types)
  int64_t block_bytes;       // bytes per block
  std::string_view summary;  // one line: the layout
  double bits_per_weight() const { return 8.0 * double(block_bytes) / double(block_elements); }
  // Bytes of a row of n weights; n must be a multiple of block_elements.
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

// Every type, in the table's order.
const std::vector<WeightTypeInfo>& weight_types();
const WeightTypeInfo& weight_type_info(WeightType t);
std::string_view weight_type_name(WeightType t);
WeightType parse_weight_type(std::string_view name);  // throws ffn::Error listing the names
// The type of a GGUF tensor's ggml type number, if ffn has it.
bool weight_type_from_gguf(uint32_t gguf_type, WeightType& out);
// The types' names joined: "f32, bf16, f16, q8_0, q4_0".
std::string weight_type_names();

// What the forward of matrices of type t runs on ISA `isa` (which this CPU must support):
// the panel kernel's name and the activation format it takes.
struct WeightTypeKernel {
  std::string_view kernel;
  std::string_view arithmetic;  // "vdpbf16ps", "f32 FMA", ...
  ActivationFormat activations;
};
WeightTypeKernel weight_type_kernel(WeightType t, Isa isa);
std::string_view activation_format_name(ActivationFormat f);

}  // namespace ffn
