// ffn bench --svg (see roofline_svg.hpp).
#include "roofline_svg.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "format.hpp"

namespace ffn::cli {

double LogScale::operator()(double v) const {
  const double f = (std::log10(v) - lo_decade) / double(hi_decade - lo_decade);
  return px_lo + f * (px_hi - px_lo);
}

LogScale log_scale_for(const std::vector<double>& values, double px_lo, double px_hi) {
  double lo = values.empty() ? 1 : values[0], hi = lo;
  for (double v : values) lo = std::min(lo, v), hi = std::max(hi, v);
  LogScale s;
  s.lo_decade = int(std::floor(std::log10(lo)));
  s.hi_decade = std::max(int(std::ceil(std::log10(hi))), s.lo_decade + 1);
  s.px_lo = px_lo;
  s.px_hi = px_hi;
  return s;
}

namespace {

enum class Marker { circle, diamond, square, triangle };

// Figures a row carries, when it carries them all (finite, > 0).
bool positive(const nlohmann::json& j, const char* key) {
  return j.contains(key) && j[key].is_number() && std::isfinite(j[key].get<double>()) && j[key].get<double>() > 0;
}

std::string escaped(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string px(double v) { return fixed(v, 2); }

// A value in 3 significant digits, without a trailing exponent for the ranges charted here.
std::string sig3(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

// 10^d as the axis prints it: 0.01, 0.1, 1, 10, 100, …
std::string decade_label(int d) {
  if (d >= 0 && d <= 9) return std::to_string(static_cast<long long>(std::llround(std::pow(10.0, d))));
  if (d < 0 && d >= -6) return fixed(std::pow(10.0, d), -d);
  return "1e" + std::to_string(d);
}

Marker marker_of(const std::string& series) {
  if (series.rfind("oneDNN", 0) == 0) return Marker::square;
  if (series.rfind("PyTorch", 0) == 0) return Marker::triangle;
  if (series.find("fwd+bwd") != std::string::npos) return Marker::diamond;
  return Marker::circle;
}

// One colour per series, in the order the series first appear (ffn's before the peers').
constexpr const char* kPalette[] = {"#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#17becf",
                                    "#bcbd22", "#d62728", "#ff7f0e", "#e377c2", "#7f7f7f"};

std::string marker_svg(Marker m, double x, double y, const std::string& colour, const std::string& attrs,
                       const std::string& tooltip) {
  const std::string fill = " fill=\"" + colour + "\" stroke=\"#000\" stroke-width=\"0.6\"";
  const std::string inner = "><title>" + escaped(tooltip) + "</title></";
  switch (m) {
    case Marker::circle:
      return "<circle " + attrs + " cx=\"" + px(x) + "\" cy=\"" + px(y) + "\" r=\"4.5\"" + fill + inner + "circle>";
    case Marker::square:
      return "<rect " + attrs + " x=\"" + px(x - 4) + "\" y=\"" + px(y - 4) + "\" width=\"8\" height=\"8\"" + fill +
             inner + "rect>";
    case Marker::diamond:
      return "<path " + attrs + " d=\"M" + px(x) + "," + px(y - 5.5) + " L" + px(x + 5.5) + "," + px(y) + " L" + px(x) +
             "," + px(y + 5.5) + " L" + px(x - 5.5) + "," + px(y) + " Z\"" + fill + inner + "path>";
    case Marker::triangle:
      return "<path " + attrs + " d=\"M" + px(x) + "," + px(y - 5.5) + " L" + px(x + 5) + "," + px(y + 4) + " L" +
             px(x - 5) + "," + px(y + 4) + " Z\"" + fill + inner + "path>";
  }
  return {};
}

// The part of the line y = slope · x (slope 0: y = level) inside the plot's data ranges, as
// an SVG <line>; empty when it misses the plot.
std::string roof_line(const std::string& id, double slope, double level, const LogScale& xs, const LogScale& ys,
                      const std::string& style, const std::string& data) {
  const double x_lo = std::pow(10.0, xs.lo_decade), x_hi = std::pow(10.0, xs.hi_decade);
  const double y_lo = std::pow(10.0, ys.lo_decade), y_hi = std::pow(10.0, ys.hi_decade);
  double a = x_lo, b = x_hi;
  if (slope > 0) {
    a = std::max(x_lo, y_lo / slope);
    b = std::min(x_hi, y_hi / slope);
  } else if (level < y_lo || level > y_hi) {
    return {};
  }
  if (!(a < b)) return {};
  auto y_at = [&](double x) { return slope > 0 ? slope * x : level; };
  return "<line id=\"" + id + "\" " + data + " x1=\"" + px(xs(a)) + "\" y1=\"" + px(ys(y_at(a))) + "\" x2=\"" +
         px(xs(b)) + "\" y2=\"" + px(ys(y_at(b))) + "\" " + style + "/>";
}

// A label beside its point where it covers no marker and no label placed before it: the
// first free place of eight around the point (ffn's preferring above-right, the peers'
// below-right, so that a peer's label and ffn's at the same intensity part), else the first.
struct Box {
  double x0, y0, x1, y1;
};
struct Label {
  double x, y;  // the text's anchor (baseline)
  bool end;     // text-anchor end: the label left of the point
};

Label place_label(double x, double y, const std::string& text, bool below_first, std::vector<Box>& taken) {
  const double w = 5.8 * double(text.size());  // 10 px DejaVu Sans: ~5.8 px a character
  const double rows[] = {-6, 13, -17, 24};
  std::vector<Label> tries;
  for (int k = 0; k < 4; ++k) {
    const double dy = below_first ? rows[k ^ 1] : rows[k];
    tries.push_back({x + 6, y + dy, false});
    tries.push_back({x - 6, y + dy, true});
  }
  auto box_of = [&](const Label& l) {
    const double x0 = l.end ? l.x - w : l.x;
    return Box{x0, l.y - 9, x0 + w, l.y + 2};
  };
  auto overlaps = [](const Box& a, const Box& b) { return a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1; };
  for (const Label& l : tries) {
    const Box b = box_of(l);
    if (std::none_of(taken.begin(), taken.end(), [&](const Box& t) { return overlaps(b, t); })) {
      taken.push_back(b);
      return l;
    }
  }
  taken.push_back(box_of(tries[0]));
  return tries[0];
}

}  // namespace

RooflineChart roofline_chart(const std::string& title, const std::string& isa, int threads, const nlohmann::json& roofs,
                             const nlohmann::json& rows) {
  RooflineChart c;
  c.title = title;
  c.compute_gflops = roofs.value("compute_gflops", 0.0);
  c.memory_gbps = roofs.value("memory_gbps", 0.0);
  c.bf16_dot_gflops = roofs.value("bf16_dot_gflops", 0.0);
  c.int8_dot_gops = roofs.value("int8_dot_gops", 0.0);
  c.subtitle = "kernels " + isa + ", " + std::to_string(threads) + " thread" + (threads == 1 ? "" : "s") +
               "; roofs of this run: compute " + fixed(c.compute_gflops, 1) + " GFLOP/s, memory " +
               fixed(c.memory_gbps, 1) + " GB/s (ridge at " + sig3(c.compute_gflops / c.memory_gbps) + " FLOP/byte)";
  if (c.bf16_dot_gflops > 0) c.subtitle += ", bf16 dot " + fixed(c.bf16_dot_gflops, 1) + " GFLOP/s";
  if (c.int8_dot_gops > 0) c.subtitle += ", integer dot " + fixed(c.int8_dot_gops, 1) + " Gop/s";
  // ffn's rows first, then the peers' points at their rows' intensity.
  for (const auto& r : rows) {
    if (!positive(r, "flops") || !positive(r, "bytes") || !positive(r, "gflops")) continue;
    const std::string dtype = r.value("dtype", ""), pass = r.value("pass", "forward");
    const std::string t = " T=" + std::to_string(r.value("tokens", int64_t{0}));
    const std::string suffix = pass == "forward" ? "" : " " + pass;
    c.points.push_back({"ffn " + dtype + suffix, dtype + t + suffix,
                        r["flops"].get<double>() / r["bytes"].get<double>(), r["gflops"].get<double>()});
  }
  const std::pair<const char*, const char*> peers[] = {{"onednn_ms", "oneDNN"}, {"pytorch_ms", "PyTorch"}};
  for (const auto& r : rows) {
    if (!positive(r, "flops") || !positive(r, "bytes") || !r.contains("peers")) continue;
    for (const auto& [key, name] : peers) {
      if (!positive(r["peers"], key)) continue;
      const double ms = r["peers"][key].get<double>();
      const std::string dtype = r.value("dtype", "");
      c.points.push_back({std::string(name) + " " + dtype, "T=" + std::to_string(r.value("tokens", int64_t{0})),
                          r["flops"].get<double>() / r["bytes"].get<double>(),
                          r["flops"].get<double>() / (ms * 1e-3) / 1e9});
    }
  }
  return c;
}

namespace {

// The compute roofs drawn beside the FMA chains' one: each instruction's own, where the run
// measured it (0: not measured), with the rows it judges.
struct DotRoof {
  double value;
  const char* id;     // the line's id
  const char* name;   // "bf16 dot": in its label and the legend
  const char* unit;   // GFLOP/s, Gop/s
  const char* colour;
};
std::vector<DotRoof> dot_roofs(const RooflineChart& c) {
  std::vector<DotRoof> out;
  if (c.bf16_dot_gflops > 0) out.push_back({c.bf16_dot_gflops, "bf16-dot-roof", "bf16 dot", "GFLOP/s", "#d62728"});
  if (c.int8_dot_gops > 0) out.push_back({c.int8_dot_gops, "int8-dot-roof", "integer dot", "Gop/s", "#2ca02c"});
  return out;
}

}  // namespace

std::string roofline_svg(const RooflineChart& c) {
  constexpr double kWidth = 980, kHeight = 640;
  constexpr double kLeft = 80, kRight = 740, kTop = 78, kBottom = 570;  // the plot area
  // The ranges: every point, the roofs, and the ridge where they meet, with a margin.
  const double ridge = c.memory_gbps > 0 ? c.compute_gflops / c.memory_gbps : 1;
  std::vector<double> xv{ridge / 1.5, ridge * 1.5}, yv;
  if (c.compute_gflops > 0) yv.push_back(c.compute_gflops * 1.3);
  for (const DotRoof& d : dot_roofs(c)) yv.push_back(d.value * 1.3);
  for (const auto& p : c.points) {
    xv.push_back(p.flops_per_byte / 1.3);
    xv.push_back(p.flops_per_byte * 1.3);
    yv.push_back(p.gflops / 1.3);
    yv.push_back(p.gflops * 1.3);
  }
  if (yv.empty()) yv = {1, 10};
  const LogScale xs = log_scale_for(xv, kLeft, kRight), ys = log_scale_for(yv, kBottom, kTop);

  std::string s;
  s += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  s += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + px(kWidth) + "\" height=\"" + px(kHeight) +
       "\" viewBox=\"0 0 " + px(kWidth) + " " + px(kHeight) +
       "\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n";
  s += "<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n";
  s += "<text id=\"title\" x=\"" + px(kLeft) + "\" y=\"28\" font-size=\"16\" font-weight=\"bold\">" + escaped(c.title) +
       "</text>\n";
  s += "<text id=\"subtitle\" x=\"" + px(kLeft) + "\" y=\"50\" font-size=\"12\">" + escaped(c.subtitle) + "</text>\n";
  // Grid and ticks: a labelled line at every decade, short unlabelled ticks at 2…9 of each.
  s += "<g id=\"axes\" stroke=\"#000\" font-size=\"11\">\n";
  for (int d = xs.lo_decade; d <= xs.hi_decade; ++d) {
    const double x = xs(std::pow(10.0, d));
    s += "<line class=\"grid x\" x1=\"" + px(x) + "\" y1=\"" + px(kTop) + "\" x2=\"" + px(x) + "\" y2=\"" +
         px(kBottom) + "\" stroke=\"#ddd\"/>\n";
    s += "<line class=\"tick x\" data-value=\"" + decade_label(d) + "\" x1=\"" + px(x) + "\" y1=\"" + px(kBottom) +
         "\" x2=\"" + px(x) + "\" y2=\"" + px(kBottom + 6) + "\"/>\n";
    s += "<text class=\"tick-label x\" x=\"" + px(x) + "\" y=\"" + px(kBottom + 20) +
         "\" text-anchor=\"middle\" stroke=\"none\">" + decade_label(d) + "</text>\n";
    for (int k = 2; d < xs.hi_decade && k <= 9; ++k) {
      const double xm = xs(k * std::pow(10.0, d));
      s += "<line class=\"minor x\" x1=\"" + px(xm) + "\" y1=\"" + px(kBottom) + "\" x2=\"" + px(xm) + "\" y2=\"" +
           px(kBottom + 3) + "\"/>\n";
    }
  }
  for (int d = ys.lo_decade; d <= ys.hi_decade; ++d) {
    const double y = ys(std::pow(10.0, d));
    s += "<line class=\"grid y\" x1=\"" + px(kLeft) + "\" y1=\"" + px(y) + "\" x2=\"" + px(kRight) + "\" y2=\"" +
         px(y) + "\" stroke=\"#ddd\"/>\n";
    s += "<line class=\"tick y\" data-value=\"" + decade_label(d) + "\" x1=\"" + px(kLeft - 6) + "\" y1=\"" + px(y) +
         "\" x2=\"" + px(kLeft) + "\" y2=\"" + px(y) + "\"/>\n";
    s += "<text class=\"tick-label y\" x=\"" + px(kLeft - 9) + "\" y=\"" + px(y + 4) +
         "\" text-anchor=\"end\" stroke=\"none\">" + decade_label(d) + "</text>\n";
    for (int k = 2; d < ys.hi_decade && k <= 9; ++k) {
      const double ym = ys(k * std::pow(10.0, d));
      s += "<line class=\"minor y\" x1=\"" + px(kLeft - 3) + "\" y1=\"" + px(ym) + "\" x2=\"" + px(kLeft) + "\" y2=\"" +
           px(ym) + "\"/>\n";
    }
  }
  s += "<rect x=\"" + px(kLeft) + "\" y=\"" + px(kTop) + "\" width=\"" + px(kRight - kLeft) + "\" height=\"" +
       px(kBottom - kTop) + "\" fill=\"none\"/>\n";
  s += "<text x=\"" + px(0.5 * (kLeft + kRight)) + "\" y=\"" + px(kBottom + 44) +
       "\" text-anchor=\"middle\" font-size=\"13\" stroke=\"none\">arithmetic intensity (FLOP per byte: weights in "
       "the row's type + activations in and out)</text>\n";
  s += "<text transform=\"translate(24," + px(0.5 * (kTop + kBottom)) +
       ") rotate(-90)\" text-anchor=\"middle\" font-size=\"13\" stroke=\"none\">GFLOP/s</text>\n";
  s += "</g>\n";

  // The roofs: each whole line thin, and the roofline (the lower of the two) drawn over them.
  s += "<g id=\"roofs\" fill=\"none\">\n";
  s += roof_line("memory-roof", c.memory_gbps, 0, xs, ys, "stroke=\"#555\" stroke-width=\"1\" stroke-dasharray=\"4 3\"",
                 "data-gbps=\"" + fixed(c.memory_gbps, 3) + "\"") +
       "\n";
  s += roof_line("compute-roof", 0, c.compute_gflops, xs, ys,
                 "stroke=\"#555\" stroke-width=\"1\" stroke-dasharray=\"4 3\"",
                 "data-gflops=\"" + fixed(c.compute_gflops, 3) + "\"") +
       "\n";
  for (const DotRoof& d : dot_roofs(c))
    s += roof_line(d.id, 0, d.value, xs, ys,
                   "stroke=\"" + std::string(d.colour) + "\" stroke-width=\"1\" stroke-dasharray=\"2 3\"",
                   "data-gflops=\"" + fixed(d.value, 3) + "\"") +
         "\n";
  {
    const double x_lo = std::max(std::pow(10.0, xs.lo_decade), std::pow(10.0, ys.lo_decade) / c.memory_gbps);
    const double x_hi = std::pow(10.0, xs.hi_decade);
    s += "<polyline id=\"roofline\" points=\"" + px(xs(x_lo)) + "," + px(ys(c.memory_gbps * x_lo)) + " " +
         px(xs(ridge)) + "," + px(ys(c.compute_gflops)) + " " + px(xs(x_hi)) + "," + px(ys(c.compute_gflops)) +
         "\" stroke=\"#000\" stroke-width=\"2\"/>\n";
  }
  // The roofs' labels at the left end of the horizontal roofs (where the points, memory-bound
  // there, lie lower) and along the memory roof; the points' labels keep clear of them.
  std::vector<Box> taken;
  auto roof_label = [&](double gflops, const std::string& text, const char* colour) {
    const double y = ys(gflops) - 5;
    s += "<text x=\"" + px(kLeft + 4) + "\" y=\"" + px(y) + "\" font-size=\"11\" fill=\"" + colour + "\">" + text +
         "</text>\n";
    taken.push_back({kLeft + 4, y - 10, kLeft + 4 + 6.4 * double(text.size()), y + 2});
  };
  roof_label(c.compute_gflops, "compute roof " + fixed(c.compute_gflops, 1) + " GFLOP/s", "#333");
  {
    // The memory roof's label along its slope, a little before the ridge.
    const double xl = ridge / 6, x0 = xs(xl), y0 = ys(c.memory_gbps * xl);
    const double angle = std::atan2(ys(c.memory_gbps * xl * 10) - y0, xs(xl * 10) - x0) * 180 / M_PI;
    if (xl > std::pow(10.0, xs.lo_decade) && c.memory_gbps * xl > std::pow(10.0, ys.lo_decade)) {
      // Its box as the bounding box of the rotated text, centred 6 px above the line.
      const double w = 6.4 * 22, h = 12, a = angle * M_PI / 180;
      const double cx = x0 + 6 * std::sin(a), cy = y0 - 6 * std::cos(a);
      const double hw = 0.5 * (std::abs(std::cos(a)) * w + std::abs(std::sin(a)) * h);
      const double hh = 0.5 * (std::abs(std::sin(a)) * w + std::abs(std::cos(a)) * h);
      taken.push_back({cx - hw, cy - hh, cx + hw, cy + hh});
      s += "<text x=\"" + px(x0) + "\" y=\"" + px(y0 - 6) + "\" transform=\"rotate(" + px(angle) + " " + px(x0) + " " +
           px(y0) + ")\" text-anchor=\"middle\" font-size=\"11\" fill=\"#333\">memory roof " + fixed(c.memory_gbps, 1) +
           " GB/s</text>\n";
    }
  }
  for (const DotRoof& d : dot_roofs(c))
    roof_label(d.value, std::string(d.name) + " roof " + fixed(d.value, 1) + " " + d.unit, d.colour);
  s += "</g>\n";

  // The points, coloured by series; ffn's labelled above-right, the peers' below-right.
  std::map<std::string, std::string> colours;
  std::vector<std::string> order;
  for (const auto& p : c.points)
    if (!colours.count(p.series)) {
      colours[p.series] = kPalette[order.size() % std::size(kPalette)];
      order.push_back(p.series);
    }
  s += "<g id=\"points\" font-size=\"10\">\n";
  // taken: the roofs' labels, the markers, then each point's label as it is placed.
  for (const auto& p : c.points) {
    const double x = xs(p.flops_per_byte), y = ys(p.gflops);
    taken.push_back({x - 5.5, y - 5.5, x + 5.5, y + 5.5});
    const bool peer = p.series.rfind("ffn", 0) != 0;
    const std::string attrs = "class=\"point" + std::string(peer ? " peer" : " ffn") + "\" data-series=\"" +
                              escaped(p.series) + "\" data-label=\"" + escaped(p.label) + "\" data-flops-per-byte=\"" +
                              sig3(p.flops_per_byte) + "\" data-gflops=\"" + sig3(p.gflops) + "\"";
    const std::string tooltip =
        p.series + ", " + p.label + ": " + sig3(p.flops_per_byte) + " FLOP/byte, " + sig3(p.gflops) + " GFLOP/s";
    s += marker_svg(marker_of(p.series), x, y, colours[p.series], attrs, tooltip) + "\n";
  }
  for (const auto& p : c.points) {
    const bool peer = p.series.rfind("ffn", 0) != 0;
    const Label l = place_label(xs(p.flops_per_byte), ys(p.gflops), p.label, peer, taken);
    s += "<text class=\"point-label\" x=\"" + px(l.x) + "\" y=\"" + px(l.y) + "\"" +
         (l.end ? " text-anchor=\"end\"" : "") + " fill=\"" + colours[p.series] + "\">" + escaped(p.label) +
         "</text>\n";
  }
  s += "</g>\n";

  // The legend, right of the plot: each series' marker, then the roofs.
  s += "<g id=\"legend\" font-size=\"12\">\n";
  double ly = kTop + 10;
  const double lx = kRight + 24;
  s += "<text x=\"" + px(lx) + "\" y=\"" + px(ly) + "\" font-weight=\"bold\">legend</text>\n";
  for (const auto& name : order) {
    ly += 22;
    s += marker_svg(marker_of(name), lx + 6, ly - 4, colours[name], "class=\"legend-marker\"", name) + "\n";
    s += "<text class=\"legend-entry\" x=\"" + px(lx + 20) + "\" y=\"" + px(ly) + "\">" + escaped(name) + "</text>\n";
  }
  ly += 30;
  s += "<line x1=\"" + px(lx) + "\" y1=\"" + px(ly - 4) + "\" x2=\"" + px(lx + 14) + "\" y2=\"" + px(ly - 4) +
       "\" stroke=\"#000\" stroke-width=\"2\"/>\n";
  s += "<text class=\"legend-entry\" x=\"" + px(lx + 20) + "\" y=\"" + px(ly) + "\">roofline of this run</text>\n";
  ly += 18;
  s += "<text x=\"" + px(lx + 20) + "\" y=\"" + px(ly) + "\" font-size=\"11\">compute " + fixed(c.compute_gflops, 1) +
       " GFLOP/s</text>\n";
  ly += 16;
  s += "<text x=\"" + px(lx + 20) + "\" y=\"" + px(ly) + "\" font-size=\"11\">memory " + fixed(c.memory_gbps, 1) +
       " GB/s</text>\n";
  for (const DotRoof& d : dot_roofs(c)) {
    ly += 16;
    s += "<text x=\"" + px(lx + 20) + "\" y=\"" + px(ly) + "\" font-size=\"11\" fill=\"" + d.colour + "\">" +
         d.name + " " + fixed(d.value, 1) + " " + d.unit + "</text>\n";
  }
  ly += 26;
  for (const char* line : {"circles: ffn forward", "diamonds: ffn training step", "squares: oneDNN matmul",
                           "triangles: PyTorch (seeds)"}) {
    s += "<text x=\"" + px(lx) + "\" y=\"" + px(ly) + "\" font-size=\"10\" fill=\"#444\">" + line + "</text>\n";
    ly += 14;
  }
  s += "</g>\n</svg>\n";
  return s;
}

}  // namespace ffn::cli
