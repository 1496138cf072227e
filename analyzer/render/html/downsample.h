// Down-sampling of time series for the plots: a 1 GB trace holds millions of GPU
// allocations and thousands of memory samples, a plot is about a thousand pixels wide.
//
// A series is a step function given by its changes, (time, value) in time order. The
// down-sampler splits the time range into equal buckets and keeps, per bucket, the
// points where the value was lowest and highest and the bucket's last point (what the
// step carries into the next bucket), in time order. So a one-sample spike or dip
// survives at any size, which a plain average or every-Nth point would lose.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace colabtrace::analyzer::html {

struct XY {
  uint64_t x;  // time, ns
  double y;
};

// The most points one plotted series keeps.
inline constexpr size_t kMaxSeriesPoints = 1000;

class SeriesDownsampler {
 public:
  // Points will lie in [x0, x1]; at most max_points come out (at least 3).
  SeriesDownsampler(uint64_t x0, uint64_t x1, size_t max_points = kMaxSeriesPoints);

  // Adds the next change; x never decreases (a smaller x is treated as the previous one).
  void Add(uint64_t x, double y);

  // The series: every point when there were at most max_points, else per bucket its
  // lowest, highest and last point, in time order and without repeats.
  std::vector<XY> Finish();

  size_t added() const { return added_; }

 private:
  struct Bucket {
    bool used = false;
    XY lo{}, hi{}, last{};
  };
  void ToBuckets();
  void AddToBucket(const XY& p);

  uint64_t x0_, x1_;
  size_t max_points_;
  size_t added_ = 0;
  uint64_t last_x_ = 0;
  std::vector<XY> raw_;         // while there are few points
  std::vector<Bucket> buckets_;  // once there are more
};

// A series down-sampled in one call.
std::vector<XY> Downsample(const std::vector<XY>& points, uint64_t x0, uint64_t x1,
                           size_t max_points = kMaxSeriesPoints);

// The series on a fixed grid of `columns` equal time columns over [x0, x1], for
// stacking several series: each column holds the highest value the step function took
// in it (its value carried from before included), from the column of the first point to
// the column of `until` (the series' end; its last point when 0); `absent` elsewhere.
std::vector<double> ColumnMax(const std::vector<XY>& points, uint64_t x0, uint64_t x1,
                              size_t columns, uint64_t until, double absent);

}  // namespace colabtrace::analyzer::html
