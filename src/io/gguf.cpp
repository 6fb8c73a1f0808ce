// GGUF v3 reader and writer. The reader treats the file as hostile: every read goes through
// a cursor bounded by the mapping; counts are checked against the bytes left before any loop
// (each tensor info takes ≥ 24 bytes, each key-value ≥ 13, each array element ≥ 1), nothing
// is allocated from a count alone, and metadata values stay in the mapping, decoded on
// request. Tensors must have a ggml type of known geometry (values per block, bytes per
// block), at most 4 dimensions whose element and byte counts fit 63 bits, a row length that
// is whole blocks, an aligned offset, bytes inside the data section and no overlap; only the
// types ffn converts can be read as f32, the others are an error when read.
#include "io/gguf.hpp"

#include <algorithm>
#include <cctype>
#include <array>
#include <bit>
#include <cstring>
#include <tuple>
#include <utility>
#include <vector>

#include "core/quant.hpp"
#include "core/weight_type_table.hpp"
#include "ffn/error.hpp"
#include "io/atomic_file.hpp"
#include "io/tensor_window.hpp"

namespace ffn {
namespace {

static_assert(std::endian::native == std::endian::little, "GGUF is read and written as little-endian bytes");

constexpr uint32_t kVersion = 3;
constexpr uint32_t kMaxDims = 4;         // GGML_MAX_DIMS
constexpr size_t kMaxNameBytes = 63;     // GGML_MAX_NAME (64) less the terminator
constexpr int kMaxArrayDepth = 8;        // ggml itself reads no nested arrays at all
constexpr size_t kHeaderBytes = 24;      // magic, version, tensor_count, kv_count
constexpr uint64_t kMinTensorInfo = 24;  // empty name (8), n_dims (4), type (4), offset (8)
constexpr uint64_t kMinKv = 13;          // empty key (8), value type (4), a 1-byte value

// ggml's type table (ggml.h `enum ggml_type`; geometry from the `blck_size` / `type_size` of
// ggml.c's type_traits and the block structs of ggml-common.h, QK_K = 256, a ggml_half 2
// bytes), by number: `block` values take `bytes` bytes. Removed types keep their slot with
// block 0 (no geometry: a tensor of that type cannot be sized, so a file naming one is refused),
// as is any number past the table (ggml's types added after q1_0).
struct TypeInfo {
  std::string_view name;
  int64_t block;
  int64_t bytes;
};

// q8_1 is two ggml_half and 32 quants, 36 bytes (older gguf-py releases still say 40).
// nvfp4 (40) and q1_0 (41): ggml-common.h's QK_NVFP4 = 64 in 4 + 32 bytes, QK1_0 = 128 in
// 2 + 16; numbers as llama.cpp's gguf-py 0.19 lists them.
constexpr std::array<TypeInfo, 42> kGgmlTypes = {{
    {"f32", 1, 4},         {"f16", 1, 2},         {"q4_0", 32, 18},     {"q4_1", 32, 20},
    {"deprecated", 0, 0},  {"deprecated", 0, 0},  {"q5_0", 32, 22},     {"q5_1", 32, 24},
    {"q8_0", 32, 34},      {"q8_1", 32, 36},      {"q2_K", 256, 84},    {"q3_K", 256, 110},
    {"q4_K", 256, 144},    {"q5_K", 256, 176},    {"q6_K", 256, 210},   {"q8_K", 256, 292},
    {"iq2_xxs", 256, 66},  {"iq2_xs", 256, 74},   {"iq3_xxs", 256, 98}, {"iq1_s", 256, 50},
    {"iq4_nl", 32, 18},    {"iq3_s", 256, 110},   {"iq2_s", 256, 82},   {"iq4_xs", 256, 136},
    {"i8", 1, 1},          {"i16", 1, 2},         {"i32", 1, 4},        {"i64", 1, 8},
    {"f64", 1, 8},         {"iq1_m", 256, 56},    {"bf16", 1, 2},       {"deprecated", 0, 0},
    {"deprecated", 0, 0},  {"deprecated", 0, 0},  {"tq1_0", 256, 54},   {"tq2_0", 256, 66},
    {"deprecated", 0, 0},  {"deprecated", 0, 0},  {"deprecated", 0, 0}, {"mxfp4", 32, 17},
    {"nvfp4", 64, 36},     {"q1_0", 128, 18},
}};

// Storage of a type: `block` values take `bytes` bytes.
struct TypeLayout {
  int64_t block;
  int64_t bytes;
};

// The geometry of ggml type number `type`; nullopt for a removed slot or a number past the table.
std::optional<TypeLayout> layout(uint32_t type) {
  if (type >= kGgmlTypes.size() || kGgmlTypes[type].block == 0) return std::nullopt;
  return TypeLayout{kGgmlTypes[type].block, kGgmlTypes[type].bytes};
}

// The types read_f32 and encode_tensor convert — the weight types, through the
// weight-type table's conversions; every other type is only stored.
bool converts(uint32_t type) {
  WeightType t;
  return weight_type_from_gguf(type, t);
}

const WeightTypeTraits& traits_of(uint32_t type) {
  WeightType t{};
  weight_type_from_gguf(type, t);  // the readers and the writer check converts() first
  return weight_type_traits(t);
}

// "F32, BF16, F16, Q8_0, Q4_0": the weight types, as GGUF's tools name them.
std::string converted_names() {
  std::string out;
  for (const auto& t : weight_types()) {
    out += out.empty() ? "" : ", ";
    for (const char c : t.name) out += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return out;
}

// The weight-type table's geometry of q8_0 and q4_0 (quant.hpp's structs) is ggml's.
static_assert(kGgmlTypes[8].block == kQuantBlock && kGgmlTypes[8].bytes == sizeof(BlockQ8_0));
static_assert(kGgmlTypes[2].block == kQuantBlock && kGgmlTypes[2].bytes == sizeof(BlockQ4_0));

// Bytes of a scalar metadata value; 0 for string and array.
uint64_t scalar_bytes(GgufType t) {
  switch (t) {
    case GgufType::u8: case GgufType::i8: case GgufType::boolean: return 1;
    case GgufType::u16: case GgufType::i16: return 2;
    case GgufType::u32: case GgufType::i32: case GgufType::f32: return 4;
    case GgufType::u64: case GgufType::i64: case GgufType::f64: return 8;
    case GgufType::string: case GgufType::array: return 0;
  }
  return 0;
}

std::string_view value_type_name(GgufType t) {
  constexpr std::string_view names[] = {"u8",     "i8",     "u16",   "i16", "u32", "i32", "f32",
                                        "bool",   "string", "array", "u64", "i64", "f64"};
  return names[static_cast<uint32_t>(t)];
}

bool is_int(GgufType t) {
  return t == GgufType::u8 || t == GgufType::i8 || t == GgufType::u16 || t == GgufType::i16 || t == GgufType::u32 ||
         t == GgufType::i32 || t == GgufType::u64 || t == GgufType::i64;
}

bool is_float(GgufType t) { return t == GgufType::f32 || t == GgufType::f64; }

template <class T>
T load(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

uint64_t align_up(uint64_t x, uint64_t alignment) { return (x + alignment - 1) / alignment * alignment; }

// Reads the file front to back; every read is checked against the end of the mapping.
class Cursor {
 public:
  Cursor(const std::byte* base, uint64_t size, const std::string& path) : base_(base), size_(size), path_(path) {}

  uint64_t pos() const { return pos_; }
  uint64_t left() const { return size_ - pos_; }
  const std::byte* at(uint64_t offset) const { return base_ + offset; }

  [[noreturn]] void fail(const std::string& message) const { throw Error(path_ + ": " + message); }

  // Consumes n bytes and returns their start.
  const std::byte* take(uint64_t n, const std::string& what) {
    if (n > left())
      fail("truncated at byte " + std::to_string(pos_) + ": " + what + " needs " + std::to_string(n) +
           " bytes, the file has " + std::to_string(left()) + " left");
    const std::byte* p = base_ + pos_;
    pos_ += n;
    return p;
  }
  uint32_t u32(const std::string& what) { return load<uint32_t>(take(4, what)); }
  uint64_t u64(const std::string& what) { return load<uint64_t>(take(8, what)); }
  std::string_view string(const std::string& what) {
    const uint64_t n = u64("the length of " + what);
    if (n > left())
      fail(what + " has length " + std::to_string(n) + ", beyond the " + std::to_string(left()) +
           " bytes left in the file");
    return {reinterpret_cast<const char*>(take(n, what)), static_cast<size_t>(n)};
  }
  // A count of items of at least min_bytes each must fit in what is left.
  uint64_t count(const std::string& what, uint64_t min_bytes) {
    const uint64_t n = u64(what);
    if (n > left() / min_bytes)
      fail(what + " " + std::to_string(n) + " cannot fit in the " + std::to_string(left()) +
           " bytes left in the file");
    return n;
  }

 private:
  const std::byte* base_;
  uint64_t size_;
  uint64_t pos_ = 0;
  const std::string& path_;
};

GgufType value_type(Cursor& c, const std::string& where) {
  const uint32_t t = c.u32("the value type of " + where);
  if (t > static_cast<uint32_t>(GgufType::f64))
    c.fail(where + " has value type " + std::to_string(t) + ", not a GGUF type (0..12)");
  return static_cast<GgufType>(t);
}

void skip_value(Cursor& c, GgufType type, const std::string& where, int depth);

// The elements of an array whose header (type, count) has been read.
void skip_elements(Cursor& c, GgufType type, uint64_t count, const std::string& where, int depth) {
  if (const uint64_t size = scalar_bytes(type)) {
    if (count > c.left() / size)
      c.fail(where + ": " + std::to_string(count) + " elements of " + std::string(value_type_name(type)) +
             " do not fit in the " + std::to_string(c.left()) + " bytes left in the file");
    const std::byte* p = c.take(count * size, where);
    if (type == GgufType::boolean)
      for (uint64_t i = 0; i < count; ++i)
        if (static_cast<uint8_t>(p[i]) > 1)
          c.fail(where + "[" + std::to_string(i) + "] is a bool of value " + std::to_string(uint8_t(p[i])));
    return;
  }
  for (uint64_t i = 0; i < count; ++i) skip_value(c, type, where + "[" + std::to_string(i) + "]", depth);
}

// An array's element type and count; the count is bounded by the smallest encoding of an
// element (a string's length, an array's type and count, a scalar).
std::pair<GgufType, uint64_t> array_header(Cursor& c, const std::string& where) {
  const GgufType element = value_type(c, "the elements of " + where);
  const uint64_t min = element == GgufType::string ? 8 : element == GgufType::array ? 12 : scalar_bytes(element);
  return {element, c.count("the element count of " + where, min)};
}

void skip_value(Cursor& c, GgufType type, const std::string& where, int depth) {
  if (type == GgufType::string) {
    c.string(where);
  } else if (type == GgufType::array) {
    if (depth >= kMaxArrayDepth) c.fail(where + ": arrays nested deeper than " + std::to_string(kMaxArrayDepth));
    const auto [element, count] = array_header(c, where);
    skip_elements(c, element, count, where, depth + 1);
  } else {
    skip_elements(c, type, 1, where, depth);
  }
}

// Built piecewise: GCC 12 misreports "'" + std::string(s) + "'" (-Wrestrict, its bug 105329).
std::string quoted(std::string_view s) {
  std::string out(1, '\'');
  out.append(s);
  out.push_back('\'');
  return out;
}

std::string dims_string(const std::vector<int64_t>& ne) {
  std::string out = "[";
  for (size_t i = 0; i < ne.size(); ++i) out += (i ? ", " : "") + std::to_string(ne[i]);
  return out + "]";
}

// Elements and bytes of a tensor of `type` with dimensions ne (each ≥ 0), overflow-checked.
std::pair<int64_t, int64_t> tensor_size(const std::vector<int64_t>& ne, TypeLayout l, const std::string& where) {
  int64_t elements = 1;
  for (int64_t d : ne) {
    if (d != 0 && elements > INT64_MAX / d)
      throw Error(where + ": dimensions " + dims_string(ne) + " overflow 64 bits");
    elements *= d;
  }
  const int64_t row = ne.empty() ? 1 : ne[0];
  if (row % l.block != 0)
    throw Error(where + ": row length ne[0] = " + std::to_string(row) + " is not a multiple of the block size " +
                std::to_string(l.block));
  const int64_t blocks = elements / l.block;
  // A row's bytes too (readers index rows by them), even in a tensor of no elements: ne
  // [2^61, 0] holds nothing but names rows of more bytes than 64 bits count.
  if (blocks > INT64_MAX / l.bytes || row / l.block > INT64_MAX / l.bytes)
    throw Error(where + ": dimensions " + dims_string(ne) + " overflow 64 bits in bytes");
  return {elements, blocks * l.bytes};
}

}  // namespace

std::string_view ggml_type_name(GgmlType t) {
  const auto i = static_cast<uint32_t>(t);
  return i < kGgmlTypes.size() ? kGgmlTypes[i].name : "unknown";
}

// ---- reading ----

GgufFile::GgufFile(const std::string& path) : GgufFile(MappedFile(path)) {}

GgufFile::GgufFile(MappedFile file) : file_(std::move(file)) {
  if (file_.size() < kHeaderBytes)
    throw Error(file_.path() + ": too short for a GGUF file (" + std::to_string(file_.size()) + " bytes)");
  parse();
}

void GgufFile::parse() {
  Cursor c(file_.data(), file_.size(), file_.path());
  if (std::memcmp(c.take(4, "the magic"), "GGUF", 4) != 0) c.fail("not a GGUF file (the magic is not \"GGUF\")");
  const uint32_t version = c.u32("the version");
  if (version != kVersion)
    c.fail("GGUF version " + std::to_string(version) + " is not supported (only version 3 is)" +
           (version == 0x03000000u ? "; this looks like a big-endian file" : ""));
  const uint64_t tensor_count = c.u64("tensor_count");  // checked once the metadata is read
  const uint64_t kv_count = c.count("metadata_kv_count", kMinKv);

  for (uint64_t i = 0; i < kv_count; ++i) {
    const std::string key(c.string("metadata key " + std::to_string(i)));
    const std::string where = "metadata " + quoted(key);
    if (metadata_.count(key)) c.fail("duplicate metadata key " + quoted(key));
    Value v;
    v.info.type = value_type(c, where);
    if (v.info.type == GgufType::array) {
      std::tie(v.info.element_type, v.info.count) = array_header(c, where);
      v.at = c.at(c.pos());
      skip_elements(c, v.info.element_type, v.info.count, where, 1);
    } else {
      v.at = c.at(c.pos());
      skip_value(c, v.info.type, where, 0);
    }
    metadata_.emplace(key, v);
  }
  if (const Value* a = find_value("general.alignment")) {
    if (a->info.type != GgufType::u32)
      c.fail("general.alignment is " + std::string(value_type_name(a->info.type)) + ", not u32");
    alignment_ = load<uint32_t>(a->at);
    if (!std::has_single_bit(alignment_))
      c.fail("general.alignment " + std::to_string(alignment_) + " is not a power of two");
  }

  if (tensor_count > c.left() / kMinTensorInfo)
    c.fail("tensor_count " + std::to_string(tensor_count) + " cannot fit in the " + std::to_string(c.left()) +
           " bytes after the metadata");
  std::vector<std::pair<uint64_t, GgufTensorInfo*>> offsets;
  for (uint64_t i = 0; i < tensor_count; ++i) {
    const std::string name(c.string("the name of tensor " + std::to_string(i)));
    const std::string where = "tensor " + quoted(name);
    if (tensors_.count(name)) c.fail("duplicate tensor name " + quoted(name));
    GgufTensorInfo t;
    t.name = name;
    const uint32_t n_dims = c.u32("n_dims of " + where);
    if (n_dims > kMaxDims) c.fail(where + " has n_dims " + std::to_string(n_dims) + ", more than ggml's 4");
    for (uint32_t d = 0; d < n_dims; ++d) {
      const uint64_t n = c.u64("ne[" + std::to_string(d) + "] of " + where);
      if (n > static_cast<uint64_t>(INT64_MAX))
        c.fail(where + " has ne[" + std::to_string(d) + "] = " + std::to_string(n) + ", beyond int64");
      t.ne.push_back(static_cast<int64_t>(n));
    }
    const uint32_t type = c.u32("the type of " + where);
    // Any type with a known geometry is admitted and sized by it; whether ffn converts it
    // matters only when it is read.
    const auto l = layout(type);
    if (!l)
      c.fail(where + " has type " + std::string(ggml_type_name(static_cast<GgmlType>(type))) + " (" +
             std::to_string(type) + "), which has no known storage layout (a removed or unknown ggml type)");
    t.type = static_cast<GgmlType>(type);
    try {
      std::tie(t.elements, t.bytes) = tensor_size(t.ne, *l, where);
    } catch (const Error& e) {
      c.fail(e.what());
    }
    const uint64_t offset = c.u64("the offset of " + where);
    if (offset % alignment_ != 0)
      c.fail(where + " has offset " + std::to_string(offset) + ", not a multiple of the alignment " +
             std::to_string(alignment_));
    auto& stored = tensors_.emplace(name, std::move(t)).first->second;
    offsets.push_back({offset, &stored});
  }

  // The data section starts at the next multiple of the alignment.
  const uint64_t data_start = align_up(c.pos(), alignment_);
  if (data_start > file_.size() && tensor_count > 0)
    c.fail("the data section would start at byte " + std::to_string(data_start) + ", past the end of the file (" +
           std::to_string(file_.size()) + " bytes)");
  const uint64_t data_size = data_start < file_.size() ? file_.size() - data_start : 0;
  for (auto& [offset, t] : offsets) {
    if (offset > data_size || static_cast<uint64_t>(t->bytes) > data_size - offset)
      c.fail("tensor " + quoted(t->name) + " occupies data bytes [" + std::to_string(offset) + ", " +
             std::to_string(offset) + " + " + std::to_string(t->bytes) + "), outside the " + std::to_string(data_size) +
             " bytes of the data section");
    t->data = c.at(data_start + offset);
  }
  std::stable_sort(offsets.begin(), offsets.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  const GgufTensorInfo* previous = nullptr;
  uint64_t end = 0;
  for (const auto& [offset, t] : offsets) {
    if (t->bytes == 0) continue;
    if (previous && offset < end)
      c.fail("tensors " + quoted(previous->name) + " and " + quoted(t->name) + " overlap (data bytes " +
             std::to_string(offset) + " to " + std::to_string(end) + ")");
    previous = t;
    end = offset + static_cast<uint64_t>(t->bytes);
  }
}

const GgufTensorInfo& GgufFile::tensor(const std::string& name) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) throw Error(file_.path() + ": no tensor named '" + name + "'");
  return it->second;
}

const GgufFile::Value* GgufFile::find_value(const std::string& key) const {
  auto it = metadata_.find(key);
  return it == metadata_.end() ? nullptr : &it->second;
}

namespace {

// Decodes the integer of type t at p; `where` names it for the error of a u64 above INT64_MAX.
int64_t decode_int(GgufType t, const std::byte* p, const std::string& where) {
  switch (t) {
    case GgufType::u8: return load<uint8_t>(p);
    case GgufType::i8: return load<int8_t>(p);
    case GgufType::u16: return load<uint16_t>(p);
    case GgufType::i16: return load<int16_t>(p);
    case GgufType::u32: return load<uint32_t>(p);
    case GgufType::i32: return load<int32_t>(p);
    case GgufType::i64: return load<int64_t>(p);
    case GgufType::u64: {
      const auto u = load<uint64_t>(p);
      if (u > static_cast<uint64_t>(INT64_MAX)) throw Error(where + " = " + std::to_string(u) + " does not fit int64");
      return static_cast<int64_t>(u);
    }
    default: return 0;  // callers check is_int first
  }
}

double decode_float(GgufType t, const std::byte* p) {
  return t == GgufType::f32 ? double(load<float>(p)) : load<double>(p);
}

// A string whose bounds the open-time walk has already checked.
std::string_view decode_string(const std::byte*& p) {
  const auto n = load<uint64_t>(p);
  std::string_view s(reinterpret_cast<const char*>(p + 8), static_cast<size_t>(n));
  p += 8 + n;
  return s;
}

}  // namespace

std::vector<std::string> GgufFile::metadata_keys() const {
  std::vector<std::string> keys;
  for (const auto& kv : metadata_) keys.push_back(kv.first);
  return keys;
}

std::optional<GgufValueInfo> GgufFile::metadata_info(const std::string& key) const {
  const Value* v = find_value(key);
  if (!v) return std::nullopt;
  return v->info;
}

std::optional<int64_t> GgufFile::metadata_int(const std::string& key) const {
  const Value* v = find_value(key);
  if (!v || !is_int(v->info.type)) return std::nullopt;
  return decode_int(v->info.type, v->at, file_.path() + ": metadata " + quoted(key));
}

std::optional<double> GgufFile::metadata_float(const std::string& key) const {
  const Value* v = find_value(key);
  if (!v || !is_float(v->info.type)) return std::nullopt;
  return decode_float(v->info.type, v->at);
}

std::optional<bool> GgufFile::metadata_bool(const std::string& key) const {
  const Value* v = find_value(key);
  if (!v || v->info.type != GgufType::boolean) return std::nullopt;
  return load<uint8_t>(v->at) != 0;
}

std::optional<std::string> GgufFile::metadata_string(const std::string& key) const {
  const Value* v = find_value(key);
  if (!v || v->info.type != GgufType::string) return std::nullopt;
  const std::byte* p = v->at;
  return std::string(decode_string(p));
}

std::optional<std::vector<int64_t>> GgufFile::metadata_int_array(const std::string& key) const {
  const Value* v = find_value(key);
  if (!v || v->info.type != GgufType::array || !is_int(v->info.element_type)) return std::nullopt;
  const uint64_t size = scalar_bytes(v->info.element_type);
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(v->info.count));  // bounded by the file's size at open
  for (uint64_t i = 0; i < v->info.count; ++i)
    out.push_back(decode_int(v->info.element_type, v->at + i * size,
                             file_.path() + ": metadata " + quoted(key) + "[" + std::to_string(i) + "]"));
  return out;
}

std::optional<std::vector<double>> GgufFile::metadata_float_array(const std::string& key) const {
  const Value* v = find_value(key);
  if (!v || v->info.type != GgufType::array || !is_float(v->info.element_type)) return std::nullopt;
  const uint64_t size = scalar_bytes(v->info.element_type);
  std::vector<double> out;
  out.reserve(static_cast<size_t>(v->info.count));
  for (uint64_t i = 0; i < v->info.count; ++i) out.push_back(decode_float(v->info.element_type, v->at + i * size));
  return out;
}

std::optional<std::vector<std::string>> GgufFile::metadata_string_array(const std::string& key) const {
  const Value* v = find_value(key);
  if (!v || v->info.type != GgufType::array || v->info.element_type != GgufType::string) return std::nullopt;
  std::vector<std::string> out;
  out.reserve(static_cast<size_t>(v->info.count));
  const std::byte* p = v->at;
  for (uint64_t i = 0; i < v->info.count; ++i) out.emplace_back(decode_string(p));
  return out;
}

bool GgufFile::readable(const std::string& name) const {
  auto it = tensors_.find(name);
  return it != tensors_.end() && converts(static_cast<uint32_t>(it->second.type));
}

const GgufTensorInfo& GgufFile::readable_tensor(const std::string& name) const {
  const GgufTensorInfo& t = tensor(name);
  const auto type = static_cast<uint32_t>(t.type);
  if (!converts(type))
    throw Error(file_.path() + ": tensor " + quoted(name) + " has type " + std::string(ggml_type_name(t.type)) +
                " (" + std::to_string(type) + "), which ffn does not convert to f32; it reads " + converted_names());
  return t;
}

void GgufFile::read_f32(const std::string& name, float* out) const {
  const GgufTensorInfo& t = readable_tensor(name);
  const int64_t cols = t.ne.empty() ? 1 : t.ne[0], rows = cols == 0 ? 0 : t.elements / cols;
  io::read_window(traits_of(static_cast<uint32_t>(t.type)).info.type, t.data, cols, 0, rows, 0, cols, out);
}

// ---- writing ----

namespace {

// Appends n bytes (resize and copy: GCC 12 misreports vector::insert of raw bytes).
void append_bytes(std::vector<std::byte>& out, const void* p, size_t n) {
  const size_t at = out.size();
  out.resize(at + n);
  if (n > 0) std::memcpy(out.data() + at, p, n);
}

template <class T>
void append(std::vector<std::byte>& out, T v) {
  append_bytes(out, &v, sizeof v);
}

void append_string(std::vector<std::byte>& out, const std::string& s) {
  append<uint64_t>(out, s.size());
  append_bytes(out, s.data(), s.size());
}

template <class T>
std::vector<std::byte> encode(T v) {
  std::vector<std::byte> out;
  append(out, v);
  return out;
}

// f32 values stored as `type` (the weight-type table's encoder: ggml's rounding).
std::vector<std::byte> encode_tensor(GgmlType type, const float* x, int64_t n, int64_t bytes) {
  std::vector<std::byte> out(static_cast<size_t>(bytes));
  if (n > 0) traits_of(static_cast<uint32_t>(type)).from_f32(x, out.data(), n);
  return out;
}

}  // namespace

void GgufWriter::set(const std::string& key, GgufType type, std::vector<std::byte> value) {
  if (key == "general.alignment" && type != GgufType::u32)
    throw Error("GgufWriter: general.alignment must be a u32, not " + std::string(value_type_name(type)));
  std::vector<std::byte> bytes = encode(static_cast<uint32_t>(type));
  append_bytes(bytes, value.data(), value.size());
  for (auto& [k, v] : metadata_)
    if (k == key) {
      v = std::move(bytes);
      return;
    }
  metadata_.emplace_back(key, std::move(bytes));
}

void GgufWriter::set_string(const std::string& key, const std::string& value) {
  std::vector<std::byte> bytes;
  append_string(bytes, value);
  set(key, GgufType::string, std::move(bytes));
}

void GgufWriter::set_u32(const std::string& key, uint32_t value) {
  if (key == "general.alignment") {
    if (!std::has_single_bit(value))
      throw Error("GgufWriter: general.alignment " + std::to_string(value) + " is not a power of two");
    alignment_ = value;
  }
  set(key, GgufType::u32, encode(value));
}

void GgufWriter::set_u64(const std::string& key, uint64_t value) { set(key, GgufType::u64, encode(value)); }

void GgufWriter::set_f32(const std::string& key, float value) { set(key, GgufType::f32, encode(value)); }

std::pair<int64_t, int64_t> GgufWriter::admit(const std::string& name, uint32_t type,
                                              const std::vector<int64_t>& ne) const {
  const std::string where = "GgufWriter: tensor " + quoted(name);
  if (name.empty() || name.size() > kMaxNameBytes)
    throw Error(where + ": the name has " + std::to_string(name.size()) + " bytes; ggml allows 1 to 63");
  for (const auto& t : tensors_)
    if (t.name == name) throw Error(where + " was already added");
  const auto l = layout(type);
  if (!l)
    throw Error(where + ": type " + std::to_string(type) + " (" + std::string(ggml_type_name(GgmlType(type))) +
                ") has no known storage layout");
  if (ne.empty() || ne.size() > kMaxDims)
    throw Error(where + ": " + std::to_string(ne.size()) + " dimensions; ggml takes 1 to 4");
  for (int64_t d : ne)
    if (d < 0) throw Error(where + ": negative dimension in " + dims_string(ne));
  return tensor_size(ne, *l, where);
}

void GgufWriter::add_tensor(const std::string& name, GgmlType type, std::vector<int64_t> ne, const float* data) {
  const std::string where = "GgufWriter: tensor " + quoted(name);
  const auto number = static_cast<uint32_t>(type);
  if (!converts(number))
    throw Error(where + ": type " + std::to_string(number) + " (" + std::string(ggml_type_name(type)) +
                ") is not one of " + converted_names() + "; add_tensor_bytes stores the bytes of any ggml type");
  const auto [elements, bytes] = admit(name, number, ne);
  if (elements > 0 && !data) throw Error(where + ": no data for " + std::to_string(elements) + " elements");
  try {
    tensors_.push_back({name, number, std::move(ne), encode_tensor(type, data, elements, bytes)});
  } catch (const Error& e) {
    throw Error(where + ": " + e.what());
  }
}

void GgufWriter::add_tensor_bytes(const std::string& name, uint32_t ggml_type, std::vector<int64_t> ne,
                                  const std::byte* data, int64_t bytes) {
  const std::string where = "GgufWriter: tensor " + quoted(name);
  const auto [elements, want] = admit(name, ggml_type, ne);
  if (bytes != want) {
    const auto l = *layout(ggml_type);  // admit checked it
    throw Error(where + ": " + std::to_string(bytes) + " bytes given; " + std::to_string(elements) + " values " +
                dims_string(ne) + " of " + std::string(ggml_type_name(GgmlType(ggml_type))) + " take " +
                std::to_string(want) + " bytes (" + std::to_string(l.bytes) + " per block of " +
                std::to_string(l.block) + ")");
  }
  if (bytes > 0 && !data) throw Error(where + ": no data for " + std::to_string(bytes) + " bytes");
  std::vector<std::byte> stored(static_cast<size_t>(bytes));
  if (bytes > 0) std::memcpy(stored.data(), data, stored.size());
  tensors_.push_back({name, ggml_type, std::move(ne), std::move(stored)});
}

void GgufWriter::write(const std::string& path) const {
  std::vector<std::byte> head;
  append_bytes(head, "GGUF", 4);
  append<uint32_t>(head, kVersion);
  append<uint64_t>(head, tensors_.size());
  append<uint64_t>(head, metadata_.size());
  for (const auto& [key, value] : metadata_) {
    append_string(head, key);
    append_bytes(head, value.data(), value.size());
  }
  uint64_t offset = 0;
  for (const auto& t : tensors_) {
    append_string(head, t.name);
    append<uint32_t>(head, static_cast<uint32_t>(t.ne.size()));
    for (int64_t d : t.ne) append<uint64_t>(head, static_cast<uint64_t>(d));
    append<uint32_t>(head, t.type);
    append<uint64_t>(head, offset);
    offset = align_up(offset + t.bytes.size(), alignment_);
  }
  head.resize(align_up(head.size(), alignment_), std::byte{0});

  const std::vector<std::byte> zeros(alignment_ - 1);
  std::vector<io::Chunk> chunks{{head.data(), head.size()}};
  for (const auto& t : tensors_) {
    chunks.push_back({t.bytes.data(), t.bytes.size()});
    chunks.push_back({zeros.data(), align_up(t.bytes.size(), alignment_) - t.bytes.size()});
  }
  io::write_file_atomically(path, chunks);
}

}  // namespace ffn
