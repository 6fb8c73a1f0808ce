// Google Benchmark of the f32 forward: GELU MLP and SwiGLU at d = 4096 over token counts,
// with bytes and FLOPs counters so the report reads as GB/s and GFLOP/s. Compare the
// figures against roofs measured in the same run (ffn demo prints the memory roof); the
// full roofline benchmark with peers is `ffn bench`, to come with the kernels issue.
//   build: cmake -B build -DFFN_BUILD_BENCH=ON && cmake --build build
//   run:   build/bench/ffn_bench_forward --benchmark_min_time=1
#include <benchmark/benchmark.h>

#include <map>
#include <memory>

#include "ffn/accounting.hpp"
#include "ffn/block.hpp"

namespace {

const ffn::Block& block_for(bool gated) {
  static std::map<bool, std::unique_ptr<ffn::Block>> cache;
  auto& b = cache[gated];
  if (!b) {
    const ffn::Variant v = gated ? ffn::Variant{true, ffn::Activation::swish} : ffn::Variant{false, ffn::Activation::gelu};
    b = std::make_unique<ffn::Block>(ffn::Block::random(ffn::resolve({v, 4096, std::nullopt, {}, false}), 1));
  }
  return *b;
}

void BM_Forward(benchmark::State& state) {
  const ffn::Block& block = block_for(state.range(0) != 0);
  const int64_t T = state.range(1), D = block.config().d_model;
  ffn::Matrix x(T, D), y(T, D);
  for (int64_t i = 0; i < x.size(); ++i) x.data()[i] = static_cast<float>(i % 17) * 0.1f - 0.8f;
  for (auto _ : state) {
    block.forward(x.view(), y.view());
    benchmark::DoNotOptimize(y.data());
  }
  const auto a = ffn::account(block.config());
  const double weight_bytes = static_cast<double>(*ffn::weight_bytes(block.config(), ffn::WeightType::f32));
  // Shown with SI prefixes: "54G/s" bytes is 54 GB/s.
  state.counters["bytes"] = benchmark::Counter(weight_bytes + 8.0 * double(T * D),
                                               benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
  state.counters["FLOP"] = benchmark::Counter(double(a.matmul_flops_forward) * double(T),
                                              benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
  state.SetLabel(ffn::variant_name(block.config().variant));
}

BENCHMARK(BM_Forward)->ArgNames({"gated", "T"})->ArgsProduct({{0, 1}, {1, 16, 64, 256}})->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
