// A line plot as SVG text, for ffn compare's figures (the validation curves; the loss
// increase against activation sparsity): linear axes, the y range that of the plotted
// values, 5 grid lines each way, one coloured polyline per series and a legend at the right
// in the series' order. Pure string output: the caller writes the file.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace ffn::cli {

struct PlotSeries {
  std::string legend;                             // the legend's text, coloured as the line
  std::vector<std::pair<double, double>> points;  // (x, y) in order along the line
};

struct LinePlot {
  std::string title, x_label;
  double x_lo = 0, x_hi = 1;    // the x axis' ends
  std::vector<double> x_ticks;  // where the x grid lines go, labelled as integers; empty: 5 evenly spaced
  int y_decimals = 3;           // of the y ticks' labels
  std::vector<PlotSeries> series;
};

std::string line_plot_svg(const LinePlot& plot);

}  // namespace ffn::cli
