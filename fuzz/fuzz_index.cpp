// Fuzz target: a sharded safetensors checkpoint — model.safetensors.index.json and its
// shards in one folder. The input is split on "\n----\n": part 0 is the index, parts 1..4
// the files 1.safetensors .. 4.safetensors, part 5 a config.json (the activation, a MoE's routing).
// The folder (one per process, emptied every run) is then opened as a checkpoint, its
// layers listed and each of the first few loaded, with a variant given and without.
// Any input must give either a result or ffn::Error.
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "ffn/checkpoint.hpp"
#include "ffn/error.hpp"
#include "fuzz_input_file.hpp"
#include "fuzz_split.hpp"

namespace {

const std::filesystem::path& work_dir() {
  static const ffn::fuzz::ProcessTempPath dir("ffn-fuzz-index-");
  return dir.path();
}

void write_file(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) __builtin_trap();
}

std::string file_name(size_t part) {
  if (part == 0) return "model.safetensors.index.json";
  if (part == 5) return "config.json";
  return std::to_string(part) + ".safetensors";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto& dir = work_dir();
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const auto parts = ffn::fuzz::split_input(data, size, "\n----\n", 6);
  for (size_t i = 0; i < parts.size(); ++i) write_file(dir / file_name(i), parts[i]);
  try {
    const ffn::Checkpoint checkpoint(dir.string());
    const auto layers = checkpoint.layers();
    for (size_t i = 0; i < layers.size() && i < 3; ++i) {
      for (const bool give_variant : {true, false}) {
        ffn::LoadOptions options;
        options.layer = layers[i];
        if (give_variant) options.variant = ffn::Variant{true, ffn::Activation::swish};
        try {
          checkpoint.load_layer(options);
        } catch (const ffn::Error&) {
        }
      }
    }
    checkpoint.load_layer({});  // layer 0, activation (and a MoE's routing) from config.json
  } catch (const ffn::Error&) {
  }
  return 0;
}
