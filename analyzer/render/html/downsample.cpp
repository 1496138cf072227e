#include "render/html/downsample.h"

#include <algorithm>

namespace colabtrace::analyzer::html {
namespace {

size_t ColumnOf(uint64_t x, uint64_t x0, uint64_t x1, size_t columns) {
  if (x <= x0 || x1 <= x0) return 0;
  const long double f = static_cast<long double>(x - x0) / static_cast<long double>(x1 - x0);
  return std::min(columns - 1, static_cast<size_t>(f * static_cast<long double>(columns)));
}

}  // namespace

SeriesDownsampler::SeriesDownsampler(uint64_t x0, uint64_t x1, size_t max_points)
    : x0_(x0), x1_(std::max(x1, x0)), max_points_(std::max<size_t>(max_points, 3)), last_x_(x0) {}

void SeriesDownsampler::Add(uint64_t x, double y) {
  x = std::max(x, last_x_);
  last_x_ = x;
  ++added_;
  const XY p{x, y};
  if (buckets_.empty()) {
    raw_.push_back(p);
    if (raw_.size() > max_points_) ToBuckets();
    return;
  }
  AddToBucket(p);
}

void SeriesDownsampler::ToBuckets() {
  buckets_.assign(max_points_ / 3, Bucket{});
  for (const XY& p : raw_) AddToBucket(p);
  raw_.clear();
  raw_.shrink_to_fit();
}

void SeriesDownsampler::AddToBucket(const XY& p) {
  Bucket& b = buckets_[ColumnOf(p.x, x0_, x1_, buckets_.size())];
  if (!b.used) {
    b = Bucket{true, p, p, p};
    return;
  }
  if (p.y < b.lo.y) b.lo = p;
  if (p.y > b.hi.y) b.hi = p;
  b.last = p;
}

std::vector<XY> SeriesDownsampler::Finish() {
  if (buckets_.empty()) return std::move(raw_);
  std::vector<XY> out;
  out.reserve(max_points_);
  auto push = [&out](const XY& p) {
    if (out.empty() || out.back().x != p.x || out.back().y != p.y) out.push_back(p);
  };
  for (const Bucket& b : buckets_) {
    if (!b.used) continue;
    // lo and hi in time order, then the last point (it may be one of them).
    const XY& first = b.lo.x <= b.hi.x ? b.lo : b.hi;
    const XY& second = b.lo.x <= b.hi.x ? b.hi : b.lo;
    push(first);
    push(second);
    push(b.last);
  }
  return out;
}

std::vector<XY> Downsample(const std::vector<XY>& points, uint64_t x0, uint64_t x1, size_t max_points) {
  SeriesDownsampler d(x0, x1, max_points);
  for (const XY& p : points) d.Add(p.x, p.y);
  return d.Finish();
}

std::vector<double> ColumnMax(const std::vector<XY>& points, uint64_t x0, uint64_t x1, size_t columns,
                              uint64_t until, double absent) {
  std::vector<double> out(columns, absent);
  if (points.empty() || columns == 0) return out;
  const size_t first = ColumnOf(points.front().x, x0, x1, columns);
  const size_t last = ColumnOf(std::max(until, points.back().x), x0, x1, columns);
  size_t k = 0;
  double carried = points.front().y;
  for (size_t c = first; c <= last; ++c) {
    double hi = carried;
    while (k < points.size() && ColumnOf(points[k].x, x0, x1, columns) <= c) {
      carried = points[k++].y;
      hi = std::max(hi, carried);
    }
    out[c] = hi;
  }
  return out;
}

}  // namespace colabtrace::analyzer::html
