// The sections of the HTML report, one file each (verdict, steps, findings, GPU memory,
// host memory, I/O, libraries, processes), and what they share: the page context and the caps that
// keep the page small for 2,000 processes and a 1 GB trace. Every section renders from
// the report's typed data (findings, the run model's area models, the report fields);
// the full data stays in `report --format json`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/json.h"
#include "render/render.h"
#include "report/report.h"

namespace colabtrace::analyzer::html {

// Caps: past these, a section shows the first rows and says how many more the JSON has.
inline constexpr size_t kMaxFindings = 200;
inline constexpr size_t kMaxTableRows = 200;
inline constexpr size_t kMaxRoles = 100;
inline constexpr size_t kMaxEvidenceItems = 40;   // per array in a finding's evidence
inline constexpr size_t kMaxStringBytes = 4000;   // per string in a finding's evidence
inline constexpr size_t kMaxBars = 15;
inline constexpr size_t kMaxStackedLayers = 10;   // processes drawn on their own; the rest summed
inline constexpr size_t kMaxLines = 6;            // RSS lines per host chart
inline constexpr size_t kMaxMarkers = 400;        // failure markers per chart; then one per column
inline constexpr size_t kMaxAddressMaps = 8;      // failure maps per device (gpu::kMaxLaidOutFailures)
inline constexpr size_t kMaxCharts = 8;           // devices or hosts
inline constexpr size_t kMaxSectionTextBytes = 64 * 1024;
inline constexpr size_t kMaxStepBars = 1000;      // per step plot (the longest step of each run kept)

struct PageContext {
  const ReportBuilder& report;
  const Json& root;           // the finished JSON document
  uint64_t run_start = 0;     // earliest trace start (CLOCK_MONOTONIC ns)
  uint64_t run_end = 0;       // latest trace end
  // processes[] entry of each trace (same order as report.traces()); nullptr for the
  // `colabtrace run` wrapper, which the report lists under "run".
  std::vector<const Json*> process_of_trace;
};

// The verdict and the run's vital signs (render/first_screen.h): the page's first screen.
std::string VerdictSection(const PageContext& ctx);
// The step plot of each process that steps; "" when none does.
std::string StepsSection(const PageContext& ctx);
std::string FindingsSection(const PageContext& ctx);
// The id attribute of report.findings()[index]'s article ("finding-3"), for links.
std::string FindingAnchor(size_t index);
std::string GpuMemorySection(const PageContext& ctx);
std::string HostMemorySection(const PageContext& ctx);
std::string IoSection(const PageContext& ctx);
std::string LibrariesSection(const PageContext& ctx);
std::string ProcessesSection(const PageContext& ctx);
// Each multi-rank job's ranks (the report's "dist"); "" when there is none.
std::string RanksSection(const PageContext& ctx);

// "<p class="more">N more WHAT: see colabtrace report --format json</p>", or "" for 0.
std::string MoreNote(size_t omitted, std::string_view what);
// "pid 123 (python train.py)" for a processes[] entry (raw; escape with Text).
std::string ProcessLabel(const Json& process);
// A processes[] field as an unsigned number (0 when absent or not a number).
uint64_t U64(const Json* v);

}  // namespace colabtrace::analyzer::html
