// Fuzz target: the ffn command's argument handling, in-process. The input is split into
// arguments on NUL and newline bytes and given to run_cli (argv[0] = "ffn"). An exit status
// of any kind (an ffn::Error, a CLI11 parse error, --help) is fine; a crash, a hang or a
// sanitizer report is a finding.
//
// What the fuzzer may do to the machine is bounded before the call, by refusing inputs:
//   - the commands that run long (bench, compare, demo) only with --help right after them;
//   - no argument naming another folder ('/' or ".."): every path is relative to a
//     per-process working folder holding a tiny checkpoint (w.safetensors, d 32, hidden
//     64, SwiGLU, with config.json) and tokens (x.npy, [2, 32]); outputs land there too,
//     and the folder is restored to just those files before every run;
//   - --threads and --tokens only as one decimal digit, so that no run starts thousands of
//     threads.
#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "cli.hpp"
#include "ffn/block.hpp"
#include "fuzz_input_file.hpp"
#include "fuzz_split.hpp"
#include "io/npy.hpp"
#include "io/safetensors.hpp"

namespace {

namespace fs = std::filesystem;

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The files every run starts from, made once: name → bytes.
const std::map<std::string, std::string>& fixture() {
  static const std::map<std::string, std::string> files = [] {
    const fs::path stage = fs::temp_directory_path() / ("ffn-fuzz-cli-stage-" + std::to_string(::getpid()));
    fs::create_directories(stage);
    const ffn::BlockConfig c{{true, ffn::Activation::swish}, 32, 64, false, 0.0};
    const ffn::Block b = ffn::Block::random(c, 1);
    const auto& w = b.weights();
    ffn::write_safetensors((stage / "w.safetensors").string(),
                           {{"gate.weight", ffn::TensorDtype::f32, {64, 32}, w.gate.data()},
                            {"up.weight", ffn::TensorDtype::f32, {64, 32}, w.up.data()},
                            {"down.weight", ffn::TensorDtype::f32, {32, 64}, w.down.data()}});
    std::vector<float> x(2 * 32);
    for (size_t i = 0; i < x.size(); ++i) x[i] = 0.01f * static_cast<float>(i) - 0.3f;
    ffn::write_npy((stage / "x.npy").string(), {2, 32}, x.data());
    std::map<std::string, std::string> out;
    out["w.safetensors"] = read_bytes(stage / "w.safetensors");
    out["x.npy"] = read_bytes(stage / "x.npy");
    out["config.json"] = "{\"hidden_act\": \"silu\"}";
    fs::remove_all(stage);
    return out;
  }();
  return files;
}

// Empties the working folder, writes the fixture into it and makes it the current one.
void reset_work_dir() {
  static const ffn::fuzz::ProcessTempPath temp("ffn-fuzz-cli-");
  const fs::path& dir = temp.path();
  const auto& files = fixture();
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const auto& [name, bytes] : files) {
    std::ofstream out(dir / name, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) __builtin_trap();
  }
  if (::chdir(dir.c_str()) != 0) __builtin_trap();
}

bool is_long_command(const std::string& a) { return a == "bench" || a == "compare" || a == "demo"; }

// A --threads / --tokens value the run may take: one decimal digit.
bool small_count(const std::string& v) { return v.size() == 1 && std::isdigit(static_cast<unsigned char>(v[0])); }

bool acceptable(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.find('/') != std::string::npos || a.find("..") != std::string::npos) return false;
    if (is_long_command(a) && !(i + 1 < args.size() && (args[i + 1] == "--help" || args[i + 1] == "-h"))) return false;
    for (const char* opt : {"--threads", "--tokens"}) {
      const std::string o(opt);
      if (a == o && (i + 1 >= args.size() || !small_count(args[i + 1]))) return false;
      if (a.rfind(o + "=", 0) == 0 && !small_count(a.substr(o.size() + 1))) return false;
    }
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 4096) return 0;
  std::vector<std::string> args;
  for (auto& line : ffn::fuzz::split_input(data, size, "\n", 64)) {
    for (auto& part : ffn::fuzz::split_input(reinterpret_cast<const uint8_t*>(line.data()), line.size(),
                                             std::string_view("\0", 1), 64))
      args.push_back(std::move(part));
  }
  if (args.size() > 64 || !acceptable(args)) return 0;
  reset_work_dir();
  std::vector<std::string> storage{"ffn"};
  storage.insert(storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : storage) argv.push_back(s.data());
  argv.push_back(nullptr);
  ffn::cli::run_cli(static_cast<int>(storage.size()), argv.data());
  return 0;
}
