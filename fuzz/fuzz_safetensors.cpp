// Fuzz target: a safetensors file — open it, read every tensor as f32, and load it as a
// block under every naming scheme. Any input must give either a result or ffn::Error.
#include <vector>

#include "ffn/checkpoint.hpp"
#include "ffn/error.hpp"
#include "fuzz_input_file.hpp"
#include "io/safetensors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = ffn::fuzz::write_input(data, size, ".safetensors");
  try {
    ffn::SafetensorsFile f(path);
    for (const auto& [name, t] : f.tensors()) {
      std::vector<float> out(static_cast<size_t>(t.elements));
      try {
        f.read_f32(name, out.data());
      } catch (const ffn::Error&) {
      }
    }
    ffn::Checkpoint(path).load_trainable({0, ffn::Variant{true, ffn::Activation::swish}});
  } catch (const ffn::Error&) {
  }
  return 0;
}
