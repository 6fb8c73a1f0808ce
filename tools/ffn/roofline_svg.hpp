// ffn bench --svg: a run drawn as a roofline (Williams, Waterman & Patterson 2009) — x the
// arithmetic intensity of a row (its FLOPs over the bytes the bench charges it: weights in
// the row's type plus activations read and written), y the GFLOP/s it reached, both
// logarithmic; the run's compute roof a horizontal line, its memory roof the line
// y = bandwidth · x; one point per row, the peers' points at their row's intensity (the
// same block and weight type, so the same FLOPs and bytes) in markers of their own.
// Pure string output: the bench hands the rows over and writes the text atomically.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ffn::cli {

// v ↦ pixels on a logarithmic axis whose ends are the decades 10^lo_decade and
// 10^hi_decade, drawn from px_lo to px_hi (px_hi < px_lo for a y axis, which grows upward).
struct LogScale {
  int lo_decade = 0, hi_decade = 1;
  double px_lo = 0, px_hi = 1;
  double operator()(double v) const;
};

// The decades [lo, hi] that hold every value of `values` (all > 0): lo = floor(log10 min),
// hi = ceil(log10 max), at least one decade apart.
LogScale log_scale_for(const std::vector<double>& values, double px_lo, double px_hi);

struct RooflinePoint {
  std::string series;  // legend entry: "ffn f32", "ffn bf16", "oneDNN", "PyTorch", …
  std::string label;   // beside the point: "f32 T=16"
  double flops_per_byte = 0;
  double gflops = 0;
};

struct RooflineChart {
  std::string title;     // preset / shape
  std::string subtitle;  // ISA, threads, the roofs' values
  double compute_gflops = 0;
  double memory_gbps = 0;
  double bf16_dot_gflops = 0;  // a second compute roof (vdpbf16ps rows); 0: none
  double int8_dot_gops = 0;    // a third (integer dot rows: q8_0, q4_0, K-quants, …); 0: none
  std::vector<RooflinePoint> points;
};

// The chart of a bench run: `roofs` and `rows` as ffn bench --json writes them (rows with
// flops, bytes and gflops, and their "peers" objects). Rows without figures are left out.
RooflineChart roofline_chart(const std::string& title, const std::string& isa, int threads, const nlohmann::json& roofs,
                             const nlohmann::json& rows);

// The SVG document: axes with decade ticks and labels, the roofs as lines (ids
// "compute-roof", "memory-roof", "bf16-dot-roof", "int8-dot-roof"), a <circle>/<rect>/<path> per point
// (class "point", data-series, data-flops-per-byte, data-gflops), a legend and the titles.
std::string roofline_svg(const RooflineChart& chart);

}  // namespace ffn::cli
