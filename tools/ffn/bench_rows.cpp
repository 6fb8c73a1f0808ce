// The table rows of ffn bench (see bench_rows.hpp).
#include "bench_rows.hpp"

#include <algorithm>
#include <cstdio>

#include "format.hpp"

namespace ffn::cli {

void print_bench_header() {
  std::printf("%-6s %-20s %6s %10s %9s %9s %12s %10s %7s  %s\n", "dtype", "pass", "T", "ms", "GFLOP/s", "GB/s(w)",
              "roofline ms", "efficiency", "bound", "path");
}

nlohmann::json print_bench_row(const BenchRow& r, const Roofs& roofs, const BlockConfig& config, int threads) {
  const double t_mem = r.moved_bytes / (roofs.memory_gbps * 1e9) * 1e3;
  const double t_flop = r.flops / (roofs.compute_gflops * 1e9) * 1e3;
  const double roofline = std::max(t_mem, t_flop);
  const double gflops = r.flops / (r.ms * 1e-3) / 1e9, gbps = r.weight_bytes / (r.ms * 1e-3) / 1e9;
  std::printf("%-6s %-20s %6lld %10s %9s %9s %12s %10s %7s  %s\n", r.dtype.c_str(), r.pass.c_str(),
              static_cast<long long>(r.tokens), fixed(r.ms, 3).c_str(), fixed(gflops, 1).c_str(),
              fixed(gbps, 1).c_str(), fixed(roofline, 3).c_str(), fixed(roofline / r.ms, 2).c_str(),
              t_mem > t_flop ? "memory" : "compute", r.path.c_str());
  std::fflush(stdout);
  return {{"variant", variant_name(config.variant)},
          {"d", config.d_model},
          {"hidden", config.hidden},
          {"dtype", r.dtype},
          {"pass", r.pass},
          {"tokens", r.tokens},
          {"threads", threads},
          {"ms", r.ms},
          {"gflops", gflops},
          {"gbps", gbps},
          {"efficiency", roofline / r.ms},
          {"roofline_ms", roofline},
          {"compute_roof_gflops", roofs.compute_gflops},  // the roof this row is judged by
          {"path", r.path},
          {"peers", nlohmann::json::object()}};
}

}  // namespace ffn::cli
