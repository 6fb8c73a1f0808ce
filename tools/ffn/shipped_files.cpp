// Paths of the files shipped with ffn (see shipped_files.hpp).
#include "shipped_files.hpp"

namespace ffn::cli {
namespace {

std::filesystem::path program_dir() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path(".") : exe.parent_path();
}

}  // namespace

std::filesystem::path shipped_file(const char* subdir, const char* name) {
  return program_dir() / ".." / "share" / "ffn" / subdir / name;
}

std::filesystem::path beside_this_program(const char* name) { return program_dir() / name; }

}  // namespace ffn::cli
