#include <gtest/gtest.h>

#include <cmath>

#include "core/quant.hpp"
#include "expect_error.hpp"
#include "ffn/error.hpp"
#include "io/safetensors.hpp"
#include "test_files.hpp"

namespace ffn {
namespace {

using test::expect_error;
using test::f32_bytes;
using test::safetensors_bytes;
using test::safetensors_raw;
using test::TempPath;
using test::write_bytes;

std::vector<uint8_t> u16_bytes(const std::vector<uint16_t>& v) {
  std::vector<uint8_t> out;
  for (uint16_t h : v) {
    out.push_back(uint8_t(h & 0xFF));
    out.push_back(uint8_t(h >> 8));
  }
  return out;
}

TEST(Safetensors, ReadsF32F16Bf16AndMetadata) {
  TempPath p("ok.safetensors");
  // f16: 1.0, -2.0, 65504 (max), 2⁻²⁴ (smallest subnormal), +Inf, 0x7E00 (NaN).
  // bf16: 1.0, -0.5, 3.140625 (0x4049).
  auto bytes = safetensors_bytes({{"a", "F32", {2, 2}, f32_bytes({1.5f, -2.0f, 0.25f, 1e-30f})},
                                  {"h", "F16", {6}, u16_bytes({0x3C00, 0xC000, 0x7BFF, 0x0001, 0x7C00, 0x7E00})},
                                  {"b", "BF16", {3}, u16_bytes({0x3F80, 0xBF00, 0x4049})}});
  write_bytes(p.str(), bytes);
  SafetensorsFile f(p.str());
  EXPECT_EQ(f.tensors().size(), 3u);
  EXPECT_EQ(f.tensor("a").shape, (std::vector<int64_t>{2, 2}));
  float a[4], h[6], b[3];
  f.read_f32("a", a);
  EXPECT_EQ(a[3], 1e-30f);
  f.read_f32("h", h);
  EXPECT_EQ(h[0], 1.0f);
  EXPECT_EQ(h[1], -2.0f);
  EXPECT_EQ(h[2], 65504.0f);
  EXPECT_EQ(h[3], std::ldexp(1.0f, -24));
  EXPECT_TRUE(std::isinf(h[4]) && h[4] > 0);
  EXPECT_TRUE(std::isnan(h[5]));
  f.read_f32("b", b);
  EXPECT_EQ(b[0], 1.0f);
  EXPECT_EQ(b[1], -0.5f);
  EXPECT_EQ(b[2], 3.140625f);

  write_bytes(p.str(), safetensors_raw(R"({"__metadata__":{"format":"pt"},"x":{"dtype":"F32","shape":[],"data_offsets":[0,4]}})",
                                       f32_bytes({7.0f})));
  SafetensorsFile g(p.str());
  EXPECT_EQ(g.metadata().at("format"), "pt");
  EXPECT_EQ(g.tensor("x").elements, 1);
}

TEST(Safetensors, EveryF16BitPatternConvertsExactly) {
  // Reference conversion through a double: sign · 2^(e−15) · (1 + m/1024), subnormals
  // 2⁻¹⁴ · m/1024, Inf and NaN.
  std::vector<uint16_t> all(65536);
  for (uint32_t i = 0; i < 65536; ++i) all[i] = uint16_t(i);
  TempPath p("f16.safetensors");
  write_bytes(p.str(), safetensors_bytes({{"h", "F16", {65536}, u16_bytes(all)}}));
  std::vector<float> out(65536);
  SafetensorsFile(p.str()).read_f32("h", out.data());
  for (uint32_t i = 0; i < 65536; ++i) {
    const int e = (i >> 10) & 0x1F, m = i & 0x3FF;
    const double sign = (i & 0x8000) ? -1.0 : 1.0;
    if (e == 31) {
      ASSERT_TRUE(m ? std::isnan(out[i]) : std::isinf(out[i])) << i;
      continue;
    }
    const double want = e ? sign * std::ldexp(1.0 + m / 1024.0, e - 15) : sign * std::ldexp(m / 1024.0, -14);
    ASSERT_EQ(double(out[i]), want) << "f16 bits " << i;
    ASSERT_EQ(std::signbit(out[i]), sign < 0) << i;
  }
}

TEST(Safetensors, HostileHeadersAreErrors) {
  TempPath p("bad.safetensors");
  const auto data8 = f32_bytes({1, 2});
  auto with_header = [&](const std::string& h, const std::vector<uint8_t>& data) {
    write_bytes(p.str(), safetensors_raw(h, data));
  };
  write_bytes(p.str(), {1, 2, 3});
  expect_error([&] { SafetensorsFile f(p.str()); }, {"too short"});
  // Header length far beyond the file, and beyond 100 MB.
  write_bytes(p.str(), {0xFF, 0xFF, 0xFF, 0x00, 0, 0, 0, 0, '{', '}'});
  expect_error([&] { SafetensorsFile f(p.str()); }, {"exceeds the file"});
  write_bytes(p.str(), {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, '{', '}'});
  expect_error([&] { SafetensorsFile f(p.str()); }, {"exceeds 100 MB"});
  with_header("{not json", {});
  expect_error([&] { SafetensorsFile f(p.str()); }, {"not valid JSON"});
  with_header("[1,2]", {});
  expect_error([&] { SafetensorsFile f(p.str()); }, {"not a JSON object"});
  with_header(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,16]}})", data8);
  expect_error([&] { SafetensorsFile f(p.str()); }, {"outside the 8 data bytes"});
  with_header(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", data8);
  expect_error([&] { SafetensorsFile f(p.str()); }, {"needs 12 bytes but data_offsets span 8"});
  with_header(R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", data8);
  expect_error([&] { SafetensorsFile f(p.str()); }, {"not a non-negative integer"});
  with_header(R"({"w":{"dtype":"F32","shape":[2.5],"data_offsets":[0,8]}})", data8);
  expect_error([&] { SafetensorsFile f(p.str()); }, {"not a non-negative integer"});
  with_header(R"({"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", data8);
  expect_error([&] { SafetensorsFile f(p.str()); }, {"overflows"});
  with_header(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", data8);
  expect_error([&] { SafetensorsFile f(p.str()); }, {"outside"});
  with_header(R"({"w":{"dtype":"Q4","shape":[2],"data_offsets":[0,8]}})", data8);
  expect_error([&] { SafetensorsFile f(p.str()); }, {"unknown dtype 'Q4'"});
  with_header(R"({"w":{"dtype":"F32","shape":[2]}})", data8);
  expect_error([&] { SafetensorsFile f(p.str()); }, {"missing 'data_offsets'"});
  // Overlapping tensors, a hole, and bytes no tensor claims.
  with_header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", data8);
  expect_error([&] { SafetensorsFile f(p.str()); }, {"overlap"});
  with_header(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", data8);
  expect_error([&] { SafetensorsFile f(p.str()); }, {"hole"});
  with_header(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", data8);
  expect_error([&] { SafetensorsFile f(p.str()); }, {"cover 4 of the 8"});
  with_header(R"({"__metadata__":{"k":1}})", {});
  expect_error([&] { SafetensorsFile f(p.str()); }, {"__metadata__"});
  expect_error([&] { SafetensorsFile f("/nonexistent/w.safetensors"); }, {"cannot open"});
}

TEST(Safetensors, WriteThenReadEveryDtype) {
  TempPath p("written.safetensors");
  const std::vector<float> w{1.0f, -2.5f, 3.1415926f, 1e-6f, 65504.0f, -0.0f};
  write_safetensors(p.str(),
                    {{"a.weight", TensorDtype::f32, {2, 3}, w.data()},
                     {"a.half", TensorDtype::f16, {6}, w.data()},
                     {"a.brain", TensorDtype::bf16, {3, 2}, w.data()},
                     {"empty", TensorDtype::f32, {0, 4}, nullptr}},
                    {{"format", "pt"}});
  SafetensorsFile f(p.str());
  EXPECT_EQ(f.metadata().at("format"), "pt");
  EXPECT_EQ(f.tensor("a.brain").shape, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(f.tensor("empty").elements, 0);
  std::vector<float> out(6);
  f.read_f32("a.weight", out.data());
  EXPECT_EQ(out, w);
  f.read_f32("a.half", out.data());
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(out[i], f16_to_f32(f32_to_f16(w[i])));
  f.read_f32("a.brain", out.data());
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(out[i], bf16_to_f32(f32_to_bf16(w[i])));
  // The data section starts 8-byte aligned.
  const auto bytes = test::read_bytes(p.str());
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | bytes[size_t(i)];
  EXPECT_EQ((8 + header_len) % 8, 0u);

  expect_error([&] { write_safetensors(p.str(), {{"x", TensorDtype::f32, {1}, w.data()}, {"x", TensorDtype::f32, {1}, w.data()}}); },
               {"repeated"});
  expect_error([&] { write_safetensors(p.str(), {{"x", TensorDtype::f32, {-1}, w.data()}}); }, {"negative"});
  expect_error([&] { write_safetensors(p.str(), {{"x", TensorDtype::i32, {1}, w.data()}}); }, {"F32, F16 and BF16"});
  // A failed write leaves the previous file whole.
  EXPECT_EQ(SafetensorsFile(p.str()).tensors().size(), 4u);
}

TEST(Safetensors, UnsupportedDtypeForWeightsIsNamed) {
  TempPath p("i32.safetensors");
  write_bytes(p.str(), safetensors_raw(R"({"w":{"dtype":"I32","shape":[2],"data_offsets":[0,8]}})", f32_bytes({1, 2})));
  SafetensorsFile f(p.str());
  float out[2];
  expect_error([&] { f.read_f32("w", out); }, {"dtype I32"});
  expect_error([&] { f.read_f32("missing", out); }, {"no tensor named 'missing'"});
}

}  // namespace
}  // namespace ffn
