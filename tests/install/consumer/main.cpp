// A program using the installed library: SwiGLU at d = 4096 has 135,266,304 parameters,
// and a small block's forward agrees with a double-precision SwiGLU written here from its
// public weights (the library's own oracle is internal, for its tests).
#include <cmath>
#include <cstdio>
#include <ffn/ffn.hpp>
#include <vector>

int main() {
  const ffn::BlockConfig c = ffn::resolve({ffn::parse_variant("swiglu"), 4096, std::nullopt, {}, false});
  if (ffn::account(c).parameters != 135266304) return 1;
  const int64_t D = 32, H = 64;
  const ffn::Block block = ffn::Block::random({ffn::parse_variant("swiglu"), D, H, false}, 1);
  ffn::Matrix x(2, D), y(2, D);
  for (int64_t i = 0; i < x.size(); ++i) x.data()[i] = std::sin(float(i));
  block.forward(x.view(), y.view());
  // y = W_down·(silu(W_gate·x) ⊙ W_up·x) for token 1, in double; each output within 10⁻⁴ of
  // its Σ|W_down[i][j]·h_j| (an f32 forward errs by about (D + H)·2⁻²⁴ of it).
  const ffn::BlockWeights& w = block.weights();
  const float* x1 = x.row(1);
  std::vector<double> h(static_cast<size_t>(H));
  for (int64_t j = 0; j < H; ++j) {
    double g = 0, u = 0;
    for (int64_t k = 0; k < D; ++k) {
      g += double(w.gate.row(j)[k]) * x1[k];
      u += double(w.up.row(j)[k]) * x1[k];
    }
    h[size_t(j)] = g / (1.0 + std::exp(-g)) * u;
  }
  for (int64_t i = 0; i < D; ++i) {
    double ref = 0, magnitude = 0;
    for (int64_t j = 0; j < H; ++j) {
      ref += double(w.down.row(i)[j]) * h[size_t(j)];
      magnitude += std::fabs(double(w.down.row(i)[j]) * h[size_t(j)]);
    }
    if (std::fabs(y.row(1)[i] - ref) > 1e-4 * magnitude) return 2;
  }
  std::printf("consumer ok: ffn %s, SwiGLU(4096) has %lld parameters\n", ffn::version,
              static_cast<long long>(ffn::account(c).parameters));
  return 0;
}
