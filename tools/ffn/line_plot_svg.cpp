// ffn compare's line plots (line_plot_svg.hpp).
#include "line_plot_svg.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "format.hpp"

namespace ffn::cli {

std::string line_plot_svg(const LinePlot& p) {
  constexpr double W = 720, H = 440, left = 70, right = 150, top = 40, bottom = 50;
  const char* colours[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"};
  double lo = 1e300, hi = -1e300;
  for (const auto& s : p.series)
    for (const auto& [x, y] : s.points) {
      lo = std::min(lo, y);
      hi = std::max(hi, y);
    }
  if (lo > hi) lo = hi = 0;  // no points
  if (hi - lo < 1e-9) hi = lo + 1e-9;
  const double x_span = p.x_hi - p.x_lo > 0 ? p.x_hi - p.x_lo : 1.0;
  auto px = [&](double v) { return left + (W - left - right) * (v - p.x_lo) / x_span; };
  auto py = [&](double v) { return top + (H - top - bottom) * (hi - v) / (hi - lo); };
  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H
      << "\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << "<text x=\"" << W / 2 << "\" y=\"22\" text-anchor=\"middle\" font-size=\"14\">" << p.title
      << "</text>\n<g stroke=\"#ccc\">\n";
  std::vector<double> x_ticks = p.x_ticks;
  if (x_ticks.empty())
    for (int i = 0; i <= 4; ++i) x_ticks.push_back(p.x_lo + x_span * i / 4.0);
  const double y_unit = std::pow(10.0, -p.y_decimals);
  for (size_t i = 0; i < std::max<size_t>(5, x_ticks.size()); ++i) {
    if (i <= 4) {  // the y grid: 5 lines, a label that rounds to zero written without its sign
      const double v = lo + (hi - lo) * double(i) / 4.0;
      svg << "<line x1=\"" << left << "\" x2=\"" << W - right << "\" y1=\"" << py(v) << "\" y2=\"" << py(v) << "\"/>"
          << "<text stroke=\"none\" x=\"" << left - 6 << "\" y=\"" << py(v) + 4 << "\" text-anchor=\"end\">"
          << fixed(std::abs(v) < y_unit / 2 ? 0.0 : v, p.y_decimals) << "</text>";
    }
    if (i < x_ticks.size()) {
      const double sx = x_ticks[i];
      svg << "<line y1=\"" << top << "\" y2=\"" << H - bottom << "\" x1=\"" << px(sx) << "\" x2=\"" << px(sx) << "\"/>"
          << "<text stroke=\"none\" x=\"" << px(sx) << "\" y=\"" << H - bottom + 16 << "\" text-anchor=\"middle\">"
          << static_cast<long long>(sx) << "</text>";
    }
    svg << "\n";
  }
  svg << "</g>\n<text x=\"" << (left + W - right) / 2 << "\" y=\"" << H - 12 << "\" text-anchor=\"middle\">"
      << p.x_label << "</text>\n";
  for (size_t v = 0; v < p.series.size(); ++v) {
    const char* c = colours[v % (sizeof colours / sizeof colours[0])];
    svg << "<polyline fill=\"none\" stroke-width=\"2\" stroke=\"" << c << "\" points=\"";
    for (const auto& [x, y] : p.series[v].points) svg << px(x) << ',' << py(y) << ' ';
    svg << "\"/>\n<text x=\"" << W - right + 12 << "\" y=\"" << top + 18 * double(v) + 4 << "\" fill=\"" << c << "\">"
        << p.series[v].legend << "</text>\n";
  }
  svg << "</svg>\n";
  return svg.str();
}

}  // namespace ffn::cli
