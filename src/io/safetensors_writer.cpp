// write_safetensors: header JSON from nlohmann::json, data converted from f32.
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

#include "core/quant.hpp"
#include "ffn/error.hpp"
#include "io/atomic_file.hpp"
#include "io/safetensors.hpp"

namespace ffn {
namespace {

// The bytes of t's values in its dtype.
std::vector<uint8_t> encode(const SafetensorsTensor& t, int64_t count, const std::string& where) {
  std::vector<uint8_t> out;
  switch (t.dtype) {
    case TensorDtype::f32:
      out.resize(static_cast<size_t>(count) * 4);
      if (count > 0) std::memcpy(out.data(), t.data, out.size());
      return out;
    case TensorDtype::f16:
    case TensorDtype::bf16:
      out.resize(static_cast<size_t>(count) * 2);
      for (int64_t i = 0; i < count; ++i) {
        const uint16_t h = t.dtype == TensorDtype::f16 ? f32_to_f16(t.data[i]) : f32_to_bf16(t.data[i]);
        out[size_t(2 * i)] = static_cast<uint8_t>(h & 0xFF);
        out[size_t(2 * i + 1)] = static_cast<uint8_t>(h >> 8);
      }
      return out;
    default:
      throw Error(where + ": only F32, F16 and BF16 can be written");
  }
}

}  // namespace

void write_safetensors(const std::string& path, const std::vector<SafetensorsTensor>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header;
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::vector<std::vector<uint8_t>> blobs;
  std::set<std::string> names;
  uint64_t offset = 0;
  for (const auto& t : tensors) {
    const std::string where = "write_safetensors '" + path + "': tensor '" + t.name + "'";
    if (t.name.empty() || t.name == "__metadata__" || !names.insert(t.name).second)
      throw Error(where + ": empty, reserved or repeated name");
    int64_t count = 1;
    for (int64_t d : t.shape) {
      if (d < 0) throw Error(where + ": negative dimension " + std::to_string(d));
      if (d != 0 && count > INT64_MAX / 4 / d) throw Error(where + ": element count overflows");
      count *= d;
    }
    if (count > 0 && !t.data) throw Error(where + ": no data");
    blobs.push_back(encode(t, count, where));
    const char* dtype = t.dtype == TensorDtype::f32 ? "F32" : t.dtype == TensorDtype::f16 ? "F16" : "BF16";
    header[t.name] = {{"dtype", dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + blobs.back().size()}}};
    offset += blobs.back().size();
  }
  std::string text = header.empty() ? "{}" : header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // data 8-byte aligned, as the reference writer does
  uint8_t length[8];
  for (int i = 0; i < 8; ++i) length[i] = static_cast<uint8_t>(uint64_t(text.size()) >> (8 * i));
  std::vector<io::Chunk> chunks{{length, 8}, {text.data(), text.size()}};
  for (const auto& b : blobs) chunks.push_back({b.data(), b.size()});
  io::write_file_atomically(path, chunks);
}

}  // namespace ffn
