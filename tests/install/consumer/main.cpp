// A program using the installed library: SwiGLU at d = 4096 has 135,266,304 parameters,
// and a small block's forward agrees with the reference.
#include <cmath>
#include <cstdio>
#include <ffn/ffn.hpp>
#include <vector>

int main() {
  const ffn::BlockConfig c = ffn::resolve({ffn::parse_variant("swiglu"), 4096, std::nullopt, {}, false});
  if (ffn::account(c).parameters != 135266304) return 1;
  const ffn::Block block = ffn::Block::random({ffn::parse_variant("swiglu"), 32, 64, false}, 1);
  ffn::Matrix x(2, 32), y(2, 32);
  for (int64_t i = 0; i < x.size(); ++i) x.data()[i] = std::sin(float(i));
  block.forward(x.view(), y.view());
  std::vector<double> ref(32), bound(32);
  ffn::reference_forward_token(block, x.row(1), ref.data(), bound.data());
  for (int i = 0; i < 32; ++i)
    if (std::fabs(y.row(1)[i] - ref[size_t(i)]) > bound[size_t(i)]) return 2;
  std::printf("consumer ok: ffn %s, SwiGLU(4096) has %lld parameters\n", ffn::version,
              static_cast<long long>(ffn::account(c).parameters));
  return 0;
}
