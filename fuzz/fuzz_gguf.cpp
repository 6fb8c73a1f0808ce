// Fuzz target: a GGUF file — open it, read every metadata value and tensor, and load it as
// a block. Any input must give either a result or ffn::Error.
#include <vector>

#include "ffn/checkpoint.hpp"
#include "ffn/error.hpp"
#include "fuzz_input_file.hpp"
#include "io/gguf.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = ffn::fuzz::write_input(data, size, ".gguf");
  try {
    ffn::GgufFile f(path);
    for (const auto& key : f.metadata_keys()) {
      try {
        (void)f.metadata_int(key);
        (void)f.metadata_float(key);
        (void)f.metadata_string(key);
        (void)f.metadata_int_array(key);
        (void)f.metadata_float_array(key);
        (void)f.metadata_string_array(key);
      } catch (const ffn::Error&) {
      }
    }
    // Every tensor ffn converts is read; reading one of another type is an error, checked
    // on its own so that the loads below still run for such a file.
    for (const auto& [name, t] : f.tensors()) {
      std::vector<float> out(static_cast<size_t>(t.elements));
      if (f.readable(name)) {
        f.read_f32(name, out.data());
      } else {
        try {
          f.read_f32(name, out.data());
        } catch (const ffn::Error&) {
        }
      }
    }
    const ffn::LoadOptions o{0, ffn::Variant{true, ffn::Activation::swish}};
    try {
      ffn::Checkpoint(path).load_trainable(o);
    } catch (const ffn::Error&) {
    }
    ffn::Checkpoint(path).load_layer(o);
  } catch (const ffn::Error&) {
  }
  return 0;
}
