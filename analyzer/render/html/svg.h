// Inline SVG for the HTML report: a small writer for the shapes the plots use, and the
// two chart frames they are drawn in (a time chart with a byte axis, a horizontal bar
// chart). Every text argument is a trace string or derived from one: the writer escapes
// it (escape.h). Colours come from CSS classes in the page's one stylesheet (page.cpp),
// so the SVG carries no style of its own and no script.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "render/html/downsample.h"

namespace colabtrace::analyzer::html {

// "12.5" (one decimal, no trailing ".0" noise for integers): SVG coordinates.
std::string Num(double v);

// The SVG element under construction: shapes are appended in drawing order.
class Svg {
 public:
  Svg(int width, int height, std::string_view css_class, std::string_view aria_label);

  // A <title> child makes a native tooltip; `title` may be empty (no tooltip).
  void Rect(double x, double y, double w, double h, std::string_view cls, std::string_view title = {});
  void Line(double x1, double y1, double x2, double y2, std::string_view cls);
  void Polyline(const std::vector<std::pair<double, double>>& pts, std::string_view cls);
  void Polygon(const std::vector<std::pair<double, double>>& pts, std::string_view cls,
               std::string_view title = {});
  // anchor: "start", "middle" or "end".
  void Text(double x, double y, std::string_view text, std::string_view cls, std::string_view anchor = "start");
  // A group of shapes with a class, data attributes (already safe: built from numbers
  // and fixed words) and a tooltip for all of them; closed by EndGroup.
  void BeginGroup(std::string_view cls, std::string_view data_attrs, std::string_view title);
  void EndGroup();
  // A marker (a small triangle pointing down at x, y) with its data attributes
  // (already safe: built from numbers and fixed words), e.g. data-kind="oom" data-n="1".
  void Marker(double x, double y, std::string_view cls, std::string_view data_attrs, std::string_view title);

  int width() const { return width_; }
  int height() const { return height_; }
  std::string Finish() &&;

 private:
  int width_, height_;
  std::string out_;
};

// An entry of a legend under a plot: a colour swatch (CSS class) and a label.
struct LegendEntry {
  std::string cls;
  std::string label;  // raw: escaped when written
};
std::string Legend(const std::vector<LegendEntry>& entries);

// What a TimeChart's y axis counts.
enum class YUnit { kBytes, kNanoseconds };

// A plot of values over time: x is [t0, t1] in ns since the run began (labelled in
// seconds), y is [0, y_max] (labelled as bytes, or as durations). Draws its frame and
// axes at Finish. Every time chart of the page has the same frame, so plots of one run
// line up.
class TimeChart {
 public:
  TimeChart(uint64_t t0, uint64_t t1, double y_max, std::string_view aria_label,
            int width = 900, int height = 260, YUnit y_unit = YUnit::kBytes);

  double X(uint64_t t) const;
  double Y(double v) const;
  double top() const { return kTop; }

  // A step function through the (down-sampled) points, drawn to `until` when that is
  // later than its last point.
  void Steps(const std::vector<XY>& pts, std::string_view cls, uint64_t until = 0);
  // A filled band between two step functions given on the same column grid
  // (downsample.h ColumnMax); columns where `upper` is negative are not drawn.
  void Band(const std::vector<double>& lower, const std::vector<double>& upper, std::string_view cls,
            std::string_view title);
  // A horizontal line at v with a label at its right end (a limit, a capacity).
  void Limit(double v, std::string_view cls, std::string_view label);
  // A vertical line at t with a label at its top (a kill).
  void Event(uint64_t t, std::string_view cls, std::string_view label);
  // A marker at the top edge at time t (failures), see Svg::Marker.
  void TopMarker(uint64_t t, std::string_view cls, std::string_view data_attrs, std::string_view title);

  Svg& svg() { return svg_; }
  std::string Finish() &&;

 private:
  static constexpr double kLeft = 78, kRight = 150, kTop = 16, kBottom = 30;
  uint64_t t0_, t1_;
  double y_max_;
  YUnit y_unit_;
  Svg svg_;
};

// A horizontal bar chart: one row per bar, label left, value text right.
struct Bar {
  std::string label;       // raw
  double value = 0;
  std::string value_text;  // raw
  std::string title;       // raw tooltip
  std::string cls = "bar";
};
std::string BarChart(const std::vector<Bar>& bars, std::string_view aria_label, int width = 900);

}  // namespace colabtrace::analyzer::html
