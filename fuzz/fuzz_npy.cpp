// Fuzz target: a .npy file. Any input must give either an array or ffn::Error.
#include "ffn/error.hpp"
#include "fuzz_input_file.hpp"
#include "io/npy.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = ffn::fuzz::write_input(data, size, ".npy");
  try {
    const ffn::NpyArray a = ffn::read_npy(path);
    (void)a;
  } catch (const ffn::Error&) {
  }
  return 0;
}
