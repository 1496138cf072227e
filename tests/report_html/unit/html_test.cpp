// Unit tests of the HTML report's escaping (render/html/escape.h), down-sampling
// (render/html/downsample.h) and evidence units (core/format.h UnitOfField).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "render/html/downsample.h"
#include "render/html/escape.h"
#include "render/render.h"
#include "report/report.h"

namespace colabtrace::analyzer::html {
namespace {

TEST(Escape, MarkupCharactersBecomeEntities) {
  EXPECT_EQ(Text("<img src=x onerror=alert(1)>.bin"), "&lt;img src=x onerror=alert(1)&gt;.bin");
  EXPECT_EQ(Text("a&b\"c'd"), "a&amp;b&quot;c&#39;d");
  EXPECT_EQ(Text("</script><script>alert(1)</script>"),
            "&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;");
}

TEST(Escape, ControlBytesAndInvalidUtf8BecomeVisible) {
  EXPECT_EQ(Text("a\nb\tc\x1b[31m"), "a\\nb\\tc\\x1b[31m");
  EXPECT_EQ(Text(std::string("bad\xff\xfe", 5)), "bad\\xff\\xfe");
  EXPECT_EQ(Text("caf\xc3\xa9 \xe2\x9c\x93"), "caf\xc3\xa9 \xe2\x9c\x93");  // valid UTF-8 stays
  EXPECT_EQ(Text(std::string("nul\0x", 5)), "nul\\x00x");
}

TEST(Escape, BlockKeepsLinesAndEscapesEach) {
  EXPECT_EQ(Block("frame <a>\nframe &b\n"), "frame &lt;a&gt;\nframe &amp;b\n");
  EXPECT_EQ(Block("x\r\n"), "x\\r\n");
}

TEST(Escape, ShortenCutsTheMiddleOnUtf8Boundaries) {
  EXPECT_EQ(Shorten("short", 40), "short");
  const std::string path = "/data/" + std::string(100, 'd') + "/file.bin";
  const std::string s = Shorten(path, 40);
  EXPECT_LE(s.size(), 40u);
  EXPECT_EQ(s.substr(0, 6), "/data/");
  EXPECT_EQ(s.substr(s.size() - 8), "file.bin");
  EXPECT_NE(s.find("\xe2\x80\xa6"), std::string::npos);
  // Two-byte characters are never split.
  std::string wide;
  for (int i = 0; i < 60; ++i) wide += "\xc3\xa9";
  const std::string w = Shorten(wide, 41);
  EXPECT_EQ(Text(w).find("\\x"), std::string::npos) << Text(w);
}

TEST(Downsample, FewPointsAreKeptExactly) {
  std::vector<XY> pts = {{0, 1}, {5, 3}, {9, 2}};
  const auto out = Downsample(pts, 0, 10, 100);
  ASSERT_EQ(out.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(out[i].x, pts[i].x);
    EXPECT_EQ(out[i].y, pts[i].y);
  }
}

TEST(Downsample, PeaksAndDipsSurviveAMillionPoints) {
  std::vector<XY> pts;
  for (uint64_t i = 0; i < 1'000'000; ++i) pts.push_back({i, 100.0 + static_cast<double>(i % 7)});
  pts[123'457].y = 1e9;  // one-sample spike
  pts[765'432].y = 0;    // one-sample dip
  pts.back().y = 42;     // the last value
  const auto out = Downsample(pts, 0, 1'000'000, kMaxSeriesPoints);
  EXPECT_LE(out.size(), kMaxSeriesPoints);
  EXPECT_GT(out.size(), kMaxSeriesPoints / 2);
  auto has = [&](uint64_t x, double y) {
    return std::any_of(out.begin(), out.end(), [&](const XY& p) { return p.x == x && p.y == y; });
  };
  EXPECT_TRUE(has(123'457, 1e9));
  EXPECT_TRUE(has(765'432, 0));
  EXPECT_EQ(out.back().x, 999'999u);
  EXPECT_EQ(out.back().y, 42);
  EXPECT_TRUE(std::is_sorted(out.begin(), out.end(), [](const XY& a, const XY& b) { return a.x < b.x; }));
  double hi = 0;
  for (const XY& p : out) hi = std::max(hi, p.y);
  EXPECT_EQ(hi, 1e9);
}

TEST(Downsample, StreamingEqualsOneCallAndOutOfOrderTimesAreClamped) {
  SeriesDownsampler d(0, 100, 9);
  for (uint64_t i = 0; i < 100; ++i) d.Add(i, static_cast<double>(i));
  d.Add(50, 7);  // earlier than the previous point: taken as time 99
  EXPECT_EQ(d.added(), 101u);
  const auto out = d.Finish();
  EXPECT_LE(out.size(), 9u);
  EXPECT_EQ(out.back().x, 99u);
  EXPECT_EQ(out.back().y, 7);
}

TEST(ColumnMax, CarriesValuesAndMarksAbsence) {
  // Values 5 at t=10, 2 at t=35, until t=60, over [0, 100) in 10 columns.
  const auto cols = ColumnMax({{10, 5}, {35, 2}}, 0, 100, 10, 60, -1);
  const std::vector<double> want = {-1, 5, 5, 5, 2, 2, 2, -1, -1, -1};
  EXPECT_EQ(cols, want);
  // A spike inside one column is that column's value.
  const auto spike = ColumnMax({{0, 1}, {41, 9}, {42, 1}}, 0, 100, 10, 99, -1);
  EXPECT_EQ(spike[4], 9);
  EXPECT_EQ(spike[5], 1);
}

TEST(Units, ByFieldName) {
  EXPECT_EQ(UnitOfField("request_bytes"), FieldUnit::kBytes);
  EXPECT_EQ(UnitOfField("bytes"), FieldUnit::kBytes);
  EXPECT_EQ(UnitOfField("size"), FieldUnit::kBytes);
  EXPECT_EQ(UnitOfField("cubin_size"), FieldUnit::kBytes);
  EXPECT_EQ(UnitOfField("growth_rate_bytes_per_s"), FieldUnit::kBytesPerSecond);
  EXPECT_EQ(UnitOfField("at_ns"), FieldUnit::kNanoseconds);
  EXPECT_EQ(UnitOfField("mtime_ns"), FieldUnit::kNone);  // a wall-clock time
  EXPECT_EQ(UnitOfField("fault_address"), FieldUnit::kAddress);
  EXPECT_EQ(UnitOfField("address"), FieldUnit::kAddress);
  EXPECT_EQ(UnitOfField("count"), FieldUnit::kNone);
  EXPECT_EQ(UnitOfField("pids"), FieldUnit::kNone);
  EXPECT_EQ(FormatInUnit(FieldUnit::kBytes, 2147483648ull), "2.0 GiB");
  EXPECT_EQ(FormatInUnit(FieldUnit::kNanoseconds, 3389926478ull), "3.39 s");
  EXPECT_EQ(FormatInUnit(FieldUnit::kAddress, 0x7f0012340000ull), "0x7f0012340000");
  EXPECT_EQ(FormatInUnit(FieldUnit::kNone, 17), "17");
}

// The evidence tables show numbers in their unit (the raw number in the title); the JSON
// keeps them raw.
TEST(Units, EvidenceTablesFormatByUnitAndJsonStaysRaw) {
  const std::vector<ProcessTrace> none;
  ReportBuilder report(none, ReportOptions{});
  Finding f;
  f.id = "gpu.oom";
  f.severity = Severity::kError;
  f.pid = 7;
  f.summary = "s";
  f.evidence["request_bytes"] = uint64_t{2147483648ull};
  f.evidence["at_ns"] = uint64_t{3389926478ull};
  f.evidence["growth_rate_bytes_per_s"] = 1048576.0;
  f.evidence["fault_address"] = uint64_t{0x7f0012340000ull};
  f.evidence["mtime_ns"] = uint64_t{1700000000123456789ull};
  f.evidence["count"] = 3;
  f.evidence["segment_bytes"] = Json::MakeArray();
  f.evidence["segment_bytes"].Append(uint64_t{1024});
  f.evidence["segment_bytes"].Append(uint64_t{2048});
  report.AddFinding(f);
  report.Finish();
  const std::string html = RenderHtml(report);
  EXPECT_NE(html.find("<tr><th>request_bytes</th><td><span class=\"unit\" title=\"2147483648\">2.0 GiB</span></td></tr>"
                      "<tr><th>at_ns</th><td><span class=\"unit\" title=\"3389926478\">3.39 s</span></td></tr>"
                      "<tr><th>growth_rate_bytes_per_s</th><td><span class=\"unit\" title=\"1.04858e+06\">1.0 MiB/s</span></td></tr>"
                      "<tr><th>fault_address</th><td><span class=\"unit\" title=\"139638282125312\">0x7f0012340000</span></td></tr>"
                      "<tr><th>mtime_ns</th><td>1700000000123456789</td></tr>"
                      "<tr><th>count</th><td>3</td></tr>"
                      "<tr><th>segment_bytes</th><td><span class=\"unit\" title=\"1024\">1.0 KiB</span>, "
                      "<span class=\"unit\" title=\"2048\">2.0 KiB</span></td></tr>"),
            std::string::npos)
      << html;
  const std::string json = RenderJson(report);
  EXPECT_NE(json.find("\"request_bytes\": 2147483648,"), std::string::npos) << json;
  EXPECT_NE(json.find("\"at_ns\": 3389926478,"), std::string::npos) << json;
}

}  // namespace
}  // namespace colabtrace::analyzer::html
