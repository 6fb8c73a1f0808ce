// ffn._core.dequantize / quantize / quant_types: ffn's row codecs of ggml's stored types for
// Python, by ggml's lower-case type names, read from the weight-type table
// (core/weight_type_table.cpp: each type's to_f32 / from_f32, which take unaligned rows), so
// that every type the table has is here. The golden suite compares them with gguf-py,
// llama.cpp's own codecs.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cctype>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "core/weight_type_table.hpp"
#include "ffn/error.hpp"

namespace py = pybind11;

namespace {

// ggml's lower-case spelling of a type's name ("q4_K" → "q4_k"), as gguf-py's names lowered.
std::string lower(std::string_view name) {
  std::string s(name);
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// One stored type: `values` values take `bytes` bytes (a block, or one scalar for f32 / f16 /
// bf16); src / dst hold n values, n a multiple of `values` (checked before the call).
struct Codec {
  std::string name;
  int64_t values, bytes;
  const ffn::WeightTypeTraits* traits;
  void dequantize(const uint8_t* src, float* dst, int64_t n) const {
    traits->to_f32(reinterpret_cast<const std::byte*>(src), dst, n);
  }
  void quantize(const float* src, uint8_t* dst, int64_t n) const {
    traits->from_f32(src, reinterpret_cast<std::byte*>(dst), n);
  }
};

const std::vector<Codec>& codecs() {
  static const std::vector<Codec> all = [] {
    std::vector<Codec> v;
    for (const ffn::WeightTypeTraits& t : ffn::weight_type_table())
      if (t.info.is_weight) v.push_back({lower(t.info.name), t.info.block_elements, t.info.block_bytes, &t});
    return v;
  }();
  return all;
}

const Codec& codec_of(const std::string& type) {
  for (const Codec& c : codecs())
    if (c.name == type) return c;
  std::string known;
  for (const Codec& c : codecs()) known += (known.empty() ? "" : ", ") + c.name;
  throw ffn::Error("unknown type '" + type + "'; known: " + known);
}

std::vector<std::string> quant_types() {
  std::vector<std::string> names;
  for (const Codec& c : codecs()) names.push_back(c.name);
  return names;
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
  m.def("quant_types", &quant_types);
}
