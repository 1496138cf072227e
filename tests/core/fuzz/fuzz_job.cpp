// libFuzzer target for several traces read as the processes (and hosts) of one job: the
// input is split where a trace's magic starts at a multiple of 4096 bytes (the smallest
// chunk size), each part read with analyzer::ParseTrace, and every readable one goes into
// one report (every analysis, the cross-process and cross-host ones included) rendered as
// JSON and text. Traces from other machines are untrusted input: none of this may crash,
// hang or trip a sanitizer, and the report is always valid JSON.
//
// Built as fuzz_job (clang++, -fsanitize=fuzzer) where fuzz_reader is, and always as
// core_fuzz_job_replay over corpus-job/ (tests/core/fuzz/CMakeLists.txt).
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "colabtrace/format/wire.h"
#include "render/render.h"
#include "report/report.h"
#include "trace/process_trace.h"
#include "trace_mutator.h"

namespace {

using namespace colabtrace::analyzer;
constexpr size_t kAlign = 4096;
constexpr size_t kMaxTraces = 8;

// Where each trace of the input starts.
std::vector<size_t> TraceStarts(const uint8_t* data, size_t size) {
  std::vector<size_t> starts;
  const size_t m = sizeof(colabtrace::format::kFileMagic);
  for (size_t off = 0; off + m <= size && starts.size() < kMaxTraces; off += kAlign) {
    if (std::memcmp(data + off, colabtrace::format::kFileMagic, m) == 0) starts.push_back(off);
  }
  return starts;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<size_t> starts = TraceStarts(data, size);
  std::vector<ProcessTrace> traces;
  for (size_t k = 0; k < starts.size(); ++k) {
    const size_t end = k + 1 < starts.size() ? starts[k + 1] : size;
    std::string error;
    auto t = ParseTrace(std::vector<uint8_t>(data + starts[k], data + end), "job-" + std::to_string(k), &error);
    if (!t) {
      if (error.empty() || error.find('\n') != std::string::npos) std::abort();
      continue;
    }
    traces.push_back(std::move(*t));
  }
  auto report = BuildReport(traces, {});
  if (!Json::Parse(RenderJson(*report))) std::abort();  // the report is always valid JSON
  (void)RenderText(*report, /*color=*/false);
  return 0;
}

// One trace of the job mutated structurally (trace_mutator.h), or libFuzzer's own
// mutation of the whole input.
extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned seed) {
  const std::vector<size_t> starts = TraceStarts(data, size);
  if (!starts.empty() && seed % 4 != 0) {
    const size_t k = seed % starts.size();
    const size_t begin = starts[k], end = k + 1 < starts.size() ? starts[k + 1] : size;
    std::vector<uint8_t> one(data + begin, data + end);
    const size_t n = colabtrace::fuzz::MutateTrace(one.data(), one.size(), one.size(), seed);
    // In place only when the trace keeps its size (or is the last): the others stay aligned.
    if (n == one.size() || (n != 0 && k + 1 == starts.size() && begin + n <= max_size)) {
      std::memcpy(data + begin, one.data(), n);
      return k + 1 == starts.size() ? begin + n : size;
    }
  }
  return LLVMFuzzerMutate(data, size, max_size);
}
