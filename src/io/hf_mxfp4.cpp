// gpt-oss's Hugging Face MXFP4 layout into ggml's MXFP4 blocks (hf_mxfp4.hpp).
#include "io/hf_mxfp4.hpp"

#include <cstring>

#include "ffn/error.hpp"

namespace ffn::io {
namespace {

constexpr int64_t kCodeBytes = 16;  // of one 32-element block, two e2m1 codes a byte

std::string shape_text(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

const SourceTensor& u8_tensor(const TensorSource& src, const std::string& name, const std::string& what) {
  const auto it = src.tensors().find(name);
  if (it == src.tensors().end())
    throw Error(src.path() + ": " + what + " tensor '" + name + "' is missing (the MXFP4 release stores each " +
                "expert weight as a _blocks and a _scales tensor)");
  if (it->second.dtype != "U8")
    throw Error(src.path() + ": " + what + " tensor '" + name + "' has dtype " + it->second.dtype +
                "; the MXFP4 blocks and scales are U8");
  return it->second;
}

// The 4-bit code of element k < 32 of a release block: byte k/2, low nibble for even k.
uint8_t hf_code(const uint8_t codes[16], int k) { return (codes[k / 2] >> (4 * (k % 2))) & 0xF; }

}  // namespace

BlockMXFP4 mxfp4_block_from_hf(const uint8_t codes[16], uint8_t scale) {
  BlockMXFP4 b;
  b.e = scale;
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(hf_code(codes, j) | (hf_code(codes, j + 16) << 4));
  return b;
}

std::vector<int64_t> hf_mxfp4_shape(const TensorSource& src, const HfMxfp4Tensor& t, const std::string& what) {
  const auto& blocks = u8_tensor(src, t.blocks, what + " blocks").shape;
  const auto& scales = u8_tensor(src, t.scales, what + " scales").shape;
  if (blocks.size() != 4 || blocks[3] != kCodeBytes || blocks[2] <= 0)
    throw Error(src.path() + ": " + what + " blocks tensor '" + t.blocks + "' has shape " + shape_text(blocks) +
                "; expected [experts, rows, columns/32, 16] (MXFP4 blocks of 32 e2m1 codes)");
  const std::vector<int64_t> want{blocks[0], blocks[1], blocks[2]};
  if (scales != want)
    throw Error(src.path() + ": " + what + " scales tensor '" + t.scales + "' has shape " + shape_text(scales) +
                ", but its blocks '" + t.blocks + "' " + shape_text(blocks) +
                " need one scale a block: " + shape_text(want));
  return {blocks[0], blocks[1], blocks[2] * kQuantBlock};
}

StoredMatrix read_hf_mxfp4_rows(const TensorSource& src, const HfMxfp4Tensor& t, int64_t first, int64_t step,
                                int64_t count) {
  const auto& shape = src.tensors().at(t.blocks).shape;  // [E][rows][groups][16], checked
  if (shape.size() != 4 || shape[3] != kCodeBytes)
    throw Error(src.path() + ": tensor '" + t.blocks + "' has shape " + shape_text(shape) +
                "; expected [experts, rows, columns/32, 16]");
  const int64_t all_rows = shape[0] * shape[1], groups = shape[2];
  const SourceTensor &blocks = src.tensor(t.blocks), &scales = src.tensor(t.scales);
  // The safetensors reader has checked each tensor's bytes against its shape; checked again
  // here because the reads below trust them.
  if (blocks.bytes != all_rows * groups * kCodeBytes || scales.bytes != all_rows * groups)
    throw Error(src.path() + ": MXFP4 tensors '" + t.blocks + "' (" + std::to_string(blocks.bytes) + " bytes) and '" +
                t.scales + "' (" + std::to_string(scales.bytes) + " bytes) do not hold their shape's " +
                std::to_string(all_rows * groups * kCodeBytes) + " and " + std::to_string(all_rows * groups));
  if (first < 0 || step < 1 || count < 0 || (count > 0 && first + (count - 1) * step >= all_rows))
    throw Error(src.path() + ": rows " + std::to_string(first) + " + " + std::to_string(step) + "·i (i < " +
                std::to_string(count) + ") fall outside the " + std::to_string(all_rows) + " rows of '" + t.blocks +
                "'");
  const auto* codes = reinterpret_cast<const uint8_t*>(blocks.data);
  const auto* exps = reinterpret_cast<const uint8_t*>(scales.data);
  StoredMatrix m;
  m.type = WeightType::mxfp4;
  m.rows = count;
  m.cols = groups * kQuantBlock;
  m.bytes.resize(static_cast<size_t>(count * groups) * sizeof(BlockMXFP4));
  auto* out = reinterpret_cast<BlockMXFP4*>(m.bytes.data());
  for (int64_t i = 0; i < count; ++i) {
    const int64_t row = first + i * step;
    for (int64_t g = 0; g < groups; ++g) {
      const uint8_t scale = exps[row * groups + g];
      if (scale == 0xFF)
        throw Error(src.path() + ": tensor '" + t.scales + "': expert " + std::to_string(row / shape[1]) + ", row " +
                    std::to_string(row % shape[1]) + ", block " + std::to_string(g) + " has a NaN scale (e8m0 0xff)");
      out[i * groups + g] = mxfp4_block_from_hf(codes + (row * groups + g) * kCodeBytes, scale);
    }
  }
  return m;
}

}  // namespace ffn::io
