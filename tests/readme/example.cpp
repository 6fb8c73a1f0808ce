#include <ffn/ffn.hpp>

int main() {
  const ffn::BlockConfig config = ffn::find_preset("llama2-7b").config();  // SwiGLU 4096 → 11008
  const int64_t T = 64, D = config.d_model;
  const ffn::Block block = ffn::Block::random(config, /*seed=*/1);  // nn.Linear's default init
  ffn::InferenceBlock fast(block, ffn::WeightType::q8_0);            // converted once, then only run

  ffn::Matrix x(T, D), y(T, D);  // [T][D], row-major, zero-initialised
  for (int64_t i = 0; i < x.size(); ++i) x.data()[i] = 0.01f * static_cast<float>(i % 97 - 48);
  block.forward(x.view(), y.view());  // f32; threads: one per core
  fast.forward(x.view(), y.view());   // q8_0 weights against q8_0 activations
  return ffn::account(config).parameters == 135'266'304 ? 0 : 1;
}
