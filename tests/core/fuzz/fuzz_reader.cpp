// libFuzzer target for the trace reader: any bytes through analyzer::ParseTrace, then
// a full report (every analysis) rendered as JSON, text and HTML. Traces are untrusted
// input (shared/PRODUCT.md): none of this may crash, hang or trip a sanitizer.
//
// Built two ways (tests/core/fuzz/CMakeLists.txt): with clang++ and
// -fsanitize=fuzzer,address,undefined as `fuzz_reader` when clang is available, and
// always with the normal compiler as `core_fuzz_replay`, which runs every file of the
// corpus through this same function under ctest.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "report/report.h"
#include "trace/process_trace.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace colabtrace::analyzer;
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
  return 0;
}
