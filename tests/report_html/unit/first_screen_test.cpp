// Unit tests of the report's first screen (render/first_screen.h) in the text and HTML
// renderers, and of the HTML step plot (render/html/steps_section.cpp), on reports built
// by the real report builder over traces made with the trace builders: a healthy run (one
// line), a run whose 26 handled cuDNN probes are one line with their count, a killed
// process (the verdict names it and links to it), stepping runs (steps and median shown,
// one bar per step, down-sampled past 1,000 steps with the slowest step kept).
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <algorithm>
#include <string>
#include <vector>

#include "abi_trace_builder.h"
#include "host_traces.h"
#include "render/first_screen.h"
#include "render/render.h"
#include "report/report.h"
#include "report_findings.h"
#include "step_trace_builder.h"

namespace colabtrace::testing {
namespace {

using analyzer::BuildReport;
using analyzer::ProcessTrace;
using analyzer::RenderHtml;
using analyzer::RenderText;
using format::LibApi;

constexpr uint64_t kMs = 1'000'000;

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t nl = text.find('\n', pos);
    out.push_back(text.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos));
    if (nl == std::string::npos) break;
    pos = nl + 1;
  }
  return out;
}

// The lines of the text report's section `title` (up to the next blank line).
std::vector<std::string> Section(const std::string& text, const std::string& title) {
  std::vector<std::string> out;
  bool in = false;
  for (const std::string& l : Lines(text)) {
    if (l == "== " + title + " ==") {
      in = true;
    } else if (in && l.empty()) {
      break;
    } else if (in) {
      out.push_back(l);
    }
  }
  return out;
}

// The first screen: the lines after "colabtrace report" up to the first blank line after
// the vital signs (the first section's title follows it).
std::vector<std::string> FirstScreenLines(const std::string& text) {
  std::vector<std::string> lines = Lines(text);
  std::vector<std::string> out;
  for (size_t i = 1; i < lines.size() && !lines[i].starts_with("== "); ++i) out.push_back(lines[i]);
  while (!out.empty() && out.back().empty()) out.pop_back();
  return out;
}

size_t Count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + what.size())) ++n;
  return n;
}

// A process that reads one 4 KiB file from local disk and exits 0.
ProcessTrace QuietProcess(uint32_t pid) {
  iotest::TraceBuilder b(pid);
  iotest::Mounts(b);
  b.ReadWholeFile("/data/config.json", 1, 5, 4096, kMs, kMs);
  return b.Finish();
}

TEST(FirstScreen, AHealthyRunSaysSoInOneLine) {
  auto traces = RunOf(QuietProcess(10));
  auto report = BuildReport(traces, {});
  ASSERT_TRUE(report->findings().empty());
  const std::string text = RenderText(*report, false);
  const std::vector<std::string> screen = FirstScreenLines(text);
  ASSERT_GE(screen.size(), 3u) << text;
  EXPECT_EQ(screen[0], "Healthy: no errors or warnings in 1 process");
  EXPECT_EQ(screen[1], "  processes    1, exited 0");
  EXPECT_TRUE(screen[2].starts_with("  wall time    ")) << screen[2];
  // Nothing stepped, no GPU was used: no line for them.
  for (const std::string& l : screen) {
    EXPECT_FALSE(l.starts_with("  steps")) << l;
    EXPECT_FALSE(l.starts_with("  input wait")) << l;
    EXPECT_FALSE(l.starts_with("  GPU memory")) << l;
  }
  EXPECT_NE(std::find(screen.begin(), screen.end(), "  file I/O     1 opens, 2 reads (4.0 KiB), 2 stats; 2.0 ms in these calls"),
            screen.end())
      << text;
  EXPECT_EQ(Section(text, "Findings"), std::vector<std::string>{"No findings."});

  const std::string html = RenderHtml(*report);
  EXPECT_NE(html.find("<section id=\"verdict\" class=\"verdict healthy\" data-errors=\"0\" data-warnings=\"0\" "
                      "data-info=\"0\">\n<p class=\"verdict-line\">Healthy: no errors or warnings in 1 process</p>"),
            std::string::npos);
  EXPECT_EQ(html.find("<ul class=\"worst\">"), std::string::npos);
  EXPECT_EQ(html.find("<section id=\"steps\">"), std::string::npos);  // nothing stepped
  // The verdict comes first on the page.
  EXPECT_LT(html.find("id=\"verdict\""), html.find("id=\"findings\""));
}

// A python3 process (pid, ppid) that exited with `code` and recorded nothing else.
ProcessTrace ExitedWith(uint32_t pid, uint32_t ppid, int64_t code) {
  TraceBytesBuilder b(pid, hosttest::kStart, /*ended=*/true);
  hosttest::ProcessStartRecords(b, pid, ppid, {"python3", "job.py"});
  format::Exit e;
  e.ts = hosttest::kStart + 1000;
  e.code = code;
  b.Append(e);
  return b.Parse();
}

// A job whose main process exits non-zero is never headlined healthy, even with no
// finding (SystemExit(3), sys.exit("usage: ...")); a child's non-zero exit that its
// parent handled does not fail the job.
TEST(FirstScreen, AMainProcessThatExitedNonZeroIsNeverHealthy) {
  auto traces = RunOf(ExitedWith(10, 1, 3));
  auto report = BuildReport(traces, {});
  ASSERT_TRUE(report->findings().empty());
  const std::vector<std::string> screen = FirstScreenLines(RenderText(*report, false));
  ASSERT_FALSE(screen.empty());
  EXPECT_EQ(screen[0], "Failed: the main process (pid 10) exited 3, and no finding says why");
  const std::string html = RenderHtml(*report);
  EXPECT_NE(html.find("<section id=\"verdict\" class=\"verdict error\""), std::string::npos);

  std::vector<ProcessTrace> tree;
  tree.push_back(ExitedWith(10, 1, 0));
  tree.push_back(ExitedWith(11, 10, 2));  // its child, e.g. a probe that failed
  auto ok = BuildReport(tree, {});
  ASSERT_TRUE(ok->findings().empty());
  EXPECT_EQ(FirstScreenLines(RenderText(*ok, false))[0], "Healthy: no errors or warnings in 2 processes");
}

constexpr char kGraph0[] = "libcudnn_graph.so.9.19.0: cannot open shared object file: No such file or directory";
constexpr char kGraph[] = "libcudnn_graph.so.9.19: cannot open shared object file: No such file or directory";
constexpr char kPlugin[] = "libplugin.so: cannot open shared object file: No such file or directory";

// cuDNN 9.19 as PyTorch loads it: libcudnn.so.9 probes libcudnn_graph.so.9.19.0 and
// .so.9.19 (both fail) before libcudnn_graph.so.9, which loads; 13 times, 26 failed
// loads. The program also probes an optional plugin that is nowhere and goes on.
ProcessTrace CudnnProbes() {
  abitest::TraceBuilder b(10);
  b.Load(LibApi::kStartup, "/bin/prog", 0x1000, "");
  b.Load(LibApi::kDlopen, "/w/nvidia/cudnn/lib/libcudnn.so.9", 0x2000, "/bin/prog", 1, RTLD_NOW, 1);
  for (int i = 0; i < 13; ++i) {
    b.Load(LibApi::kDlopen, "libcudnn_graph.so.9.19.0", 0, "/w/nvidia/cudnn/lib/libcudnn.so.9", 0, RTLD_NOW, 0,
           false, kGraph0);
    b.Load(LibApi::kDlopen, "libcudnn_graph.so.9.19", 0, "/w/nvidia/cudnn/lib/libcudnn.so.9", 0, RTLD_NOW, 0,
           false, kGraph);
    b.Load(LibApi::kDlopen, "/w/nvidia/cudnn/lib/libcudnn_graph.so.9", 0x3000, "/w/nvidia/cudnn/lib/libcudnn.so.9",
           i == 0 ? 1 : 0, RTLD_NOW, 2);
  }
  b.Load(LibApi::kDlopen, "libplugin.so", 0, "/bin/prog", 0, RTLD_NOW, 0, false, kPlugin);
  b.Exit(0);
  return b.Finish();
}

TEST(FirstScreen, HandledProbesAreOneLineWithTheirCount) {
  auto traces = RunOf(CudnnProbes());
  auto report = BuildReport(traces, {});
  const std::string text = RenderText(*report, false);
  // Three abi.load-failed causes, all information: the run is healthy.
  EXPECT_EQ(FirstScreenLines(text)[0], "Healthy: no errors or warnings in 1 process (3 info)");
  const std::vector<std::string> libs = Section(text, "Libraries");
  std::vector<std::string> failed;
  for (const std::string& l : libs) {
    if (l.find("FAILED") != std::string::npos) failed.push_back(l);
  }
  ASSERT_EQ(failed.size(), 2u) << text;
  EXPECT_EQ(failed[0],
            "    libcudnn_graph.so.9.19*  26 handled probes (FAILED, then loaded; 2 names) by libcudnn.so.9");
  // Not handled (nothing loaded it later): listed as before.
  EXPECT_EQ(failed[1], std::string("    FAILED libplugin.so  by prog: ") + kPlugin);
  // The per-process count still counts every failed load.
  EXPECT_NE(std::find_if(libs.begin(), libs.end(),
                         [](const std::string& l) { return l.starts_with("pid 10: ") && l.ends_with(", 27 failed loads"); }),
            libs.end())
      << text;
  // The findings: the three infos of one id are one line.
  const std::vector<std::string> findings = Section(text, "Findings");
  ASSERT_EQ(findings.size(), 1u) << text;
  EXPECT_TRUE(findings[0].starts_with("info abi.load-failed \u00d73: loading ")) << findings[0];

  // HTML: one folded group of three, each finding inside it; the JSON keeps all three.
  const std::string html = RenderHtml(*report);
  const size_t fold = html.find("<details class=\"fold info\" data-id=\"abi.load-failed\" data-count=\"3\">");
  ASSERT_NE(fold, std::string::npos);
  EXPECT_EQ(Count(html, "<article class=\"finding info\""), 3u);
  EXPECT_GT(html.find("<article class=\"finding info\""), fold);
  EXPECT_EQ(Count(report->document()["findings"].Dump(-1), "\"abi.load-failed\""), 3u);
}

TEST(FirstScreen, AnUnhealthyRunNamesTheWorstFirstAndLinksToIt) {
  iotest::TraceBuilder killed(10, 1, 1000, /*killed=*/true);
  iotest::Mounts(killed);
  killed.Advance(50 * kMs);
  std::vector<ProcessTrace> traces;
  traces.push_back(killed.Finish());
  traces.push_back(QuietProcess(11));
  auto report = BuildReport(traces, {});
  const std::string text = RenderText(*report, false);
  const std::vector<std::string> screen = FirstScreenLines(text);
  ASSERT_GE(screen.size(), 3u) << text;
  EXPECT_EQ(screen[0], "1 error in 2 processes: proc.killed");
  EXPECT_TRUE(screen[1].starts_with("  error   proc.killed [pid 10]: ")) << screen[1];
  EXPECT_EQ(screen[2], "");
  EXPECT_NE(std::find(screen.begin(), screen.end(), "  processes    2: 1 exited 0, 1 killed"), screen.end()) << text;

  const std::string html = RenderHtml(*report);
  EXPECT_NE(html.find("<section id=\"verdict\" class=\"verdict error\" data-errors=\"1\""), std::string::npos);
  const size_t worst = html.find("<ul class=\"worst\"><li><span class=\"sev error\">error</span> <a href=\"#finding-");
  ASSERT_NE(worst, std::string::npos);
  const size_t hash = html.find('#', worst) + 1;
  const std::string anchor = html.substr(hash, html.find('"', hash) - hash);
  EXPECT_NE(html.find("<article class=\"finding error\" data-id=\"proc.killed\" id=\"" + anchor + "\">"),
            std::string::npos)
      << anchor;
  EXPECT_NE(html.find("<tr class=\"alarm\"><th>processes</th><td>2: 1 exited 0, 1 killed</td></tr>"), std::string::npos);
}

TEST(FirstScreen, VerdictLineNamesAtMostThreeIdsThenCounts) {
  analyzer::FirstScreen s;
  s.processes = 4;
  s.errors = 2;
  s.warnings = 3;
  analyzer::Finding a, b, c;
  a.id = "gpu.oom", b.id = "gpu.oom", c.id = "io.small-files";
  s.worst = {&a, &b, &c};
  EXPECT_EQ(s.VerdictLine(), "2 errors, 3 warnings in 4 processes: gpu.oom, io.small-files +2 more");
  s.errors = s.warnings = 0;
  s.worst.clear();
  s.infos = 1;
  EXPECT_EQ(s.VerdictLine(), "Healthy: no errors or warnings in 4 processes (1 info)");
}

// A step loop (pid 100) of `iterations` optimizer steps, each a batch wait of wait_ms and
// compute_ms; iteration `slow` (if any) computes slow_ms instead. killed: SIGKILLed 5 ms
// into the next iteration's compute, with no exit record.
ProcessTrace StepLoop(int iterations, uint64_t wait_ms, uint64_t compute_ms, int slow = -1, uint64_t slow_ms = 0,
                      bool killed = false) {
  steptest::TraceBuilder b(100, 1, 1000, killed);
  iotest::Mounts(b);
  b.AdvanceTo(10 * kMs);
  for (int i = 0; i < iterations; ++i) {
    steptest::Iteration(b, i, wait_ms * kMs, (i == slow ? slow_ms : compute_ms) * kMs);
  }
  if (killed) steptest::BatchWait(b, iterations, wait_ms * kMs);
  b.Advance(5 * kMs);
  if (killed) steptest::CpuSample(b, 0);  // its last record, 5 ms into the compute
  return b.Finish();
}

TEST(FirstScreen, AStepLoopShowsItsStepsMedianAndOneBarPerStep) {
  auto traces = RunOf(StepLoop(11, 40, 10));
  auto report = BuildReport(traces, {});
  const analyzer::Json& steps = report->document()["processes"].array()[0]["steps"];
  ASSERT_TRUE(steps.is_object()) << report->document().Dump(2);
  ASSERT_EQ(steps["count"].as_int(), 11);
  const int64_t timed = steps["timed"].as_int();
  const std::string text = RenderText(*report, false);
  const std::vector<std::string> screen = FirstScreenLines(text);
  EXPECT_EQ(screen[0], "1 warning in 1 process: perf.input-bound");
  EXPECT_NE(std::find(screen.begin(), screen.end(),
                      "  steps        11 optimizer steps in pid 100, median 50.0 ms (p90 50.0 ms)"),
            screen.end())
      << text;
  EXPECT_NE(std::find(screen.begin(), screen.end(),
                      "  input wait   80% of step time after warm-up (GPU sync 0%, file I/O 0%, other 20%)"),
            screen.end())
      << text;

  const std::string html = RenderHtml(*report);
  EXPECT_LT(html.find("id=\"verdict\""), html.find("<section id=\"steps\">"));
  EXPECT_LT(html.find("<section id=\"steps\">"), html.find("id=\"findings\""));
  EXPECT_NE(html.find("<figure class=\"stepplot\" data-bars=\"" + std::to_string(timed) + "\">"), std::string::npos);
  // One bar per timed step: the warm-up, then the others, each with its four parts' title.
  EXPECT_EQ(Count(html, "<g class=\"step warmup\" data-steps=\"1\">"), 1u);
  EXPECT_EQ(Count(html, "<g class=\"step\" data-steps=\"1\">"), static_cast<size_t>(timed - 1));
  EXPECT_NE(html.find("<title>step 2: 50.0 ms (input wait 40.0 ms, other 10.0 ms)</title>"), std::string::npos)
      << html.substr(html.find("<section id=\"steps\">"), 2500);
  // The median as a line, a legend for every part, no script.
  EXPECT_NE(html.find("<line class=\"limit median\""), std::string::npos);
  EXPECT_NE(html.find(">median 50.0 ms</text>"), std::string::npos);
  for (const char* part : {"input wait", "GPU sync", "file I/O", "other (host compute, Python)", "median step 50.0 ms"}) {
    EXPECT_NE(html.find(std::string("</span>") + part + "</li>"), std::string::npos) << part;
  }
  EXPECT_EQ(html.find("<script"), std::string::npos);
}

TEST(FirstScreen, AStepCutShortByAKillIsDrawnApartAndSaidSo) {
  // 5 steps of 40 ms, 1 ms of each waiting for input (not input-bound).
  auto traces = RunOf(StepLoop(5, 1, 39, -1, 0, /*killed=*/true));
  auto report = BuildReport(traces, {});
  const analyzer::Json& steps = report->document()["processes"].array()[0]["steps"];
  ASSERT_TRUE(steps["interrupted"].boolean()) << report->document().Dump(2);
  const std::string text = RenderText(*report, false);
  const std::vector<std::string> screen = FirstScreenLines(text);
  EXPECT_EQ(screen[0], "1 error in 1 process: proc.killed");
  EXPECT_NE(std::find(screen.begin(), screen.end(),
                      "  steps        5 optimizer steps in pid 100, median 40.0 ms (p90 40.0 ms); the last one was "
                      "interrupted"),
            screen.end())
      << text;
  const std::string html = RenderHtml(*report);
  // The interrupted step is no bar of the plot: an outline of its own, with its length.
  EXPECT_EQ(Count(html, "<g class=\"step-interrupted\"><title>interrupted: the process ended "), 1u);
  EXPECT_NE(html.find("<figure class=\"stepplot\" data-bars=\"" + std::to_string(steps["timed"].as_int()) + "\">"),
            std::string::npos);
}

TEST(FirstScreen, ThousandsOfStepsAreDownSampledKeepingTheSlowestStep) {
  // 2,500 steps of 2 ms; iteration 1700 computes 50 ms.
  auto traces = RunOf(StepLoop(2500, 1, 1, 1700, 50));
  auto report = BuildReport(traces, {});
  const int64_t timed = report->document()["processes"].array()[0]["steps"]["timed"].as_int();
  ASSERT_GT(timed, 2000);
  const std::string html = RenderHtml(*report);
  // The warm-up alone, then runs of 3 consecutive steps (ceil((timed - 1) / 999)).
  const size_t per = static_cast<size_t>((timed - 1 + 998) / 999);
  ASSERT_EQ(per, 3u);
  const size_t runs = static_cast<size_t>((timed - 1 + per - 1) / per);
  EXPECT_NE(html.find("<figure class=\"stepplot\" data-bars=\"" + std::to_string(1 + runs) + "\">"),
            std::string::npos);
  EXPECT_LE(1 + runs, 1000u);
  EXPECT_EQ(Count(html, "<g class=\"step\" data-steps=\"3\">") + Count(html, "<g class=\"step\" data-steps=\"2\">") +
                Count(html, "<g class=\"step\" data-steps=\"1\">"),
            runs);
  // The slow step is the bar of its run: 51 ms (1 ms wait, 50 ms compute).
  EXPECT_EQ(Count(html, ": 51.0 ms (input wait 1.0 ms, other 50.0 ms)</title>"), 1u);
}

}  // namespace
}  // namespace colabtrace::testing
