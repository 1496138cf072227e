// colabtrace dump: every record of a trace, one per line, in time order.
#include <algorithm>
#include <cstdio>
#include <iostream>

#include "cli/command.h"
#include "core/json.h"
#include "trace/process_trace.h"

namespace colabtrace::cli {
namespace {

using analyzer::ProcessTrace;

std::string Quote(std::string_view s) {
  std::string out;
  analyzer::AppendJsonString(out, s);
  return out;
}

// Formats one record: "name field=value ...".
template <class R> std::string FormatRecord(const ProcessTrace& t, const R& r) {
  std::string line(R::kName);
  r.Visit([&](const char* field, auto tag, const auto& value) {
    line += ' ';
    line += field;
    line += '=';
    constexpr auto kKind = decltype(tag)::kind;
    char buf[40];
    if constexpr (kKind == format::FieldKind::kBytes) {
      if (R::kType == format::RecordType::String) {
        line += Quote(std::string_view(reinterpret_cast<const char*>(value.data), value.size));
      } else {
        for (uint32_t i = 0; i < value.size && i < 64; ++i) {
          std::snprintf(buf, sizeof(buf), "%02x", value.data[i]);
          line += buf;
        }
        if (value.size > 64) line += "...";
        if (value.size == 0) line += "-";
      }
    } else if constexpr (kKind == format::FieldKind::kStr) {
      line += value == 0 ? std::string("-") : Quote(t.Str(value));
    } else if constexpr (kKind == format::FieldKind::kStack) {
      line += value == 0 ? std::string("-")
                         : "#" + std::to_string(value) + "[" + std::to_string(t.Stack(value).size()) + "]";
    } else if constexpr (kKind == format::FieldKind::kHex) {
      std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(value));
      line += buf;
    } else if constexpr (kKind == format::FieldKind::kDur) {
      line += std::to_string(value) + "ns";
    } else {
      line += std::to_string(value);
    }
  });
  return line;
}

class DumpCommand final : public Command {
 public:
  std::string_view name() const override { return "dump"; }
  std::string_view summary() const override { return "print every record of a trace, one per line"; }
  std::string usage() const override {
    return "Usage: colabtrace dump TRACE\n\n"
           "Prints the trace header, then every record in time order:\n"
           "  +SECONDS tid=TID NAME field=value ...\n"
           "Strings are resolved and quoted. Damage is reported on stderr; what could be read\n"
           "is still printed. Exit codes: 0 fine, 2 unreadable input or usage error.\n";
  }

  int Run(const std::vector<std::string>& args) override {
    if (args.size() != 1 || args[0].starts_with("-")) return UsageError(name(), "expects one trace file");
    std::string err;
    auto trace = analyzer::ReadTraceFile(args[0], &err);
    if (!trace) {
      std::cerr << "colabtrace dump: " << err << "\n";
      return kExitUsage;
    }
    const ProcessTrace& t = *trace;
    std::string flags;
    if (t.truncated) flags += " truncated";
    if (t.ended) flags += " ended";
    if (t.exec_pending) flags += " exec-pending";
    std::printf("# %s: colabtrace trace v%u.%u pid=%u chunks=%llu records=%llu flags=%s\n",
                t.file.c_str(), t.header.version_major, t.header.version_minor, t.pid(),
                static_cast<unsigned long long>(t.stats.chunks),
                static_cast<unsigned long long>(t.stats.records), flags.empty() ? " -" : flags.c_str());
    struct Line {
      uint64_t ts;
      uint32_t tid;
      size_t order;
      std::string text;
    };
    std::vector<Line> lines;
#define CT_COLLECT(code, Name, dumpname)                                         \
  for (const auto& ev : t.records.Name) {                                       \
    lines.push_back({ev.ts, ev.tid, lines.size(), FormatRecord(t, ev)});        \
  }
    COLABTRACE_RECORD_TYPES(CT_COLLECT)
#undef CT_COLLECT
    std::stable_sort(lines.begin(), lines.end(), [](const Line& a, const Line& b) {
      return a.ts != b.ts ? a.ts < b.ts : a.order < b.order;
    });
    const uint64_t start = t.start_ns();
    for (const Line& l : lines) {
      const int64_t rel = static_cast<int64_t>(l.ts) - static_cast<int64_t>(start);
      std::printf("%+.9f tid=%u %s\n", static_cast<double>(rel) / 1e9, l.tid, l.text.c_str());
    }
    for (const auto& w : t.warnings) std::cerr << "colabtrace dump: warning: " << w << "\n";
    return std::fflush(stdout) == 0 ? kExitOk : kExitUsage;
  }
};

}  // namespace

std::unique_ptr<Command> MakeDumpCommand() { return std::make_unique<DumpCommand>(); }

}  // namespace colabtrace::cli
