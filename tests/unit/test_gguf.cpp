#include <gtest/gtest.h>

#include <algorithm>

#include <cmath>
#include <cstring>
#include <random>
#include <string_view>

#include "core/quant.hpp"
#include "expect_error.hpp"
#include "ffn/block.hpp"
#include "ffn/checkpoint.hpp"
#include "ffn/config.hpp"
#include "ffn/error.hpp"
#include "io/gguf.hpp"
#include "io/tensor_source.hpp"
#include "test_files.hpp"

namespace ffn {
namespace {

using test::expect_error;
using test::read_bytes;
using test::TempPath;
using test::write_bytes;

// GGUF bytes written field by field, for files the writer would never produce.
struct Bytes {
  std::vector<uint8_t> b;
  template <class T>
  Bytes& put(T v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    b.insert(b.end(), p, p + sizeof v);
    return *this;
  }
  Bytes& str(std::string_view s) {
    put<uint64_t>(s.size());
    b.insert(b.end(), s.begin(), s.end());
    return *this;
  }
  // A key and its value type; the value follows.
  Bytes& key(std::string_view k, GgufType t) { return str(k).put(static_cast<uint32_t>(t)); }
  Bytes& array(std::string_view k, GgufType element, uint64_t count) {
    return key(k, GgufType::array).put(static_cast<uint32_t>(element)).put(count);
  }
};

struct RawTensor {
  std::string name;
  std::vector<uint64_t> ne;
  uint32_t type;
  uint64_t offset;
};

// header, kv_count key-values, tensor infos, zero padding to `alignment`, then data.
std::vector<uint8_t> gguf_bytes(const Bytes& kvs, uint64_t kv_count, const std::vector<RawTensor>& tensors,
                                const std::vector<uint8_t>& data, uint32_t alignment = 32) {
  Bytes f;
  f.b = {'G', 'G', 'U', 'F'};
  f.put<uint32_t>(3).put<uint64_t>(tensors.size()).put<uint64_t>(kv_count);
  f.b.insert(f.b.end(), kvs.b.begin(), kvs.b.end());
  for (const auto& t : tensors) {
    f.str(t.name).put<uint32_t>(uint32_t(t.ne.size()));
    for (uint64_t n : t.ne) f.put(n);
    f.put(t.type).put(t.offset);
  }
  while (f.b.size() % alignment) f.b.push_back(0);
  f.b.insert(f.b.end(), data.begin(), data.end());
  return f.b;
}

template <class T>
void patch(std::vector<uint8_t>& bytes, size_t at, T v) {
  std::memcpy(bytes.data() + at, &v, sizeof v);
}

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = normal(rng);
  return v;
}

// What storing x as `type` keeps, computed with the quant.hpp primitives.
std::vector<float> stored_values(GgmlType type, const std::vector<float>& x) {
  std::vector<float> y(x.size());
  const auto n = int64_t(x.size());
  switch (type) {
    case GgmlType::f32:
      y = x;
      break;
    case GgmlType::f16:
      for (size_t i = 0; i < x.size(); ++i) y[i] = f16_to_f32(f32_to_f16(x[i]));
      break;
    case GgmlType::bf16:
      for (size_t i = 0; i < x.size(); ++i) y[i] = bf16_to_f32(f32_to_bf16(x[i]));
      break;
    case GgmlType::q8_0: {
      std::vector<BlockQ8_0> q(x.size() / 32);
      quantize_row_q8_0(x.data(), q.data(), n);
      dequantize_row_q8_0(q.data(), y.data(), n);
      break;
    }
    case GgmlType::q4_0: {
      std::vector<BlockQ4_0> q(x.size() / 32);
      quantize_row_q4_0(x.data(), q.data(), n);
      dequantize_row_q4_0(q.data(), y.data(), n);
      break;
    }
  }
  return y;
}

TEST(GgufRoundTrip, EveryTypeThroughTheWriter) {
  TempPath p("types.gguf");
  const GgmlType types[] = {GgmlType::f32, GgmlType::f16, GgmlType::bf16, GgmlType::q8_0, GgmlType::q4_0};
  const auto x = random_floats(64 * 3, 1);
  GgufWriter w;
  for (GgmlType t : types) w.add_tensor(std::string("w.") + std::string(ggml_type_name(t)), t, {64, 3}, x.data());
  w.add_tensor("odd", GgmlType::f32, {3}, x.data());  // 12 bytes: the next tensor needs padding
  w.add_tensor("empty", GgmlType::q8_0, {0, 5}, nullptr);
  w.write(p.str());

  GgufFile f(p.str());
  EXPECT_EQ(f.alignment(), 32u);
  EXPECT_EQ(f.tensors().size(), 7u);
  for (GgmlType t : types) {
    const auto& info = f.tensor(std::string("w.") + std::string(ggml_type_name(t)));
    EXPECT_EQ(info.type, t);
    EXPECT_EQ(info.ne, (std::vector<int64_t>{64, 3}));
    EXPECT_EQ(info.elements, 192);
    // The mapping starts on a page, so a data address is aligned as its file offset is.
    EXPECT_EQ(reinterpret_cast<uintptr_t>(info.data) % 32, 0u) << ggml_type_name(t);
    std::vector<float> y(192);
    f.read_f32(info.name, y.data());
    const auto want = stored_values(t, x);
    for (size_t i = 0; i < y.size(); ++i) ASSERT_EQ(y[i], want[i]) << ggml_type_name(t) << " element " << i;
  }
  EXPECT_EQ(f.tensor("w.f32").bytes, 192 * 4);
  EXPECT_EQ(f.tensor("w.bf16").bytes, 192 * 2);
  EXPECT_EQ(f.tensor("w.q8_0").bytes, 6 * 34);
  EXPECT_EQ(f.tensor("w.q4_0").bytes, 6 * 18);
  // Stored as ggml stores them: the Q4_0 bytes are quantize_row_q4_0's blocks, F16 is f32_to_f16.
  std::vector<BlockQ4_0> q4(6);
  quantize_row_q4_0(x.data(), q4.data(), 192);
  EXPECT_EQ(std::memcmp(f.tensor("w.q4_0").data, q4.data(), 6 * 18), 0);
  const uint16_t h0 = f32_to_f16(x[0]);
  EXPECT_EQ(std::memcmp(f.tensor("w.f16").data, &h0, 2), 0);
  float odd[3];
  f.read_f32("odd", odd);
  EXPECT_EQ(odd[2], x[2]);
  EXPECT_EQ(f.tensor("empty").elements, 0);
  EXPECT_EQ(f.tensor("empty").bytes, 0);
  EXPECT_EQ(read_bytes(p.str()).size() % 32, 0u);  // every tensor padded, the last one too
}

// A window of rows and columns equals that window of the whole tensor, for every type:
// block-aligned columns are decoded straight into the window, others through the blocks that
// cover them; a window outside the tensor is an error naming it. (Windows are read by the
// checkpoint loader's tensor source, io::TensorSource, over the GGUF file.)
TEST(GgufRoundTrip, WindowsMatchTheWholeTensor) {
  TempPath p("windows.gguf");
  const GgmlType types[] = {GgmlType::f32, GgmlType::f16, GgmlType::bf16, GgmlType::q8_0, GgmlType::q4_0};
  const int64_t rows = 5, cols = 96;
  const auto x = random_floats(rows * cols, 4);
  GgufWriter w;
  for (GgmlType t : types) w.add_tensor(std::string(ggml_type_name(t)), t, {cols, rows}, x.data());
  w.write(p.str());
  const io::TensorSource f(p.str());
  struct Window {
    int64_t r0, r1, c0, c1;
  };
  const Window windows[] = {{0, 5, 0, 96},  {1, 4, 32, 64}, {2, 3, 5, 70}, {0, 5, 31, 33},
                            {4, 5, 95, 96}, {3, 3, 0, 96},  {0, 5, 40, 40}};
  for (GgmlType t : types) {
    const std::string name(ggml_type_name(t));
    std::vector<float> whole(size_t(rows * cols));
    f.read_f32(name, whole.data());
    for (const Window& v : windows) {
      const int64_t width = v.c1 - v.c0;
      std::vector<float> got(size_t(std::max<int64_t>(1, (v.r1 - v.r0) * width)), -7.0f);
      f.read_f32_window(name, v.r0, v.r1, v.c0, v.c1, got.data());
      for (int64_t r = v.r0; r < v.r1; ++r)
        for (int64_t c = v.c0; c < v.c1; ++c)
          ASSERT_EQ(got[size_t((r - v.r0) * width + c - v.c0)], whole[size_t(r * cols + c)])
              << name << " row " << r << " column " << c << " of window [" << v.r0 << ", " << v.r1 << ") × [" << v.c0
              << ", " << v.c1 << ")";
      if (width == 0 || v.r1 == v.r0) {
        EXPECT_EQ(got[0], -7.0f) << name << ": an empty window writes nothing";
      }
    }
    std::vector<float> sink(size_t(rows * cols + 32));
    for (const Window& bad :
         {Window{0, 6, 0, 96}, Window{0, 5, 0, 97}, Window{-1, 2, 0, 4}, Window{0, 2, 9, 8}, Window{3, 2, 0, 4}})
      expect_error([&] { f.read_f32_window(name, bad.r0, bad.r1, bad.c0, bad.c1, sink.data()); },
                   {"has 5 rows of 96", "are not within it"});
  }
}

TEST(GgufRoundTrip, WriterMetadataAndAlignment) {
  TempPath p("meta.gguf");
  GgufWriter w;
  w.set_string("general.architecture", "llama");
  w.set_u32("llama.block_count", 32);
  w.set_u64("llama.context_length", 1ull << 40);
  w.set_f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  w.set_u32("general.alignment", 64);
  w.set_string("general.name", "first");
  w.set_string("general.name", "second");  // replaces
  const auto x = random_floats(96, 2);
  w.add_tensor("a", GgmlType::f32, {3}, x.data());
  w.add_tensor("b", GgmlType::q8_0, {32, 3}, x.data());
  w.write(p.str());

  GgufFile f(p.str());
  EXPECT_EQ(f.alignment(), 64u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(f.tensor("a").data) % 64, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(f.tensor("b").data) % 64, 0u);
  EXPECT_EQ(f.metadata_keys(), (std::vector<std::string>{"general.alignment", "general.architecture", "general.name",
                                                         "llama.attention.layer_norm_rms_epsilon", "llama.block_count",
                                                         "llama.context_length"}));
  EXPECT_EQ(f.metadata_string("general.architecture"), "llama");
  EXPECT_EQ(f.metadata_string("general.name"), "second");
  EXPECT_EQ(f.metadata_int("llama.block_count"), 32);
  EXPECT_EQ(f.metadata_info("llama.block_count")->type, GgufType::u32);
  EXPECT_EQ(f.metadata_int("llama.context_length"), int64_t(1) << 40);
  EXPECT_EQ(f.metadata_info("llama.context_length")->type, GgufType::u64);
  EXPECT_EQ(f.metadata_float("llama.attention.layer_norm_rms_epsilon"), double(1e-5f));
  // Absent, or present with another type: nullopt.
  EXPECT_EQ(f.metadata_int("missing"), std::nullopt);
  EXPECT_EQ(f.metadata_info("missing"), std::nullopt);
  EXPECT_EQ(f.metadata_string("llama.block_count"), std::nullopt);
  EXPECT_EQ(f.metadata_int("general.name"), std::nullopt);
  EXPECT_EQ(f.metadata_float("llama.block_count"), std::nullopt);
}

TEST(GgufRoundTrip, EveryMetadataTypeAndArrays) {
  Bytes kv;
  kv.key("u8", GgufType::u8).put<uint8_t>(200);
  kv.key("i8", GgufType::i8).put<int8_t>(-100);
  kv.key("u16", GgufType::u16).put<uint16_t>(60000);
  kv.key("i16", GgufType::i16).put<int16_t>(-30000);
  kv.key("u32", GgufType::u32).put<uint32_t>(4000000000u);
  kv.key("i32", GgufType::i32).put<int32_t>(-2000000000);
  kv.key("f32", GgufType::f32).put<float>(1.5f);
  kv.key("bool", GgufType::boolean).put<uint8_t>(1);
  kv.key("string", GgufType::string).str("h\xC3\xA9llo");
  kv.key("u64", GgufType::u64).put<uint64_t>(123);
  kv.key("u64.big", GgufType::u64).put<uint64_t>((1ull << 63) + 5);
  kv.key("i64", GgufType::i64).put<int64_t>(-(int64_t(1) << 62));
  kv.key("f64", GgufType::f64).put<double>(0.1);
  kv.array("a.i32", GgufType::i32, 3).put<int32_t>(1).put<int32_t>(-2).put<int32_t>(3);
  kv.array("a.u8", GgufType::u8, 2).put<uint8_t>(7).put<uint8_t>(255);
  kv.array("a.f32", GgufType::f32, 2).put<float>(0.5f).put<float>(-1.0f);
  kv.array("a.f64", GgufType::f64, 1).put<double>(2.25);
  kv.array("a.string", GgufType::string, 3).str("a").str("").str("ccc");
  kv.array("a.empty", GgufType::u64, 0);
  kv.array("a.bool", GgufType::boolean, 2).put<uint8_t>(0).put<uint8_t>(1);
  // An array of two arrays: [[1, 2], ["x"]].
  kv.array("a.nested", GgufType::array, 2);
  kv.put<uint32_t>(uint32_t(GgufType::u16)).put<uint64_t>(2).put<uint16_t>(1).put<uint16_t>(2);
  kv.put<uint32_t>(uint32_t(GgufType::string)).put<uint64_t>(1).str("x");
  TempPath p("kv.gguf");
  write_bytes(p.str(), gguf_bytes(kv, 21, {{"t", {32}, 0, 0}}, std::vector<uint8_t>(128, 0)));

  GgufFile f(p.str());
  EXPECT_EQ(f.metadata_keys().size(), 21u);
  EXPECT_EQ(f.metadata_int("u8"), 200);
  EXPECT_EQ(f.metadata_int("i8"), -100);
  EXPECT_EQ(f.metadata_int("u16"), 60000);
  EXPECT_EQ(f.metadata_int("i16"), -30000);
  EXPECT_EQ(f.metadata_int("u32"), 4000000000);
  EXPECT_EQ(f.metadata_int("i32"), -2000000000);
  EXPECT_EQ(f.metadata_float("f32"), 1.5);
  EXPECT_EQ(f.metadata_bool("bool"), true);
  EXPECT_EQ(f.metadata_string("string"), "h\xC3\xA9llo");
  EXPECT_EQ(f.metadata_int("u64"), 123);
  expect_error([&] { f.metadata_int("u64.big"); }, {"'u64.big'", "9223372036854775813", "does not fit int64"});
  EXPECT_EQ(f.metadata_int("i64"), -(int64_t(1) << 62));
  EXPECT_EQ(f.metadata_float("f64"), 0.1);
  const std::pair<const char*, GgufType> stored[] = {
      {"u8", GgufType::u8},   {"i8", GgufType::i8},   {"u16", GgufType::u16}, {"i16", GgufType::i16},
      {"u32", GgufType::u32}, {"i32", GgufType::i32}, {"f32", GgufType::f32}, {"bool", GgufType::boolean},
      {"u64", GgufType::u64}, {"i64", GgufType::i64}, {"f64", GgufType::f64}, {"string", GgufType::string}};
  for (const auto& [key, type] : stored) {
    EXPECT_EQ(f.metadata_info(key)->type, type) << key;
    EXPECT_EQ(f.metadata_info(key)->count, 1u) << key;
  }

  EXPECT_EQ(f.metadata_int_array("a.i32"), (std::vector<int64_t>{1, -2, 3}));
  EXPECT_EQ(f.metadata_int_array("a.u8"), (std::vector<int64_t>{7, 255}));
  EXPECT_EQ(f.metadata_float_array("a.f32"), (std::vector<double>{0.5, -1.0}));
  EXPECT_EQ(f.metadata_float_array("a.f64"), (std::vector<double>{2.25}));
  EXPECT_EQ(f.metadata_string_array("a.string"), (std::vector<std::string>{"a", "", "ccc"}));
  EXPECT_EQ(f.metadata_int_array("a.empty"), std::vector<int64_t>{});
  const auto info = f.metadata_info("a.string");
  EXPECT_EQ(info->type, GgufType::array);
  EXPECT_EQ(info->element_type, GgufType::string);
  EXPECT_EQ(info->count, 3u);
  const auto nested = f.metadata_info("a.nested");
  EXPECT_EQ(nested->element_type, GgufType::array);
  EXPECT_EQ(nested->count, 2u);
  EXPECT_EQ(f.metadata_int_array("a.nested"), std::nullopt);
  EXPECT_EQ(f.metadata_string_array("a.i32"), std::nullopt);
  EXPECT_EQ(f.metadata_int("a.i32"), std::nullopt);
  EXPECT_EQ(f.metadata_int_array("u8"), std::nullopt);
  // The tensor after all of it is found where it should be.
  EXPECT_EQ(f.tensor("t").elements, 32);
}

TEST(GgufRoundTrip, SmallAlignmentReadsUnalignedBlocks) {
  // general.alignment = 1 puts a Q8_0 tensor at an odd address: read through copies.
  const auto x = random_floats(32, 3);
  BlockQ8_0 q;
  quantize_row_q8_0(x.data(), &q, 32);
  std::vector<uint8_t> data(1 + 34, 0);
  std::memcpy(data.data() + 1, &q, 34);
  Bytes kv;
  kv.key("general.alignment", GgufType::u32).put<uint32_t>(1);
  TempPath p("align1.gguf");
  write_bytes(p.str(), gguf_bytes(kv, 1, {{"q", {32}, 8, 1}}, data, 1));
  GgufFile f(p.str());
  EXPECT_EQ(f.alignment(), 1u);
  float y[32], want[32];
  f.read_f32("q", y);
  dequantize_row_q8_0(&q, want, 32);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(y[i], want[i]);
}

// A small valid file with metadata of several kinds (arrays included) and two tensors whose
// data ends exactly at the end of the file, so that every shorter prefix is invalid.
std::vector<uint8_t> small_file() {
  Bytes kv;
  kv.key("general.name", GgufType::string).str("tiny");
  kv.key("general.alignment", GgufType::u32).put<uint32_t>(32);
  kv.array("tokens", GgufType::string, 2).str("<s>").str("</s>");
  kv.array("scores", GgufType::f32, 2).put<float>(0.0f).put<float>(-1.0f);
  kv.array("nested", GgufType::array, 1).put<uint32_t>(uint32_t(GgufType::i8)).put<uint64_t>(1).put<int8_t>(-1);
  std::vector<uint8_t> data(64 + 34, 0);  // f32[16], then one q8_0 block
  return gguf_bytes(kv, 5, {{"a", {4, 4}, 0, 0}, {"b", {32}, 8, 64}}, data);
}

TEST(GgufHostile, EveryTruncationIsAnError) {
  TempPath p("trunc.gguf");
  const auto full = small_file();
  write_bytes(p.str(), full);
  ASSERT_NO_THROW(GgufFile{p.str()});
  for (size_t n = 0; n < full.size(); ++n) {
    write_bytes(p.str(), std::vector<uint8_t>(full.begin(), full.begin() + std::ptrdiff_t(n)));
    try {
      GgufFile f(p.str());
      ADD_FAILURE() << "a prefix of " << n << " bytes was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(p.str()), std::string::npos) << e.what();
    }
  }
}

TEST(GgufHostile, HeaderErrors) {
  TempPath p("bad.gguf");
  const auto good = small_file();
  auto with = [&](auto edit) {
    auto bytes = good;
    edit(bytes);
    write_bytes(p.str(), bytes);
  };
  auto open = [&] { GgufFile f(p.str()); };
  with([](auto& b) { b[3] = 'L'; });
  expect_error(open, {"not a GGUF file"});
  with([](auto& b) { patch<uint32_t>(b, 4, 2); });
  expect_error(open, {"version 2 is not supported"});
  with([](auto& b) { patch<uint32_t>(b, 4, 0x03000000); });
  expect_error(open, {"big-endian"});
  with([](auto& b) { patch<uint64_t>(b, 8, 1ull << 62); });
  expect_error(open, {"tensor_count 4611686018427387904 cannot fit"});
  with([](auto& b) { patch<uint64_t>(b, 16, ~0ull); });
  expect_error(open, {"metadata_kv_count 18446744073709551615 cannot fit"});
  with([](auto& b) { patch<uint64_t>(b, 24, 1ull << 40); });  // the first key's length
  expect_error(open, {"metadata key 0 has length 1099511627776, beyond the"});
  write_bytes(p.str(), {'G', 'G', 'U', 'F', 3, 0});
  expect_error(open, {"too short for a GGUF file (6 bytes)"});
  expect_error([] { GgufFile f("/nonexistent/m.gguf"); }, {"cannot open"});
}

TEST(GgufHostile, MetadataErrors) {
  TempPath p("badkv.gguf");
  auto open_with = [&](const Bytes& kv, uint64_t count, std::initializer_list<const char*> parts) {
    write_bytes(p.str(), gguf_bytes(kv, count, {}, {}));
    expect_error([&] { GgufFile f(p.str()); }, parts);
  };
  Bytes dup;
  dup.key("k", GgufType::u8).put<uint8_t>(1).key("k", GgufType::u8).put<uint8_t>(2);
  open_with(dup, 2, {"duplicate metadata key 'k'"});
  Bytes bad_type;
  bad_type.key("k", GgufType(13)).put<uint8_t>(1);
  open_with(bad_type, 1, {"metadata 'k' has value type 13"});
  Bytes bad_bool;
  bad_bool.key("flag", GgufType::boolean).put<uint8_t>(2);
  open_with(bad_bool, 1, {"'flag'", "bool of value 2"});
  Bytes long_string;
  long_string.key("s", GgufType::string).put<uint64_t>(1000).put<uint64_t>(0);
  open_with(long_string, 1, {"metadata 's' has length 1000, beyond the"});
  Bytes long_array;
  long_array.array("a", GgufType::u32, 1ull << 61).put<uint32_t>(0);
  open_with(long_array, 1, {"element count of metadata 'a' 2305843009213693952 cannot fit"});
  Bytes long_string_array;
  long_string_array.array("a", GgufType::string, 2).str("x").put<uint64_t>(50);
  open_with(long_string_array, 1, {"metadata 'a'[1] has length 50"});
  Bytes deep;
  deep.array("deep", GgufType::array, 1);
  for (int i = 0; i < 20; ++i) deep.put<uint32_t>(uint32_t(GgufType::array)).put<uint64_t>(1);
  deep.put<uint32_t>(uint32_t(GgufType::u8)).put<uint64_t>(0);
  open_with(deep, 1, {"arrays nested deeper than 8"});
  Bytes align_type;
  align_type.key("general.alignment", GgufType::u64).put<uint64_t>(32);
  open_with(align_type, 1, {"general.alignment is u64, not u32"});
  Bytes align_value;
  align_value.key("general.alignment", GgufType::u32).put<uint32_t>(48);
  open_with(align_value, 1, {"general.alignment 48 is not a power of two"});
}

TEST(GgufHostile, TensorInfoErrors) {
  TempPath p("badtensor.gguf");
  const std::vector<uint8_t> data(128, 0);
  auto open_with = [&](const std::vector<RawTensor>& tensors, std::initializer_list<const char*> parts) {
    write_bytes(p.str(), gguf_bytes({}, 0, tensors, data));
    expect_error([&] { GgufFile f(p.str()); }, parts);
  };
  open_with({{"w", {1, 1, 1, 1, 1}, 0, 0}}, {"tensor 'w' has n_dims 5"});
  open_with({{"w", {1ull << 32, 1ull << 32}, 0, 0}}, {"tensor 'w'", "[4294967296, 4294967296] overflow"});
  open_with({{"w", {1ull << 61, 1}, 0, 0}}, {"tensor 'w'", "overflow 64 bits in bytes"});
  open_with({{"w", {~0ull}, 0, 0}}, {"ne[0] = 18446744073709551615, beyond int64"});
  // A type number without a storage geometry: a removed slot, or past ggml's table.
  open_with({{"w", {32}, 4, 0}}, {"tensor 'w' has type deprecated (4), which has no known storage layout"});
  open_with({{"w", {32}, 31, 0}}, {"tensor 'w' has type deprecated (31)", "no known storage layout"});
  open_with({{"w", {128}, 42, 0}}, {"tensor 'w' has type unknown (42)"});
  open_with({{"w", {32}, 99, 0}}, {"type unknown (99)"});
  open_with({{"w", {32}, 1000, 0}}, {"tensor 'w' has type unknown (1000), which has no known storage layout"});
  open_with({{"w", {16}, 8, 0}}, {"ne[0] = 16 is not a multiple of the block size 32"});
  open_with({{"w", {8}, 0, 128}}, {"tensor 'w' occupies data bytes [128, 128 + 32), outside the 128 bytes"});
  open_with({{"w", {33}, 0, 0}}, {"outside the 128 bytes"});
  open_with({{"w", {8}, 0, 16}}, {"tensor 'w' has offset 16, not a multiple of the alignment 32"});
  open_with({{"a", {16}, 0, 0}, {"b", {8}, 0, 32}}, {"tensors 'a' and 'b' overlap"});
  open_with({{"a", {8}, 0, 64}, {"b", {8}, 0, 0}, {"c", {8}, 1, 64}}, {"tensors 'a' and 'c' overlap"});
  open_with({{"a", {8}, 0, 0}, {"a", {8}, 0, 32}}, {"duplicate tensor name 'a'"});
  // Zero-element tensors take no bytes and overlap nothing.
  write_bytes(p.str(), gguf_bytes({}, 0, {{"a", {8}, 0, 0}, {"z", {0, 4}, 2, 0}, {"s", {}, 0, 32}}, data));
  GgufFile f(p.str());
  EXPECT_EQ(f.tensor("z").bytes, 0);
  EXPECT_EQ(f.tensor("s").elements, 1);  // n_dims 0: a scalar
  expect_error([&] { f.tensor("missing"); }, {"no tensor named 'missing'"});
  float out;
  expect_error([&] { f.read_f32("missing", &out); }, {"no tensor named 'missing'"});
}

// ---- tensors of types ffn stores but does not convert ----

// ggml's storage geometry (values per block, bytes per block) of every type it can size,
// restated from ggml.c's type_traits and ggml-common.h's block structs (QK_K = 256).
struct Geometry {
  uint32_t type;
  const char* name;
  int64_t block, bytes;
};
constexpr Geometry kGeometries[] = {
    {0, "f32", 1, 4},         {1, "f16", 1, 2},         {2, "q4_0", 32, 18},      {3, "q4_1", 32, 20},
    {6, "q5_0", 32, 22},      {7, "q5_1", 32, 24},      {8, "q8_0", 32, 34},      {9, "q8_1", 32, 36},
    {10, "q2_K", 256, 84},    {11, "q3_K", 256, 110},   {12, "q4_K", 256, 144},   {13, "q5_K", 256, 176},
    {14, "q6_K", 256, 210},   {15, "q8_K", 256, 292},   {16, "iq2_xxs", 256, 66}, {17, "iq2_xs", 256, 74},
    {18, "iq3_xxs", 256, 98}, {19, "iq1_s", 256, 50},   {20, "iq4_nl", 32, 18},   {21, "iq3_s", 256, 110},
    {22, "iq2_s", 256, 82},   {23, "iq4_xs", 256, 136}, {24, "i8", 1, 1},         {25, "i16", 1, 2},
    {26, "i32", 1, 4},        {27, "i64", 1, 8},        {28, "f64", 1, 8},        {29, "iq1_m", 256, 56},
    {30, "bf16", 1, 2},       {34, "tq1_0", 256, 54},   {35, "tq2_0", 256, 66},   {39, "mxfp4", 32, 17},
    {40, "nvfp4", 64, 36},    {41, "q1_0", 128, 18},
};

// Bytes 0, 1, 2, ... standing for a tensor already in some type's layout.
std::vector<std::byte> pattern(int64_t n) {
  std::vector<std::byte> b(static_cast<size_t>(n));
  for (size_t i = 0; i < b.size(); ++i) b[i] = std::byte(i * 7 + 3);
  return b;
}

// Every type of known geometry goes through add_tensor_bytes and back with its size and
// bytes intact; only the types ffn converts (the weight-type table's) are readable.
TEST(GgufStoredTypes, EveryKnownGeometryRoundTrips) {
  TempPath p("geometries.gguf");
  GgufWriter w;
  for (const auto& g : kGeometries) {
    const auto bytes = pattern(2 * 3 * g.bytes);
    w.add_tensor_bytes(g.name, g.type, {2 * g.block, 3}, bytes.data(), int64_t(bytes.size()));
  }
  w.write(p.str());
  GgufFile f(p.str());
  for (const auto& g : kGeometries) {
    const auto& t = f.tensor(g.name);
    EXPECT_EQ(static_cast<uint32_t>(t.type), g.type) << g.name;
    EXPECT_EQ(ggml_type_name(t.type), g.name);
    EXPECT_EQ(t.elements, 6 * g.block) << g.name;
    ASSERT_EQ(t.bytes, 6 * g.bytes) << g.name;
    EXPECT_EQ(std::memcmp(t.data, pattern(t.bytes).data(), size_t(t.bytes)), 0) << g.name;
    // Readable: the weight types of the list (ffn/weight_type_list.hpp), whose codecs convert
    // them — q8_K (an activation format only) and the types ffn has no codec for are not.
    const bool converted = std::any_of(weight_types().begin(), weight_types().end(),
                                       [&](const WeightTypeInfo& w) { return w.gguf_type == g.type; });
    EXPECT_EQ(f.readable(g.name), converted) << g.name;
  }
  EXPECT_TRUE(f.readable("q8_0") && f.readable("q4_K") && f.readable("bf16"));
  EXPECT_FALSE(f.readable("q8_K") || f.readable("q8_1") || f.readable("iq2_xxs"));
  EXPECT_FALSE(f.readable("missing"));
}

// A llama.cpp-style file: token_embd.weight in iq2_xxs (a type ffn does not read) beside
// q8_0 MLP weights. It opens, the MLP reads as before and loads as a block; only reading the
// iq2_xxs tensor is an error.
TEST(GgufStoredTypes, UnreadTokenEmbeddingBesideQ8_0Mlp) {
  TempPath p("iq2_embd.gguf");
  const int64_t D = 64, H = 96, vocab = 5;
  const auto gate = random_floats(size_t(D * H), 1), up = random_floats(size_t(D * H), 2),
             down = random_floats(size_t(H * D), 3);
  const auto embd = pattern(vocab * 66);  // ne = {256, 5}: one iq2_xxs block per row
  GgufWriter w;
  w.add_tensor_bytes("token_embd.weight", 16, {256, vocab}, embd.data(), int64_t(embd.size()));
  w.add_tensor("blk.0.ffn_gate.weight", GgmlType::q8_0, {D, H}, gate.data());
  w.add_tensor("blk.0.ffn_up.weight", GgmlType::q8_0, {D, H}, up.data());
  w.add_tensor("blk.0.ffn_down.weight", GgmlType::q8_0, {H, D}, down.data());
  w.write(p.str());

  GgufFile f(p.str());
  const auto& e = f.tensor("token_embd.weight");
  EXPECT_EQ(e.type, GgmlType(16));
  EXPECT_EQ(e.elements, 256 * vocab);
  EXPECT_EQ(e.bytes, 66 * vocab);
  EXPECT_FALSE(f.readable("token_embd.weight"));
  EXPECT_TRUE(f.readable("blk.0.ffn_up.weight"));

  std::vector<float> y(size_t(D * H));
  f.read_f32("blk.0.ffn_up.weight", y.data());
  const auto want = stored_values(GgmlType::q8_0, up);
  for (size_t i = 0; i < y.size(); ++i) ASSERT_EQ(y[i], want[i]) << "element " << i;

  std::vector<float> out(size_t(e.elements));
  expect_error([&] { f.read_f32("token_embd.weight", out.data()); },
               {p.str().c_str(), "tensor 'token_embd.weight' has type iq2_xxs (16)", "does not convert",
                "it reads F32, BF16, F16, Q8_0, Q4_0, Q6_K, Q5_K, Q4_K, Q3_K, Q2_K"});
  expect_error([&] { io::TensorSource(p.str()).read_f32_window("token_embd.weight", 0, 1, 0, 256, out.data()); },
               {p.str().c_str(), "tensor 'token_embd.weight'", "iq2_xxs", "F32, BF16, F16, Q8_0, Q4_0"});

  LoadOptions o;
  o.variant = parse_variant("swiglu");
  const Block b = Checkpoint(p.str()).load_trainable(o).block;
  EXPECT_EQ(b.config().d_model, D);
  EXPECT_EQ(b.config().hidden, H);
}

// The bounds of a tensor of a type ffn does not convert are checked with its own geometry.
TEST(GgufStoredTypes, BoundsUseTheTypesGeometry) {
  TempPath p("q4k_bounds.gguf");
  const std::vector<uint8_t> data(512, 0);
  auto open_with = [&](const std::vector<RawTensor>& tensors, std::initializer_list<const char*> parts) {
    write_bytes(p.str(), gguf_bytes({}, 0, tensors, data));
    expect_error([&] { GgufFile f(p.str()); }, parts);
  };
  open_with({{"w", {128, 2}, 12, 0}}, {"tensor 'w'", "row length ne[0] = 128 is not a multiple of the block size 256"});
  open_with({{"w", {32}, 39, 0}, {"k", {256, 4}, 12, 32}},  // 4 × 144 bytes from 32: past 512
            {"tensor 'k' occupies data bytes [32, 32 + 576), outside the 512 bytes of the data section"});
  open_with({{"w", {256, 1}, 12, 384}}, {"tensor 'w' occupies data bytes [384, 384 + 144), outside the 512"});
  open_with({{"a", {256}, 12, 0}, {"b", {256}, 14, 128}}, {"tensors 'a' and 'b' overlap (data bytes 128 to 144)"});
  open_with({{"a", {256}, 12, 16}}, {"tensor 'a' has offset 16, not a multiple of the alignment 32"});
  // 144 bytes from 0 end before 160: these two fit side by side, and mxfp4's 17-byte blocks
  // size a 64-value tensor at 34 bytes.
  write_bytes(p.str(), gguf_bytes({}, 0, {{"a", {256}, 12, 0}, {"b", {256}, 12, 160}, {"m", {64}, 39, 320}}, data));
  GgufFile f(p.str());
  EXPECT_EQ(f.tensor("b").bytes, 144);
  EXPECT_EQ(f.tensor("m").bytes, 34);
  EXPECT_EQ(f.tensor("m").data - f.tensor("a").data, 320);
}

TEST(GgufWriterErrors, TensorBytesMustMatchTheGeometry) {
  GgufWriter w;
  const auto b = pattern(4 * 144);
  expect_error(
      [&] {
        w.add_tensor_bytes("k", 12, {256, 4}, b.data(), 575);
      },
      {"tensor 'k'", "575 bytes given", "1024 values [256, 4] of q4_K take 576 bytes (144 per block of 256)"});
  expect_error([&] { w.add_tensor_bytes("k", 12, {256}, b.data(), 288); }, {"288 bytes given", "take 144 bytes"});
  expect_error(
      [&] {
        w.add_tensor_bytes("k", 12, {128, 2}, b.data(), 144);
      },
      {"tensor 'k'", "ne[0] = 128 is not a multiple of the block size 256"});
  expect_error([&] { w.add_tensor_bytes("k", 4, {32}, b.data(), 18); },
               {"tensor 'k'", "type 4 (deprecated) has no known storage layout"});
  expect_error([&] { w.add_tensor_bytes("k", 1000, {32}, b.data(), 18); }, {"type 1000 (unknown)"});
  expect_error([&] { w.add_tensor_bytes("k", 12, {256}, nullptr, 144); }, {"tensor 'k'", "no data for 144 bytes"});
  expect_error([&] { w.add_tensor_bytes("k", 12, {}, b.data(), 0); }, {"0 dimensions"});
  expect_error([&] { w.add_tensor_bytes("", 12, {256}, b.data(), 144); }, {"the name has 0 bytes"});
  w.add_tensor_bytes("k", 12, {256}, b.data(), 144);
  expect_error([&] { w.add_tensor_bytes("k", 12, {256}, b.data(), 144); }, {"tensor 'k' was already added"});
  w.add_tensor_bytes("empty", 12, {0, 3}, nullptr, 0);  // no values, no bytes
}

TEST(GgufWriterErrors, RejectsWhatGgmlCouldNotRead) {
  GgufWriter w;
  std::vector<float> x(64, 1.0f);
  expect_error(
      [&] {
        w.add_tensor("q", GgmlType::q8_0, {16, 4}, x.data());
      },
      {"tensor 'q'", "ne[0] = 16 is not a multiple of the block size 32"});
  expect_error([&] { w.add_tensor("q", GgmlType::q4_0, {48}, x.data()); }, {"not a multiple of the block size 32"});
  expect_error([&] { w.add_tensor("d", GgmlType::f32, {1, 1, 1, 1, 1}, x.data()); }, {"5 dimensions"});
  expect_error([&] { w.add_tensor("d", GgmlType::f32, {}, x.data()); }, {"0 dimensions"});
  expect_error([&] { w.add_tensor("n", GgmlType::f32, {-1}, x.data()); }, {"negative dimension in [-1]"});
  expect_error([&] { w.add_tensor(std::string(64, 'x'), GgmlType::f32, {1}, x.data()); }, {"64 bytes"});
  expect_error([&] { w.add_tensor("t", GgmlType(12), {32}, x.data()); },
               {"tensor 't'", "ne[0] = 32 is not a multiple of the block size 256"});
  std::vector<float> row(256, 1.0f);
  expect_error([&] { w.add_tensor("t", GgmlType(16), {256}, row.data()); },
               {"tensor 't'", "type 16 (iq2_xxs) is not one of F32, BF16, F16, Q8_0, Q4_0, Q6_K", "add_tensor_bytes"});
  expect_error([&] { w.add_tensor("t", GgmlType::f16, {2, 3}, nullptr); }, {"no data for 6 elements"});
  w.add_tensor("a", GgmlType::f32, {1}, x.data());
  expect_error([&] { w.add_tensor("a", GgmlType::f32, {1}, x.data()); }, {"tensor 'a' was already added"});
  x[40] = NAN;
  expect_error([&] { w.add_tensor("nan", GgmlType::q8_0, {64}, x.data()); }, {"tensor 'nan'", "element 40"});
  expect_error([&] { w.set_u32("general.alignment", 24); }, {"general.alignment 24 is not a power of two"});
  expect_error([&] { w.set_u64("general.alignment", 32); }, {"general.alignment must be a u32, not u64"});
  expect_error([&] { w.write("/nonexistent/dir/out.gguf"); }, {"/nonexistent/dir/out.gguf"});
}

TEST(GgufTypes, NamesFollowGgml) {
  EXPECT_EQ(ggml_type_name(GgmlType::f32), "f32");
  EXPECT_EQ(ggml_type_name(GgmlType::f16), "f16");
  EXPECT_EQ(ggml_type_name(GgmlType::q4_0), "q4_0");
  EXPECT_EQ(ggml_type_name(GgmlType::q8_0), "q8_0");
  EXPECT_EQ(ggml_type_name(GgmlType::bf16), "bf16");
  EXPECT_EQ(ggml_type_name(GgmlType(12)), "q4_K");
  EXPECT_EQ(ggml_type_name(GgmlType(39)), "mxfp4");
  EXPECT_EQ(ggml_type_name(GgmlType(41)), "q1_0");
  EXPECT_EQ(ggml_type_name(GgmlType(42)), "unknown");
}

// Every weight type through GGUF: the weight-type table's encoder writes a row in the
// bytes its geometry says, GgufFile checks them against ggml's geometry of the type number
// the table names, and reads back the table's exact widening of them. A table entry whose
// GGUF number or block bytes disagreed with ggml's would fail here.
TEST(GgufTypes, EveryWeightTypeRoundTripsThroughItsGgufNumber) {
  const int64_t K = 256;  // a whole block of every type
  const auto x = random_floats(K * 3, 4);
  for (const auto& t : weight_types()) {
    TempPath p("weight_type.gguf");
    GgufWriter w;
    w.add_tensor("m", static_cast<GgmlType>(t.gguf_type), {K, 3}, x.data());
    w.write(p.str());
    const GgufFile f(p.str());
    ASSERT_EQ(f.tensor("m").bytes, 3 * t.row_bytes(K)) << t.name;
    EXPECT_EQ(ggml_type_name(f.tensor("m").type), t.name);
    EXPECT_TRUE(f.readable("m")) << t.name;
    std::vector<float> back(K * 3);
    f.read_f32("m", back.data());
    Block rounded({{false, Activation::relu}, K, 3, false});
    for (int64_t i = 0; i < K * 3; ++i) rounded.weights().up.data()[i] = x[size_t(i)];
    round_weights_to(rounded, MatrixTypes{WeightType::f32, t.type, WeightType::f32});
    EXPECT_EQ(0, std::memcmp(back.data(), rounded.weights().up.data(), sizeof(float) * back.size())) << t.name;
  }
}

}  // namespace
}  // namespace ffn
