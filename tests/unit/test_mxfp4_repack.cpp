// The repack of gpt-oss's Hugging Face MXFP4 layout into ggml's MXFP4 blocks (io/hf_mxfp4):
// checked against the release's definition written here from scratch — element 2i is the
// low nibble of byte i, 2i+1 the high one, value e2m1(code)·2^(s − 127) — through ggml's
// dequantisation (dequantize_row_mxfp4), bit for bit (−0 aside), for every scale byte
// 0 … 254; each element's position alone (a swapped nibble order or block half shows at
// once); and the row selection, shape checks and NaN-scale refusal of the reading over an
// in-memory source.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <vector>

#include "core/ggml_blocks.hpp"
#include "expect_error.hpp"
#include "io/hf_mxfp4.hpp"
#include "io/tensor_source.hpp"

namespace ffn {
namespace {

// e2m1: bit 3 the sign, bits 2–1 the exponent, bit 0 the mantissa (OCP MX spec).
double e2m1_value(uint8_t code) {
  static const double magnitude[8] = {0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0};
  return (code & 8 ? -1.0 : 1.0) * magnitude[code & 7];
}

// Element k of a release block, as the release defines it (in double: exact here).
double hf_element(const uint8_t codes[16], uint8_t scale, int k) {
  const uint8_t code = k % 2 == 0 ? codes[k / 2] & 0xF : codes[k / 2] >> 4;
  return std::ldexp(e2m1_value(code), int(scale) - 127);
}

std::vector<float> ggml_values(const BlockMXFP4& b) {
  std::vector<float> y(32);
  dequantize_row_mxfp4(&b, y.data(), 32);
  return y;
}

TEST(Mxfp4Repack, EveryScaleAndRandomCodesDequantiseToTheReleaseValues) {
  std::mt19937 rng(7);
  for (int s = 0; s <= 254; ++s)
    for (int trial = 0; trial < 8; ++trial) {
      uint8_t codes[16];
      for (auto& c : codes) c = static_cast<uint8_t>(rng());
      const BlockMXFP4 b = io::mxfp4_block_from_hf(codes, static_cast<uint8_t>(s));
      EXPECT_EQ(b.e, s);  // the e8m0 byte moves as it is
      const std::vector<float> y = ggml_values(b);
      for (int k = 0; k < 32; ++k) {
        const float want = static_cast<float>(hf_element(codes, static_cast<uint8_t>(s), k));
        // f32 holds every value exactly, the smallest (0.5·2^−127) as a subnormal: bits equal.
        // Except code 8, −0 in the release's table: ggml's integer table has no −0, so it
        // decodes to +0 — the same value, and no sum it enters changes.
        if (want == 0.0f) {
          ASSERT_EQ(y[k], 0.0f) << "scale " << s << ", element " << k;
          continue;
        }
        uint32_t got_bits, want_bits;
        std::memcpy(&got_bits, &y[k], 4);
        std::memcpy(&want_bits, &want, 4);
        ASSERT_EQ(got_bits, want_bits) << "scale " << s << ", element " << k;
      }
    }
}

TEST(Mxfp4Repack, EachElementLandsInItsPlace) {
  for (int k = 0; k < 32; ++k) {
    uint8_t codes[16] = {};
    codes[k / 2] = static_cast<uint8_t>(k % 2 == 0 ? 0x7 : 0x70);  // 6.0 at element k, zeros elsewhere
    const std::vector<float> y = ggml_values(io::mxfp4_block_from_hf(codes, 127));
    for (int j = 0; j < 32; ++j) EXPECT_EQ(y[j], j == k ? 6.0f : 0.0f) << "element " << k << ", position " << j;
  }
}

// The tensors of one expert weight pair, in memory, seen as the checkpoint loader's tensor
// source lists a safetensors file's U8 tensors. A tensor added again replaces the first; the
// source is made afresh over the bytes each time the readers are handed it.
class MemorySource {
 public:
  void add(const std::string& name, std::vector<int64_t> shape, std::string dtype, std::vector<uint8_t> bytes) {
    tensors_[name] = {std::move(shape), std::move(dtype), std::nullopt, nullptr, 0};
    bytes_[name] = std::move(bytes);
  }
  operator const io::TensorSource&() const {
    std::map<std::string, io::SourceTensor> tensors = tensors_;
    for (auto& [name, t] : tensors) {
      const auto& b = bytes_.at(name);
      t.data = reinterpret_cast<const std::byte*>(b.data());
      t.bytes = static_cast<int64_t>(b.size());
    }
    source_ = std::make_unique<io::TensorSource>("memory", std::move(tensors));
    return *source_;
  }

 private:
  std::map<std::string, io::SourceTensor> tensors_;
  std::map<std::string, std::vector<uint8_t>> bytes_;
  mutable std::unique_ptr<io::TensorSource> source_;
};

// E experts of `rows` rows of `groups` blocks, random codes and scales 120 … 130.
MemorySource release_pair(int64_t E, int64_t rows, int64_t groups, std::vector<uint8_t>& codes,
                          std::vector<uint8_t>& scales) {
  std::mt19937 rng(11);
  codes.resize(static_cast<size_t>(E * rows * groups * 16));
  scales.resize(static_cast<size_t>(E * rows * groups));
  for (auto& c : codes) c = static_cast<uint8_t>(rng());
  for (auto& s : scales) s = static_cast<uint8_t>(120 + rng() % 11);
  MemorySource src;
  src.add("w_blocks", {E, rows, groups, 16}, "U8", codes);
  src.add("w_scales", {E, rows, groups}, "U8", scales);
  return src;
}

TEST(Mxfp4Repack, RowsOfOneExpertAtAStride) {
  const int64_t E = 3, rows = 6, groups = 2;
  std::vector<uint8_t> codes, scales;
  const MemorySource src = release_pair(E, rows, groups, codes, scales);
  const io::HfMxfp4Tensor pair{"w_blocks", "w_scales"};
  EXPECT_EQ(io::hf_mxfp4_shape(src, pair, "w"), (std::vector<int64_t>{E, rows, groups * 32}));
  // Expert 1's odd rows (gpt-oss's up rows of gate_up): file rows 7, 9, 11.
  const StoredMatrix m = io::read_hf_mxfp4_rows(src, pair, 1 * rows + 1, 2, rows / 2);
  ASSERT_EQ(m.type, WeightType::mxfp4);
  ASSERT_EQ(m.rows, rows / 2);
  ASSERT_EQ(m.cols, groups * 32);
  const Matrix f = m.decode();
  for (int64_t i = 0; i < m.rows; ++i) {
    const int64_t row = rows + 1 + 2 * i;
    for (int64_t c = 0; c < m.cols; ++c) {
      const int64_t g = c / 32;
      const double want = hf_element(&codes[static_cast<size_t>((row * groups + g) * 16)],
                                     scales[static_cast<size_t>(row * groups + g)], static_cast<int>(c % 32));
      ASSERT_EQ(f.row(i)[c], static_cast<float>(want)) << "row " << i << ", column " << c;
    }
  }
}

TEST(Mxfp4Repack, ANanScaleIsAnErrorNamingTheTensorExpertRowAndBlock) {
  std::vector<uint8_t> codes, scales;
  MemorySource src = release_pair(2, 4, 3, codes, scales);
  scales[(1 * 4 + 2) * 3 + 1] = 0xFF;  // expert 1, row 2, block 1
  src.add("w_scales", {2, 4, 3}, "U8", scales);
  test::expect_error(
      [&] {
        io::read_hf_mxfp4_rows(src, {"w_blocks", "w_scales"}, 4, 1, 4);
      },
      {"w_scales", "expert 1, row 2, block 1", "NaN", "0xff"});
  // Rows that do not touch it read.
  EXPECT_EQ(io::read_hf_mxfp4_rows(src, {"w_blocks", "w_scales"}, 0, 1, 4).rows, 4);
}

TEST(Mxfp4Repack, ShapesAndDtypesAreChecked) {
  std::vector<uint8_t> codes, scales;
  const io::HfMxfp4Tensor pair{"w_blocks", "w_scales"};
  {
    MemorySource src = release_pair(2, 4, 3, codes, scales);
    src.add("w_scales", {2, 4, 2}, "U8", std::vector<uint8_t>(16));
    test::expect_error([&] { io::hf_mxfp4_shape(src, pair, "expert down"); },
                       {"expert down scales", "'w_scales'", "[2, 4, 2]", "[2, 4, 3]"});
  }
  {
    MemorySource src = release_pair(2, 4, 3, codes, scales);
    src.add("w_blocks", {2, 4, 3, 8}, "U8", std::vector<uint8_t>(2 * 4 * 3 * 8));
    test::expect_error([&] { io::hf_mxfp4_shape(src, pair, "w"); }, {"'w_blocks'", "[2, 4, 3, 8]", "16]"});
  }
  {
    MemorySource src = release_pair(2, 4, 3, codes, scales);
    src.add("w_scales", {2, 4, 3}, "F32", std::vector<uint8_t>(2 * 4 * 3 * 4));
    test::expect_error([&] { io::hf_mxfp4_shape(src, pair, "w"); }, {"'w_scales'", "dtype F32", "U8"});
  }
  {
    MemorySource src;
    src.add("w_blocks", {1, 1, 1, 16}, "U8", std::vector<uint8_t>(16));
    test::expect_error([&] { io::hf_mxfp4_shape(src, pair, "w"); }, {"'w_scales'", "missing"});
  }
  {
    // Fewer bytes than the shape needs (a source that did not check them): refused, not read.
    MemorySource src = release_pair(2, 4, 3, codes, scales);
    src.add("w_blocks", {2, 4, 3, 16}, "U8", std::vector<uint8_t>(10));
    test::expect_error([&] { io::read_hf_mxfp4_rows(src, pair, 0, 1, 4); }, {"'w_blocks'", "10 bytes"});
  }
}

}  // namespace
}  // namespace ffn
