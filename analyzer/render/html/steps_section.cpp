// Steps, per process that steps (perf::StepModels): each step's time as a bar over the
// span it ran, stacked by where it went (input wait at the bottom, then GPU sync, file
// I/O and the rest), on the run's time axis as the memory plots below it, with the
// median step as a line. The warm-up (first) step is drawn but not scaled for: a bar
// above the scale is cut at the top and labelled. Past kMaxStepBars the steps after the
// warm-up are drawn in equal runs of consecutive steps, each run as its longest step
// over the run's span, so a slow step is never averaged away.
#include <algorithm>

#include "perf/step_model.h"
#include "render/html/escape.h"
#include "render/html/sections.h"
#include "render/html/svg.h"

namespace colabtrace::analyzer::html {
namespace {

// The parts of a step, bottom to top: CSS class, name (in a bar's title), legend label.
struct Part {
  const char* cls;
  const char* name;
  const char* label;
  uint64_t perf::StepTime::*ns;
};
constexpr Part kParts[] = {
    {"step-wait", "input wait", "input wait", &perf::StepTime::input_wait_ns},
    {"step-sync", "GPU sync", "GPU sync", &perf::StepTime::gpu_sync_ns},
    {"step-io", "file I/O", "file I/O", &perf::StepTime::io_ns},
    {"step-other", "other", "other (host compute, Python)", &perf::StepTime::other_ns},
};

std::string StepTitle(const std::string& what, const perf::StepTime& s) {
  std::string parts;
  for (const Part& p : kParts) {
    if (s.*p.ns == 0) continue;
    parts += (parts.empty() ? "" : ", ") + std::string(p.name) + " " + FormatDurationNs(s.*p.ns);
  }
  return what + ": " + FormatDurationNs(s.duration_ns()) + (parts.empty() ? "" : " (" + parts + ")");
}

// One bar: `s`'s parts stacked over [from, to]; the steps it stands for in `what`.
void StepBar(TimeChart& chart, const perf::StepTime& s, uint64_t from, uint64_t to, const std::string& cls,
             size_t steps, const std::string& what) {
  chart.svg().BeginGroup(cls, "data-steps=\"" + std::to_string(steps) + "\"", StepTitle(what, s));
  const double x = chart.X(from), w = std::max(chart.X(to) - x, 0.6);
  double base = 0;
  for (const Part& p : kParts) {
    const uint64_t ns = s.*p.ns;
    if (ns == 0) continue;
    const double top = base + static_cast<double>(ns);
    chart.svg().Rect(x, chart.Y(top), w, chart.Y(base) - chart.Y(top), p.cls);
    base = top;
  }
  chart.svg().EndGroup();
}

std::string Pct(double f) { return std::to_string(static_cast<int>(f * 100 + 0.5)) + "%"; }

std::string SourceText(perf::StepSourceKind s) {
  switch (s) {
    case perf::StepSourceKind::kMarker: return "the program's own colabtrace.step markers";
    case perf::StepSourceKind::kOptimizer: return "its optimizer steps";
    case perf::StepSourceKind::kDataLoader: return "its DataLoader batches";
  }
  return "";
}

std::string ProcessStepsChart(const PageContext& ctx, const perf::ProcessSteps& p) {
  const std::vector<perf::StepTime>& steps = p.steps;
  const Json* row = p.trace < ctx.process_of_trace.size() ? ctx.process_of_trace[p.trace] : nullptr;
  std::string s = "<div class=\"steps\" data-pid=\"" + std::to_string(p.pid) + "\" data-count=\"" +
                  std::to_string(p.count) + "\">\n<h3>" +
                  Text(row != nullptr ? ProcessLabel(*row) : "pid " + std::to_string(p.pid)) + "</h3>\n";
  if (steps.empty()) {
    return s + "<p>" + std::to_string(p.count) + " steps, too few to time.</p></div>\n";
  }
  // Scale for the steps after the warm-up (all of them when there is only one).
  uint64_t top = 0;
  for (size_t i = steps.size() > 1 ? 1 : 0; i < steps.size(); ++i) top = std::max(top, steps[i].duration_ns());
  const double y_max = std::max(1000.0, static_cast<double>(top) * 1.15);
  TimeChart chart(ctx.run_start, ctx.run_end, y_max,
                  "step time over the run, stacked by where it went: input wait, GPU sync, file I/O, other",
                  900, 260, YUnit::kNanoseconds);
  size_t bars = 0;
  // The warm-up on its own.
  const perf::StepTime& warm = steps.front();
  StepBar(chart, warm, warm.start_ns, warm.end_ns, "step warmup", 1,
          steps.size() > 1 ? "step 1 (warm-up)" : "step 1");
  ++bars;
  if (static_cast<double>(warm.duration_ns()) > y_max) {
    chart.svg().Text(chart.X(warm.end_ns) + 3, chart.top() + 10, "warm-up " + FormatDurationNs(warm.duration_ns()),
                     "event-label");
  }
  // The rest, in at most kMaxStepBars - 1 runs of consecutive steps.
  const size_t rest = steps.size() - 1;
  const size_t per = rest == 0 ? 1 : (rest + kMaxStepBars - 2) / (kMaxStepBars - 1);
  for (size_t b = 1; b < steps.size(); b += per) {
    const size_t e = std::min(steps.size(), b + per);
    size_t longest = b;
    for (size_t i = b + 1; i < e; ++i) {
      if (steps[i].duration_ns() > steps[longest].duration_ns()) longest = i;
    }
    const std::string what = e - b == 1 ? "step " + std::to_string(b + 1)
                                        : "steps " + std::to_string(b + 1) + "-" + std::to_string(e) +
                                              ", the longest (step " + std::to_string(longest + 1) + ")";
    StepBar(chart, steps[longest], steps[b].start_ns, steps[e - 1].end_ns, "step", e - b, what);
    ++bars;
  }
  std::vector<LegendEntry> legend;
  for (const Part& part : kParts) legend.push_back({part.cls, part.label});
  if (p.median_ns > 0) {
    chart.Limit(static_cast<double>(p.median_ns), "limit median", "median " + FormatDurationNs(p.median_ns));
    legend.push_back({"median", "median step " + FormatDurationNs(p.median_ns)});
  }
  if (p.interrupted) {
    const perf::StepTime& in = *p.interrupted;
    const double x = chart.X(in.start_ns), h = std::min(static_cast<double>(in.duration_ns()), y_max);
    chart.svg().BeginGroup("step-interrupted", "", "interrupted: the process ended " +
                                                     FormatDurationNs(in.duration_ns()) + " into this step");
    chart.svg().Rect(x, chart.Y(h), std::max(chart.X(in.end_ns) - x, 0.6), chart.Y(0) - chart.Y(h),
                     "step-interrupted");
    chart.svg().EndGroup();
    legend.push_back({"step-interrupted", "interrupted step (" + FormatDurationNs(in.duration_ns()) + ")"});
  }
  s += "<figure class=\"stepplot\" data-bars=\"" + std::to_string(bars) + "\">" + std::move(chart).Finish() +
       "</figure>\n" + Legend(legend);
  const perf::StepShares& a = p.after_warmup;
  std::string note = std::to_string(p.count) + " steps, found from " + SourceText(p.source) + "; after the warm-up " +
                     "step, " + Pct(a.input_wait_fraction()) + " of step time waited for input, " +
                     Pct(a.gpu_sync_fraction()) + " was GPU sync, " + Pct(a.io_fraction()) + " file I/O, " +
                     Pct(a.other_fraction()) + " the rest.";
  if (per > 1) {
    note += " Drawn as " + std::to_string(bars) + " bars: each bar after the warm-up stands for " +
            std::to_string(per) + " consecutive steps and shows the longest of them.";
  }
  return s + "<p class=\"note\">" + Text(note) + "</p></div>\n";
}

}  // namespace

std::string StepsSection(const PageContext& ctx) {
  const perf::StepModels& models = ctx.report.run().Get<perf::StepModels>();
  if (models.processes.empty()) return "";
  std::string s = "<section id=\"steps\"><h2>Steps</h2>\n";
  size_t drawn = 0;
  for (const perf::ProcessSteps& p : models.processes) {
    if (drawn++ == kMaxCharts) break;
    s += ProcessStepsChart(ctx, p);
  }
  s += MoreNote(models.processes.size() > kMaxCharts ? models.processes.size() - kMaxCharts : 0,
                "stepping processes");
  return s + "</section>\n";
}

}  // namespace colabtrace::analyzer::html
