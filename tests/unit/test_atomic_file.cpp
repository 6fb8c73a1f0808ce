// write_file_atomically / check_file_writable (io/atomic_file.hpp): the content arrives
// whole, an existing file is replaced, no temporary is left, and a path that cannot be
// written is an ffn::Error naming it — before any work, for check_file_writable.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "expect_error.hpp"
#include "io/atomic_file.hpp"
#include "test_files.hpp"

namespace ffn {
namespace {

using test::expect_error;
using test::read_bytes;
using test::TempDir;

std::string read_text(const std::string& path) {
  const auto bytes = read_bytes(path);
  return {bytes.begin(), bytes.end()};
}

size_t files_in(const std::string& dir) {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++n;
  return n;
}

TEST(AtomicFile, WritesTheWholeContentAndReplacesAnOldFile) {
  TempDir dir("atomic_write");
  const std::string path = dir.file("out.json");
  write_file_atomically(path, "old content that is longer than the new one");
  write_file_atomically(path, std::string("{\"a\": 1}\n\0tail", 14));
  EXPECT_EQ(read_text(path), std::string("{\"a\": 1}\n\0tail", 14));
  EXPECT_EQ(files_in(dir.str()), 1u);  // no temporary left beside it
}

TEST(AtomicFile, AnUnwritablePathIsAnErrorNamingIt) {
  TempDir dir("atomic_bad");
  const std::string missing = dir.file("no-such-dir/out.json");
  expect_error([&] { write_file_atomically(missing, "x"); }, {"no-such-dir/out.json"});
  expect_error([&] { check_file_writable(missing, "--json"); },
               {"--json", "no-such-dir/out.json", "cannot be written"});
  expect_error([&] { check_file_writable("", "--csv"); }, {"--csv", "empty"});
  // A folder passes the temporary-file test but could never be renamed onto.
  expect_error([&] { check_file_writable(dir.str(), "--json"); }, {"--json", "is a folder"});
  EXPECT_EQ(files_in(dir.str()), 0u);
}

TEST(AtomicFile, CheckingAWritablePathLeavesNothingBehind) {
  TempDir dir("atomic_check");
  check_file_writable(dir.file("later.csv"), "--csv");
  EXPECT_EQ(files_in(dir.str()), 0u);
}

}  // namespace
}  // namespace ffn
