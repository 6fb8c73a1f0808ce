// Files that travel with the ffn program: <bin>/../share/ffn/<subdir>/<name> (installed: the
// prefix's share/ffn; in the build tree: build/tools/share/ffn, see tools/ffn/CMakeLists.txt),
// and programs installed beside it.
#pragma once

#include <filesystem>

namespace ffn::cli {

std::filesystem::path shipped_file(const char* subdir, const char* name);
std::filesystem::path beside_this_program(const char* name);

}  // namespace ffn::cli
