// The codec of every type of the weight-type list (internal), declared here from the list and
// defined beside each format's layout (codecs_float.cpp, quant.cpp, ggml_blocks_32.cpp,
// ggml_blocks_k.cpp, ggml_blocks_ternary.cpp): the weight-type table points at them, so a
// type whose codec is missing does not link.
//   decode<W>(row, out, n)  one row of n values in W's stored layout (ggml's, byte for byte) to
//                           f32, exactly as ggml's dequantize_row_<t> (so bit for bit what
//                           ggml and gguf-py compute); n a multiple of W's block; the row need
//                           not be aligned;
//   encode<W>(x, row, n)    the reverse, rounding as ggml's reference quantiser does (ffn::Error
//                           on a non-finite value or an overflowing scale of a block type);
//   unpack<W>(block, out)   (qsub types only) one block as the integers of the qsub panels
//                           (kernels/qsub_panels.hpp), for packing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "ffn/weight_type.hpp"

namespace ffn {

// One block of a qsub type as the integers of kernels/qsub_panels.hpp: value i of sub-block
// u is d·sc[u]·(q[i] − offset) − dmin·m[u] (d, dmin binary16 bits; m and dmin zero for the
// types without mins). For the codebook types q[i] is the nibble whose codebook entry is the
// value's code, and MXFP4's d its e8m0 byte. Values beyond the type's block stay zero.
struct SubBlockInts {
  uint16_t d = 0, dmin = 0;
  int8_t sc[16] = {};
  uint8_t m[16] = {};
  uint8_t q[256] = {};
};

template <WeightType W>
void decode(const std::byte* row, float* out, int64_t n);
template <WeightType W>
void encode(const float* x, std::byte* row, int64_t n);
template <WeightType W>
void unpack(const std::byte* block, SubBlockInts& out);

#define FFN_DECLARE_CODEC(name, ...)                                          \
  template <>                                                                 \
  void decode<WeightType::name>(const std::byte* row, float* out, int64_t n); \
  template <>                                                                 \
  void encode<WeightType::name>(const float* x, std::byte* row, int64_t n);   \
  template <>                                                                 \
  void unpack<WeightType::name>(const std::byte* block, SubBlockInts& out);
FFN_WEIGHT_TYPES(FFN_DECLARE_CODEC)
#undef FFN_DECLARE_CODEC

namespace codec_detail {

// A row of ggml blocks through typed (de)quantisers: the whole row at once (errors name the
// element of the row), through a copy, since the row need not be aligned for Block.
template <class Block, void (*Quantize)(const float*, Block*, int64_t), int64_t Elements>
void encode_blocks(const float* x, std::byte* row, int64_t n) {
  std::vector<Block> blocks(static_cast<size_t>(n / Elements));
  Quantize(x, blocks.data(), n);
  if (n > 0) std::memcpy(row, blocks.data(), blocks.size() * sizeof(Block));
}
template <class Block, void (*Dequantize)(const Block*, float*, int64_t), int64_t Elements>
void decode_blocks(const std::byte* row, float* out, int64_t n) {
  for (int64_t b = 0; b < n / Elements; ++b) {
    Block blk;
    std::memcpy(&blk, row + b * int64_t(sizeof(Block)), sizeof blk);
    Dequantize(&blk, out + b * Elements, Elements);
  }
}
template <class Block>
Block read_block(const std::byte* p) {
  Block b;
  std::memcpy(&b, p, sizeof b);
  return b;
}

}  // namespace codec_detail

// decode<W> and encode<W> of a ggml block type whose typed codec is dequantize_row_<name> /
// quantize_row_<name> over Block (in a codec file, namespace ffn).
#define FFN_BLOCK_CODEC(name, Block, Elements)                                        \
  template <>                                                                         \
  void decode<WeightType::name>(const std::byte* row, float* out, int64_t n) {        \
    codec_detail::decode_blocks<Block, dequantize_row_##name, Elements>(row, out, n); \
  }                                                                                   \
  template <>                                                                         \
  void encode<WeightType::name>(const float* x, std::byte* row, int64_t n) {          \
    codec_detail::encode_blocks<Block, quantize_row_##name, Elements>(x, row, n);     \
  }

}  // namespace ffn
