// Hostile sizes: allocation requests beyond the machine's memory, block configurations
// whose sizes overflow or cannot be held, and checkpoint indexes that try to name files
// outside their folder. Each is an ffn::Error naming the problem, raised before anything
// is allocated or opened. (Dimension products that overflow int64 and shapes that claim
// more data than the file holds are covered per format in test_safetensors.cpp
// (HostileHeadersAreErrors), test_gguf.cpp (GgufHostile.*), test_npy.cpp
// (RejectsWhatItCannotReadExactly) and test_config.cpp (the d_model × hidden overflow).)
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "expect_error.hpp"
#include "ffn/block.hpp"
#include "ffn/checkpoint.hpp"
#include "ffn/config.hpp"
#include "ffn/tensor.hpp"
#include "test_files.hpp"

namespace ffn {
namespace {

using test::expect_error;

int64_t physical_memory() { return int64_t{::sysconf(_SC_PHYS_PAGES)} * ::sysconf(_SC_PAGESIZE); }

TEST(HostileSizes, AllocationBeyondPhysicalMemoryIsAnErrorBeforeAllocating) {
  // 10^12 floats (4 TB): Linux's overcommit could grant part of such requests and the
  // zeroing would then be killed; a sanitizer's allocator aborts on them. The check must
  // come first, with its own message.
  expect_error([] { Matrix m(1'000'000, 1'000'000); }, {"1000000000000 floats", "exceeds this machine's memory"});
  expect_error([] { AlignedFloats a(int64_t{1} << 60); }, {"exceeds this machine's memory"});
  // Just above the machine's memory: refused; the limit is the machine's, not a constant.
  const int64_t floats = physical_memory() / 4 + 1024;
  expect_error([&] { AlignedFloats a(floats); }, {std::to_string(floats).c_str(), "exceeds this machine's memory"});
  // What does fit is still allocated and zeroed.
  AlignedFloats small(1000);
  EXPECT_EQ(small.size(), 1000);
  EXPECT_EQ(small.data()[999], 0.0f);
}

TEST(HostileSizes, ABlockOfAQuadrillionWeightsIsAnErrorNotAnAbort) {
  // 3 · 10^7 · 33,333,334 ≈ 10^15 parameters: the counts fit int64, so validate() accepts
  // the configuration (ffn info may describe such a block), but building it must fail
  // cleanly before the first matrix is allocated.
  const BlockConfig c{{true, Activation::swish}, 10'000'000, 33'333'334, false, 0.0};
  EXPECT_NO_THROW(validate(c));
  expect_error([&] { Block b(c); }, {"exceeds this machine's memory"});
  expect_error([&] { Block::random(c, 1); }, {"exceeds this machine's memory"});
}

TEST(HostileSizes, NegativeAndOverflowingMatrixShapes) {
  expect_error([] { Matrix m(-1, 4); }, {"-1 × 4", "negative"});
  expect_error([] { Matrix m(int64_t{1} << 32, int64_t{1} << 32); }, {"overflows"});
  expect_error([] { AlignedFloats a(-5); }, {"-5 floats", "negative"});
}

TEST(HostileSizes, ShardNamesCannotLeaveTheCheckpointFolder) {
  // An index names shards by plain file name; a path, "..", or a name with a NUL byte (which
  // the C library would cut short, opening a different file than the one checked) is an
  // error naming the tensor.
  test::TempDir dir("hostile-index");
  const char* names[] = {"../model.safetensors", "/etc/passwd", "..", ".", ""};
  for (const char* name : names) {
    test::write_text(dir.file("model.safetensors.index.json"),
                     std::string(R"({"weight_map": {"up.weight": ")") + name + "\"}}");
    expect_error([&] { Checkpoint c(dir.str()); }, {"up.weight", "not a plain file name"});
  }
  test::write_text(dir.file("model.safetensors.index.json"), R"({"weight_map": {"up.weight": "..\u0000x"}})");
  expect_error([&] { Checkpoint c(dir.str()); }, {"shard '..\\x00x'", "up.weight", "not a plain file name"});
}

}  // namespace
}  // namespace ffn
