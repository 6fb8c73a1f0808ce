// The roofline picture of ffn bench --svg (tools/ffn/roofline_svg.hpp): the log axes'
// mapping, the decades chosen to hold the run, and the markers placed by that mapping.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "roofline_svg.hpp"

namespace ffn::cli {
namespace {

TEST(RooflineSvg, LogScaleMapsDecadesLinearly) {
  const LogScale x{0, 3, 100, 400};  // 1 … 1000 over 300 px: 100 px a decade
  EXPECT_DOUBLE_EQ(x(1), 100);
  EXPECT_DOUBLE_EQ(x(10), 200);
  EXPECT_DOUBLE_EQ(x(1000), 400);
  EXPECT_NEAR(x(std::sqrt(10.0)), 150, 1e-9);
  const LogScale y{-1, 1, 500, 100};  // upward: larger values higher up (smaller pixel y)
  EXPECT_DOUBLE_EQ(y(0.1), 500);
  EXPECT_DOUBLE_EQ(y(1), 300);
  EXPECT_DOUBLE_EQ(y(10), 100);
}

TEST(RooflineSvg, ScaleHoldsEveryValueInWholeDecades) {
  const LogScale s = log_scale_for({0.5, 14, 150}, 0, 1);
  EXPECT_EQ(s.lo_decade, -1);
  EXPECT_EQ(s.hi_decade, 3);
  const LogScale one = log_scale_for({10}, 0, 1);  // a single value still spans a decade
  EXPECT_EQ(one.lo_decade, 1);
  EXPECT_EQ(one.hi_decade, 2);
}

// The numeric attribute `name` of the first element after `from` in `svg`.
double attribute(const std::string& svg, size_t from, const std::string& name) {
  const size_t at = svg.find(" " + name + "=\"", from);
  EXPECT_NE(at, std::string::npos) << name;
  return std::stod(svg.substr(at + name.size() + 3));
}

TEST(RooflineSvg, PointsAndRoofsArePlacedByTheAxes) {
  RooflineChart c;
  c.title = "t <&> t";
  c.compute_gflops = 400;
  c.memory_gbps = 40;  // ridge at 10 FLOP/byte
  c.points = {{"ffn f32", "f32 T=1", 0.5, 20}, {"PyTorch f32", "T=1", 0.5, 10}};
  const std::string svg = roofline_svg(c);
  EXPECT_NE(svg.find("t &lt;&amp;&gt; t"), std::string::npos);  // text is escaped
  // The ranges: x from the point (0.5 / 1.3) to the ridge (10 · 1.5): 0.1 … 100;
  // y from the peer (10 / 1.3) to the roof (400 · 1.3): 1 … 1000. Plot area 80…740, 570…78.
  const LogScale xs{-1, 2, 80, 740}, ys{0, 3, 570, 78};
  const size_t ffn = svg.find("<circle class=\"point ffn\"");
  ASSERT_NE(ffn, std::string::npos);
  EXPECT_NEAR(attribute(svg, ffn, "cx"), xs(0.5), 0.01);
  EXPECT_NEAR(attribute(svg, ffn, "cy"), ys(20), 0.01);
  EXPECT_NE(svg.find("<path class=\"point peer\" data-series=\"PyTorch f32\""), std::string::npos);
  const size_t compute = svg.find("id=\"compute-roof\"");
  ASSERT_NE(compute, std::string::npos);
  EXPECT_NEAR(attribute(svg, compute, "y1"), ys(400), 0.01);
  EXPECT_NEAR(attribute(svg, compute, "y2"), ys(400), 0.01);
  // The memory roof y = 40·x enters at the bottom (y = 1 at x = 0.025, left of the plot:
  // so at x = 0.1, y = 4) and leaves at the top (y = 1000 at x = 25).
  const size_t memory = svg.find("id=\"memory-roof\"");
  ASSERT_NE(memory, std::string::npos);
  EXPECT_NEAR(attribute(svg, memory, "x1"), xs(0.1), 0.01);
  EXPECT_NEAR(attribute(svg, memory, "y1"), ys(4), 0.01);
  EXPECT_NEAR(attribute(svg, memory, "x2"), xs(25), 0.01);
  EXPECT_NEAR(attribute(svg, memory, "y2"), ys(1000), 0.01);
}

}  // namespace
}  // namespace ffn::cli
