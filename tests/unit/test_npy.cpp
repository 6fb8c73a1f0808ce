#include <gtest/gtest.h>

#include <cstring>

#include "expect_error.hpp"
#include "ffn/error.hpp"
#include "io/npy.hpp"
#include "test_files.hpp"

namespace ffn {
namespace {

using test::expect_error;
using test::read_bytes;
using test::TempPath;
using test::write_bytes;

std::vector<uint8_t> npy_v1(const std::string& dict, size_t data_bytes) {
  std::string header = dict;
  while ((10 + header.size() + 1) % 64 != 0) header.push_back(' ');
  header.push_back('\n');
  std::vector<uint8_t> out{0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, uint8_t(header.size() & 0xFF), uint8_t(header.size() >> 8)};
  out.insert(out.end(), header.begin(), header.end());
  out.resize(out.size() + data_bytes, 0);
  return out;
}

TEST(Npy, RoundTripShapes) {
  TempPath p("round.npy");
  const std::vector<std::vector<int64_t>> shapes{{3, 4}, {5}, {}, {0, 7}, {2, 1, 3}};
  for (const auto& shape : shapes) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    std::vector<float> v(static_cast<size_t>(n));
    for (size_t i = 0; i < v.size(); ++i) v[i] = float(i) * 0.5f - 1.0f;
    write_npy(p.str(), shape, v.data());
    const NpyArray a = read_npy(p.str());
    EXPECT_EQ(a.shape, shape);
    ASSERT_EQ(a.data.size(), n);
    for (int64_t i = 0; i < n; ++i) EXPECT_EQ(a.data.data()[i], v[size_t(i)]);
    // Data starts on a 64-byte boundary, as numpy writes it.
    EXPECT_EQ((read_bytes(p.str()).size() - size_t(n) * 4) % 64, 0u);
  }
}

TEST(Npy, ReadsHeadersWrittenByNumpy) {
  TempPath p("numpy.npy");
  write_bytes(p.str(), npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 24));
  EXPECT_EQ(read_npy(p.str()).shape, (std::vector<int64_t>{2, 3}));
  write_bytes(p.str(), npy_v1("{\"descr\":\"<f4\",\"fortran_order\":False,\"shape\":(6,)}", 24));
  EXPECT_EQ(read_npy(p.str()).shape, (std::vector<int64_t>{6}));
}

TEST(Npy, RejectsWhatItCannotReadExactly) {
  TempPath p("bad.npy");
  write_bytes(p.str(), npy_v1("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", 16));
  expect_error([&] { read_npy(p.str()); }, {"'<f8'"});
  write_bytes(p.str(), npy_v1("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", 8));
  expect_error([&] { read_npy(p.str()); }, {"'>f4'"});
  write_bytes(p.str(), npy_v1("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", 16));
  expect_error([&] { read_npy(p.str()); }, {"Fortran"});
  // Shape claims more data than the file holds (and a shape whose byte count overflows).
  write_bytes(p.str(), npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (1000, 1000), }", 16));
  expect_error([&] { read_npy(p.str()); }, {"4000000 data bytes but the file holds 16"});
  write_bytes(p.str(), npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4), }", 0));
  expect_error([&] { read_npy(p.str()); }, {"overflow"});
  write_bytes(p.str(), npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", 0));
  expect_error([&] { read_npy(p.str()); }, {"overflows"});
  write_bytes(p.str(), npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }", 0));
  expect_error([&] { read_npy(p.str()); }, {"non-negative"});
  write_bytes(p.str(), npy_v1("{'descr': '<f4', 'shape': (2,), }", 8));
  expect_error([&] { read_npy(p.str()); }, {"lacks"});
  write_bytes(p.str(), npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", 8));
  expect_error([&] { read_npy(p.str()); }, {"unexpected key"});
  write_bytes(p.str(), npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (2,", 8));
  expect_error([&] { read_npy(p.str()); }, {"malformed"});
  // Truncated files and a wrong magic.
  auto good = npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", 8);
  write_bytes(p.str(), std::vector<uint8_t>(good.begin(), good.begin() + 9));
  expect_error([&] { read_npy(p.str()); }, {"truncated"});
  write_bytes(p.str(), std::vector<uint8_t>(good.begin(), good.begin() + 40));
  expect_error([&] { read_npy(p.str()); }, {"truncated"});
  write_bytes(p.str(), std::vector<uint8_t>(good.begin(), good.end() - 1));
  expect_error([&] { read_npy(p.str()); }, {"holds 7"});
  good[1] = 'X';
  write_bytes(p.str(), good);
  expect_error([&] { read_npy(p.str()); }, {"magic"});
  expect_error([] { read_npy("/nonexistent/x.npy"); }, {"cannot open"});
}

TEST(Npy, WriteIsAtomicAndReportsFailures) {
  expect_error([] { float v = 1; write_npy("/nonexistent-dir/y.npy", {1}, &v); }, {"/nonexistent-dir/y.npy"});
}

}  // namespace
}  // namespace ffn
