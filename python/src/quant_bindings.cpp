// ffn._core.dequantize / quantize: ffn's row codecs of ggml's stored types for Python, by ggml's
// lower-case type names. The golden suite compares them with gguf-py, llama.cpp's own codecs.
// A small name → codec table here until the weight-type table (core/weight_type_table.cpp)
// carries the ggml block types itself.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "core/ggml_blocks.hpp"
#include "ffn/error.hpp"
#include "ffn/quant.hpp"

namespace py = pybind11;

namespace {

// One stored type: `values` values take `bytes` bytes (a block, or one scalar for f32 / f16 /
// bf16). src / dst hold n values, n a multiple of `values` (checked before the call).
struct Codec {
  std::string_view name;
  int64_t values, bytes;
  void (*dequantize)(const uint8_t* src, float* dst, int64_t n);
  void (*quantize)(const float* src, uint8_t* dst, int64_t n);
};

// The block codecs take aligned Block arrays; Python's bytes need not be aligned, so the
// blocks are copied through a vector of Block.
template <class Block, void (*Dequantize)(const Block*, float*, int64_t), int64_t Values>
void dequantize_blocks(const uint8_t* src, float* dst, int64_t n) {
  std::vector<Block> blocks(size_t(n / Values));
  if (!blocks.empty()) std::memcpy(blocks.data(), src, blocks.size() * sizeof(Block));
  Dequantize(blocks.data(), dst, n);
}

template <class Block, void (*Quantize)(const float*, Block*, int64_t), int64_t Values>
void quantize_blocks(const float* src, uint8_t* dst, int64_t n) {
  std::vector<Block> blocks(size_t(n / Values));
  Quantize(src, blocks.data(), n);
  if (!blocks.empty()) std::memcpy(dst, blocks.data(), blocks.size() * sizeof(Block));
}

template <class Block, int64_t Values, void (*Dequantize)(const Block*, float*, int64_t),
          void (*Quantize)(const float*, Block*, int64_t)>
constexpr Codec block_codec(std::string_view name) {
  return {name, Values, int64_t(sizeof(Block)), dequantize_blocks<Block, Dequantize, Values>,
          quantize_blocks<Block, Quantize, Values>};
}

void f32_dequantize(const uint8_t* src, float* dst, int64_t n) { std::memcpy(dst, src, size_t(n) * 4); }
void f32_quantize(const float* src, uint8_t* dst, int64_t n) { std::memcpy(dst, src, size_t(n) * 4); }
void f16_dequantize(const uint8_t* src, float* dst, int64_t n) {
  ffn::f16_bytes_to_f32(reinterpret_cast<const std::byte*>(src), dst, n);
}
void bf16_dequantize(const uint8_t* src, float* dst, int64_t n) {
  ffn::bf16_bytes_to_f32(reinterpret_cast<const std::byte*>(src), dst, n);
}
template <uint16_t (*Convert)(float)>
void half_quantize(const float* src, uint8_t* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t h = Convert(src[i]);
    std::memcpy(dst + 2 * i, &h, 2);  // little-endian, as GGUF stores it
  }
}

const Codec kCodecs[] = {
    {"f32", 1, 4, f32_dequantize, f32_quantize},
    {"f16", 1, 2, f16_dequantize, half_quantize<ffn::f32_to_f16>},
    {"bf16", 1, 2, bf16_dequantize, half_quantize<ffn::f32_to_bf16>},
    block_codec<ffn::BlockQ8_0, 32, ffn::dequantize_row_q8_0, ffn::quantize_row_q8_0>("q8_0"),
    block_codec<ffn::BlockQ4_0, 32, ffn::dequantize_row_q4_0, ffn::quantize_row_q4_0>("q4_0"),
    block_codec<ffn::BlockQ4_1, 32, ffn::dequantize_row_q4_1, ffn::quantize_row_q4_1>("q4_1"),
    block_codec<ffn::BlockQ5_0, 32, ffn::dequantize_row_q5_0, ffn::quantize_row_q5_0>("q5_0"),
    block_codec<ffn::BlockQ5_1, 32, ffn::dequantize_row_q5_1, ffn::quantize_row_q5_1>("q5_1"),
    block_codec<ffn::BlockIQ4_NL, 32, ffn::dequantize_row_iq4_nl, ffn::quantize_row_iq4_nl>("iq4_nl"),
    block_codec<ffn::BlockQ2_K, 256, ffn::dequantize_row_q2_K, ffn::quantize_row_q2_K>("q2_k"),
    block_codec<ffn::BlockQ3_K, 256, ffn::dequantize_row_q3_K, ffn::quantize_row_q3_K>("q3_k"),
    block_codec<ffn::BlockQ4_K, 256, ffn::dequantize_row_q4_K, ffn::quantize_row_q4_K>("q4_k"),
    block_codec<ffn::BlockQ5_K, 256, ffn::dequantize_row_q5_K, ffn::quantize_row_q5_K>("q5_k"),
    block_codec<ffn::BlockQ6_K, 256, ffn::dequantize_row_q6_K, ffn::quantize_row_q6_K>("q6_k"),
    block_codec<ffn::BlockIQ4_XS, 256, ffn::dequantize_row_iq4_xs, ffn::quantize_row_iq4_xs>("iq4_xs"),
};

const Codec& codec_of(const std::string& type) {
  for (const Codec& c : kCodecs)
    if (c.name == type) return c;
  std::string known;
  for (const Codec& c : kCodecs) known += (known.empty() ? "" : ", ") + std::string(c.name);
  throw ffn::Error("unknown type '" + type + "'; known: " + known);
}

// An ffn::Error naming `what` unless n values are whole blocks of c.
void require_whole_blocks(const Codec& c, int64_t n, const char* what) {
  if (n < 0 || n % c.values != 0)
    throw ffn::Error(std::string(what) + ": " + std::string(c.name) + " stores values in blocks of " +
                     std::to_string(c.values) + "; n = " + std::to_string(n) + " is not a non-negative multiple");
}

// raw: any C-contiguous buffer of unsigned bytes (bytes, bytearray, a uint8 NumPy array).
py::array_t<float> dequantize(const py::buffer& raw, const std::string& type, int64_t n) {
  const Codec& c = codec_of(type);
  require_whole_blocks(c, n, "dequantize");
  const py::buffer_info info = raw.request();
  if (info.itemsize != 1 || (info.format != "B" && info.format != "c"))
    throw ffn::Error("dequantize: raw must hold unsigned bytes (bytes or a uint8 array), got format '" + info.format +
                     "'");
  py::ssize_t stride = 1;
  for (py::ssize_t k = info.ndim; k-- > 0; stride *= info.shape[k])
    if (info.shape[k] > 1 && info.strides[k] != stride) throw ffn::Error("dequantize: raw must be C-contiguous");
  const int64_t want = n / c.values * c.bytes;
  if (int64_t(info.size) != want)
    throw ffn::Error("dequantize: " + std::to_string(n) + " " + std::string(c.name) + " values take " +
                     std::to_string(want) + " bytes, raw has " + std::to_string(info.size));
  py::array_t<float> out(n);
  c.dequantize(static_cast<const uint8_t*>(info.ptr), out.mutable_data(), n);
  return out;
}

// x: float32 [n] or [rows, n] (converted to float32 C order when it is not); each row is
// quantised on its own, as ggml quantises a tensor row by row. Returns uint8 [bytes] or
// [rows, bytes per row].
py::array_t<uint8_t> quantize(const py::array_t<float, py::array::c_style | py::array::forcecast>& x,
                              const std::string& type) {
  const Codec& c = codec_of(type);
  if (x.ndim() != 1 && x.ndim() != 2)
    throw ffn::Error("quantize: x must be 1-D (one row) or 2-D (rows), got " + std::to_string(x.ndim()) +
                     " dimensions");
  const int64_t rows = x.ndim() == 2 ? x.shape(0) : 1;
  const int64_t n = x.shape(x.ndim() - 1);
  require_whole_blocks(c, n, "quantize");
  const int64_t row_bytes = n / c.values * c.bytes;
  py::array_t<uint8_t> out = x.ndim() == 2 ? py::array_t<uint8_t>({rows, row_bytes}) : py::array_t<uint8_t>(row_bytes);
  for (int64_t r = 0; r < rows; ++r) c.quantize(x.data() + r * n, out.mutable_data() + r * row_bytes, n);
  return out;
}

}  // namespace

void bind_quant(py::module_& m) {
  m.def("dequantize", &dequantize, py::arg("raw"), py::arg("type"), py::arg("n"));
  m.def("quantize", &quantize, py::arg("x"), py::arg("type"));
}
