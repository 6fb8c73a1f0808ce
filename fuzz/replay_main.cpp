// Replays saved inputs through a fuzz target's entry point without libFuzzer, so that the
// regression inputs under tests/regressions/<target>/ run in the normal and sanitizer
// builds: replay_<target> FILE_OR_DIR... — every regular file, in name order. Every input
// is read before the first call (the CLI target changes the working directory).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  std::vector<std::filesystem::path> paths;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path p(argv[i]);
    if (std::filesystem::is_directory(p)) {
      for (const auto& e : std::filesystem::directory_iterator(p))
        if (e.is_regular_file()) paths.push_back(e.path());
    } else {
      paths.push_back(p);
    }
  }
  std::sort(paths.begin(), paths.end());
  std::vector<std::vector<uint8_t>> inputs;
  for (const auto& p : paths) {
    std::ifstream in(p, std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "replay: cannot read %s\n", p.c_str());
      return 1;
    }
    inputs.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  if (inputs.empty()) {
    std::fprintf(stderr, "replay: no inputs given\n");
    return 1;
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::fprintf(stderr, "replay: %s (%zu bytes)\n", paths[i].c_str(), inputs[i].size());
    LLVMFuzzerTestOneInput(inputs[i].data(), inputs[i].size());
  }
  std::printf("replayed %zu inputs without a crash\n", inputs.size());
  return 0;
}
