// The MXFP4 layout of gpt-oss's Hugging Face release, read into ggml's MXFP4 weight type
// (internal to moe_checkpoint.cpp). The release stores a matrix W [rows][cols] (nn.Linear
// layout, cols the input width, a multiple of 32) as two U8 tensors:
//   …_blocks [E][rows][cols/32][16]: block g of row r holds W[r][32g … 32g+31] as e2m1 codes
//            (sign bit 3, then exponent and mantissa: ±0, .5, 1, 1.5, 2, 3, 4, 6); byte i
//            holds element 2i in its low nibble and element 2i+1 in its high nibble;
//   …_scales [E][rows][cols/32]: the block's e8m0 exponent s, value 2^(s − 127).
// Element = e2m1(code)·2^(s − 127), as transformers' convert_moe_packed_tensors dequantises
// it. ggml's block_mxfp4 holds the same codes and the same e8m0 byte, with byte j holding
// element j (low nibble) and element j + 16 (high nibble); its values are the doubled e2m1
// table times 2^(s − 128) — the same numbers. So the repack moves nibbles and the scale byte
// and is lossless.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/ggml_blocks.hpp"
#include "ffn/inference_block.hpp"
#include "io/tensor_source.hpp"

namespace ffn::io {

// One release block (16 code bytes, e8m0 scale byte) as ggml's block: a permutation of the
// 32 nibbles and the scale byte copied. Scale 0xFF (e8m0 NaN) is copied too: the caller
// refuses it (read_hf_mxfp4_rows names the tensor).
BlockMXFP4 mxfp4_block_from_hf(const uint8_t codes[16], uint8_t scale);

// A pair of release tensors holding one 3-D expert weight [E][rows][cols].
struct HfMxfp4Tensor {
  std::string blocks;  // …_blocks [E][rows][cols/32][16], U8
  std::string scales;  // …_scales [E][rows][cols/32], U8
};

// The shape [E, rows, cols] the pair holds, checked: both present, dtype U8, blocks 4-D with
// 16-byte blocks, scales [E][rows][cols/32] alike. ffn::Error naming the tensor otherwise.
std::vector<int64_t> hf_mxfp4_shape(const TensorSource& src, const HfMxfp4Tensor& t, const std::string& what);

// Rows first, first + step, …, first + (count − 1)·step of the pair seen as
// [E·rows][cols] (expert e's row r at e·rows + r), as an mxfp4 StoredMatrix [count][cols].
// The shape must have been checked (hf_mxfp4_shape); the bytes the file holds are checked
// against it, and a scale byte 0xFF (the e8m0 NaN, which would make every output it
// touches NaN) is an ffn::Error naming the tensor, the row and the block.
StoredMatrix read_hf_mxfp4_rows(const TensorSource& src, const HfMxfp4Tensor& t, int64_t first, int64_t step,
                                int64_t count);

}  // namespace ffn::io
