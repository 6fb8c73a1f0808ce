// The table rows of ffn bench (see bench_rows.hpp).
#include "bench_rows.hpp"

#include <algorithm>
#include <cstdio>
#include <random>
#include <utility>

#include "format.hpp"

namespace ffn::cli {

Matrix bench_tokens(int64_t T, int64_t D, uint32_t seed) {
  Matrix x(T, D);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int64_t i = 0; i < x.size(); ++i) x.data()[i] = dist(rng);
  return x;
}

void print_bench_header() {
  std::printf("%-6s %-20s %6s %10s %9s %9s %12s %10s %7s %7s  %s\n", "dtype", "pass", "T", "ms", "GFLOP/s", "GB/s(w)",
              "roofline ms", "efficiency", "beside", "bound", "path");
}

nlohmann::json print_bench_row(const BenchRow& r, const Roofs& roofs, const BlockConfig& config, int threads,
                               const Roofs* beside) {
  // The roofline time against a pair of roofs, and whether memory bounds it.
  auto roofline_of = [&](const Roofs& roof) {
    const double t_mem = r.moved_bytes / (roof.memory_gbps * 1e9) * 1e3;
    const double t_flop = r.flops / (roof.compute_gflops * 1e9) * 1e3;
    return std::pair{std::max(t_mem, t_flop), t_mem > t_flop};
  };
  const auto [roofline, memory_bound] = roofline_of(roofs);
  const double gflops = r.flops / (r.ms * 1e-3) / 1e9, gbps = r.weight_bytes / (r.ms * 1e-3) / 1e9;
  const double roofline_beside = beside ? roofline_of(*beside).first : 0.0;
  std::printf("%-6s %-20s %6lld %10s %9s %9s %12s %10s %7s %7s  %s\n", r.dtype.c_str(), r.pass.c_str(),
              static_cast<long long>(r.tokens), fixed(r.ms, 3).c_str(), fixed(gflops, 1).c_str(),
              fixed(gbps, 1).c_str(), fixed(roofline, 3).c_str(), fixed(roofline / r.ms, 2).c_str(),
              beside ? fixed(roofline_beside / r.ms, 2).c_str() : "-", memory_bound ? "memory" : "compute",
              r.path.c_str());
  std::fflush(stdout);
  nlohmann::json row{{"variant", variant_name(config.variant)},
                     {"d", config.d_model},
                     {"hidden", config.hidden},
                     {"dtype", r.dtype},
                     {"pass", r.pass},
                     {"tokens", r.tokens},
                     {"threads", threads},
                     {"ms", r.ms},
                     {"gflops", gflops},
                     {"gbps", gbps},
                     {"flops", r.flops},
                     {"bytes", r.moved_bytes},  // the roofline's bytes: flops / bytes is the row's intensity
                     {"efficiency", roofline / r.ms},
                     {"roofline_ms", roofline},
                     {"compute_roof_gflops", roofs.compute_gflops},  // the roof this row is judged by
                     {"path", r.path},
                     {"peers", nlohmann::json::object()}};
  if (beside) {
    row["efficiency_beside"] = roofline_beside / r.ms;
    row["roofs_beside"] = {{"compute_gflops", beside->compute_gflops}, {"memory_gbps", beside->memory_gbps}};
  }
  return row;
}

}  // namespace ffn::cli
