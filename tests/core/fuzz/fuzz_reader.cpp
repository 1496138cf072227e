// libFuzzer target for the analyzer's untrusted inputs. An input that starts with the
// trace magic goes through analyzer::ParseTrace, a full report (every analysis) rendered
// as JSON, text and HTML, and what `baseline`, `check` and `diff` compute from it (the
// metrics, a budget written and read back, a check and a diff of the run against itself).
// Any other input is a budget file for `check --baseline`: Json::Parse and ParseBudget,
// then a check against an empty run. Traces and budgets are untrusted input
// (shared/PRODUCT.md): none of this may crash, hang or trip a sanitizer.
//
// Built two ways (tests/core/fuzz/CMakeLists.txt): with clang++ and
// -fsanitize=fuzzer,address,undefined as `fuzz_reader` when clang is available, and
// always with the normal compiler as `core_fuzz_replay`, which runs every file of the
// corpus through this same function under ctest.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "colabtrace/format/wire.h"
#include "render/render.h"
#include "report/report.h"
#include "ci/budget.h"
#include "ci/run_diff.h"
#include "ci/run_metrics.h"
#include "trace/process_trace.h"

namespace {

using namespace colabtrace::analyzer;

void FuzzBudget(std::string_view text) {
  (void)Json::Parse(text);
  std::string error;
  std::vector<std::string> warnings;
  auto budget = ParseBudget(text, &error, &warnings);
  if (!budget) {
    if (error.empty()) std::abort();  // a rejected budget names its problem
    return;
  }
  const std::vector<ProcessTrace> none;
  auto report = BuildReport(none, {});
  const RunMetrics empty = MeasureRun(*report);
  const CheckResult check = CheckRun(*budget, empty, Severity::kError);
  (void)RenderCheckText(check, "fuzz.json", true);
  (void)RenderCheckJUnit(check, "fuzz.json");
  if (!Json::Parse(FormatBudget(*budget))) std::abort();  // what we write, we read
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  constexpr size_t kMagic = sizeof(colabtrace::format::kFileMagic);
  if (size < kMagic || std::memcmp(data, colabtrace::format::kFileMagic, kMagic) != 0) {
    FuzzBudget(std::string_view(reinterpret_cast<const char*>(data), size));
  }
  std::string error;
  auto trace = ParseTrace(std::vector<uint8_t>(data, data + size), "fuzz.ctrace", &error);
  if (!trace) {
    // Unreadable input must come with one clear line.
    if (error.empty() || error.find('\n') != std::string::npos) std::abort();
    return 0;
  }
  std::vector<ProcessTrace> traces;
  traces.push_back(std::move(*trace));
  auto report = BuildReport(traces, {});
  const std::string json = RenderJson(*report);
  if (!Json::Parse(json)) std::abort();  // the report is always valid JSON
  (void)RenderText(*report, /*color=*/true);
  (void)RenderHtml(*report);
  // baseline / check / diff over the same run.
  const RunMetrics run = MeasureRun(*report);
  const Budget budget = MakeBudget(run, BudgetPolicy{}, std::nullopt);
  std::string budget_error;
  std::vector<std::string> warnings;
  auto reread = ParseBudget(FormatBudget(budget), &budget_error, &warnings);
  if (!reread) std::abort();  // a budget we wrote must read back
  const CheckResult check = CheckRun(*reread, run, Severity::kError);
  if (check.regressions != 0) std::abort();  // a run never regresses against itself
  (void)RenderCheckText(check, "fuzz.json", false);
  const RunDiff diff = DiffRuns(run, run, "a", "b");
  if (!Json::Parse(RenderDiffJson(diff).Dump())) std::abort();
  (void)RenderDiffText(diff, false);
  return 0;
}
