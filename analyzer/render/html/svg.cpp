#include "render/html/svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "render/html/escape.h"
#include "report/report.h"

namespace colabtrace::analyzer::html {

std::string Num(double v) {
  if (!std::isfinite(v)) v = 0;
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", v);
  std::string s = buf;
  if (s.size() > 2 && s.compare(s.size() - 2, 2, ".0") == 0) s.resize(s.size() - 2);
  return s;
}

Svg::Svg(int width, int height, std::string_view css_class, std::string_view aria_label)
    : width_(width), height_(height) {
  out_ = "<svg class=\"" + std::string(css_class) + "\" viewBox=\"0 0 " +
         std::to_string(width) + " " + std::to_string(height) + "\" width=\"" + std::to_string(width) +
         "\" height=\"" + std::to_string(height) + "\" role=\"img\" aria-label=\"" + html::Text(aria_label) +
         "\">\n";
}

void Svg::Rect(double x, double y, double w, double h, std::string_view cls, std::string_view title) {
  out_ += "<rect class=\"" + std::string(cls) + "\" x=\"" + Num(x) + "\" y=\"" + Num(y) + "\" width=\"" +
          Num(std::max(w, 0.0)) + "\" height=\"" + Num(std::max(h, 0.0)) + "\"";
  if (title.empty()) {
    out_ += "/>\n";
  } else {
    out_ += "><title>" + html::Text(title) + "</title></rect>\n";
  }
}

void Svg::Line(double x1, double y1, double x2, double y2, std::string_view cls) {
  out_ += "<line class=\"" + std::string(cls) + "\" x1=\"" + Num(x1) + "\" y1=\"" + Num(y1) + "\" x2=\"" +
          Num(x2) + "\" y2=\"" + Num(y2) + "\"/>\n";
}

namespace {
std::string Points(const std::vector<std::pair<double, double>>& pts) {
  std::string s;
  s.reserve(pts.size() * 12);
  for (const auto& [x, y] : pts) {
    if (!s.empty()) s += ' ';
    s += Num(x) + "," + Num(y);
  }
  return s;
}
}  // namespace

void Svg::Polyline(const std::vector<std::pair<double, double>>& pts, std::string_view cls) {
  if (pts.empty()) return;
  out_ += "<polyline class=\"" + std::string(cls) + "\" points=\"" + Points(pts) + "\"/>\n";
}

void Svg::Polygon(const std::vector<std::pair<double, double>>& pts, std::string_view cls, std::string_view title) {
  if (pts.empty()) return;
  out_ += "<polygon class=\"" + std::string(cls) + "\" points=\"" + Points(pts) + "\"";
  if (title.empty()) {
    out_ += "/>\n";
  } else {
    out_ += "><title>" + html::Text(title) + "</title></polygon>\n";
  }
}

void Svg::Text(double x, double y, std::string_view text, std::string_view cls, std::string_view anchor) {
  out_ += "<text class=\"" + std::string(cls) + "\" x=\"" + Num(x) + "\" y=\"" + Num(y) + "\" text-anchor=\"" +
          std::string(anchor) + "\">" + html::Text(text) + "</text>\n";
}

void Svg::Marker(double x, double y, std::string_view cls, std::string_view data_attrs, std::string_view title) {
  out_ += "<polygon class=\"" + std::string(cls) + "\" " + std::string(data_attrs) + " points=\"" + Num(x - 5) +
          "," + Num(y - 8) + " " + Num(x + 5) + "," + Num(y - 8) + " " + Num(x) + "," + Num(y) + "\"><title>" +
          html::Text(title) + "</title></polygon>\n";
}

void Svg::BeginGroup(std::string_view cls, std::string_view data_attrs, std::string_view title) {
  out_ += "<g class=\"" + std::string(cls) + "\"" + (data_attrs.empty() ? "" : " ") + std::string(data_attrs) + ">";
  if (!title.empty()) out_ += "<title>" + html::Text(title) + "</title>";
  out_ += "\n";
}

void Svg::EndGroup() { out_ += "</g>\n"; }

std::string Svg::Finish() && {
  out_ += "</svg>\n";
  return std::move(out_);
}

std::string Legend(const std::vector<LegendEntry>& entries) {
  if (entries.empty()) return "";
  std::string s = "<ul class=\"legend\">";
  for (const LegendEntry& e : entries) {
    s += "<li><span class=\"sw " + e.cls + "\"></span>" + html::Text(e.label) + "</li>";
  }
  return s + "</ul>\n";
}

// ---- TimeChart -------------------------------------------------------------------------

namespace {

// A round step for about `n` ticks over [0, span].
double TickStep(double span, int n) {
  if (span <= 0) return 1;
  const double raw = span / n;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * mag >= raw) return m * mag;
  }
  return 10 * mag;
}

// Byte ticks on binary steps (1, 2, 4, 8 ... of KiB, MiB, GiB).
double ByteTickStep(double span, int n) {
  if (span <= 0) return 1;
  double step = 1;
  while (step * n < span) step *= 2;
  return step;
}

std::string Seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), s < 10 ? "%.2g s" : "%.0f s", s);
  if (s == 0) return "0 s";
  return buf;
}

}  // namespace

TimeChart::TimeChart(uint64_t t0, uint64_t t1, double y_max, std::string_view aria_label, int width, int height,
                     YUnit y_unit)
    : t0_(t0), t1_(std::max(t1, t0 + 1)), y_max_(y_max > 0 ? y_max : 1), y_unit_(y_unit),
      svg_(width, height, "chart", aria_label) {
  svg_.Rect(kLeft, kTop, width - kLeft - kRight, height - kTop - kBottom, "plot");
}

double TimeChart::X(uint64_t t) const {
  t = std::clamp(t, t0_, t1_);
  return kLeft + (svg_.width() - kLeft - kRight) * static_cast<double>(t - t0_) / static_cast<double>(t1_ - t0_);
}

double TimeChart::Y(double v) const {
  v = std::clamp(v, 0.0, y_max_);
  const double h = svg_.height() - kTop - kBottom;
  return kTop + h - h * v / y_max_;
}

void TimeChart::Steps(const std::vector<XY>& pts, std::string_view cls, uint64_t until) {
  if (pts.empty()) return;
  std::vector<std::pair<double, double>> line;
  line.reserve(pts.size() * 2 + 1);
  for (size_t i = 0; i < pts.size(); ++i) {
    const double x = X(pts[i].x), y = Y(pts[i].y);
    if (i > 0) line.emplace_back(x, line.back().second);
    line.emplace_back(x, y);
  }
  const uint64_t end = std::max(until, pts.back().x);
  line.emplace_back(X(end), line.back().second);
  svg_.Polyline(line, cls);
}

void TimeChart::Band(const std::vector<double>& lower, const std::vector<double>& upper, std::string_view cls,
                     std::string_view title) {
  const size_t n = std::min(lower.size(), upper.size());
  if (n == 0) return;
  const double x_left = kLeft, w = (svg_.width() - kLeft - kRight) / static_cast<double>(n);
  // One polygon per run of columns where the series is present.
  size_t c = 0;
  while (c < n) {
    while (c < n && upper[c] < 0) ++c;
    const size_t from = c;
    while (c < n && upper[c] >= 0) ++c;
    if (from == c) break;
    std::vector<std::pair<double, double>> poly;
    for (size_t k = from; k < c; ++k) {
      poly.emplace_back(x_left + w * k, Y(upper[k]));
      poly.emplace_back(x_left + w * (k + 1), Y(upper[k]));
    }
    for (size_t k = c; k-- > from;) {
      const double lo = lower[k] < 0 ? 0 : lower[k];
      poly.emplace_back(x_left + w * (k + 1), Y(lo));
      poly.emplace_back(x_left + w * k, Y(lo));
    }
    svg_.Polygon(poly, cls, title);
  }
}

void TimeChart::Limit(double v, std::string_view cls, std::string_view label) {
  const double y = Y(v);
  svg_.Line(kLeft, y, svg_.width() - kRight, y, cls);
  svg_.Text(svg_.width() - kRight + 4, y + 4, label, "limit-label");
}

void TimeChart::Event(uint64_t t, std::string_view cls, std::string_view label) {
  const double x = X(t);
  svg_.Line(x, kTop, x, svg_.height() - kBottom, cls);
  svg_.Text(x - 3, kTop + 12, label, "event-label", "end");
}

void TimeChart::TopMarker(uint64_t t, std::string_view cls, std::string_view data_attrs, std::string_view title) {
  svg_.Marker(X(t), kTop + 9, cls, data_attrs, title);
}

std::string TimeChart::Finish() && {
  const double right = svg_.width() - kRight, bottom = svg_.height() - kBottom;
  svg_.Line(kLeft, bottom, right, bottom, "axis");
  svg_.Line(kLeft, kTop, kLeft, bottom, "axis");
  const double span_s = static_cast<double>(t1_ - t0_) / 1e9;
  const double xs = TickStep(span_s, 8);
  for (double s = 0; s <= span_s * 1.0001; s += xs) {
    const double x = X(t0_ + static_cast<uint64_t>(s * 1e9));
    svg_.Line(x, bottom, x, bottom + 4, "axis");
    svg_.Text(x, bottom + 16, Seconds(s), "tick", "middle");
  }
  const bool bytes = y_unit_ == YUnit::kBytes;
  const double ys = bytes ? ByteTickStep(y_max_, 5) : TickStep(y_max_, 5);
  for (double v = 0; v <= y_max_ * 1.0001; v += ys) {
    const double y = Y(v);
    svg_.Line(kLeft - 4, y, right, y, v == 0 ? "axis" : "grid");
    const uint64_t u = static_cast<uint64_t>(v);
    svg_.Text(kLeft - 6, y + 4, bytes ? FormatBytes(u) : u == 0 ? "0" : FormatDurationNs(u), "tick", "end");
  }
  return std::move(svg_).Finish();
}

// ---- BarChart --------------------------------------------------------------------------

std::string BarChart(const std::vector<Bar>& bars, std::string_view aria_label, int width) {
  constexpr double kRow = 20, kLabel = 330, kValue = 110;
  const int height = static_cast<int>(kRow * static_cast<double>(bars.size()) + 8);
  Svg svg(width, height, "bars", aria_label);
  double top = 0;
  for (const Bar& b : bars) top = std::max(top, b.value);
  if (top <= 0) top = 1;
  const double span = width - kLabel - kValue - 10;
  double y = 4;
  for (const Bar& b : bars) {
    svg.Text(kLabel - 6, y + 14, Shorten(b.label, 52), "bar-label", "end");
    svg.Rect(kLabel, y + 3, std::max(1.0, span * b.value / top), kRow - 6, b.cls, b.title);
    svg.Text(kLabel + span * b.value / top + 6, y + 14, b.value_text, "tick");
    y += kRow;
  }
  return std::move(svg).Finish();
}

}  // namespace colabtrace::analyzer::html
