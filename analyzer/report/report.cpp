#include "report/report.h"

#include <algorithm>
#include <cstdio>
#include <csignal>
#include <cstring>

namespace colabtrace::analyzer {

std::string_view SeverityName(Severity s) {
  switch (s) {
    case Severity::kError: return "error";
    case Severity::kWarning: return "warning";
    case Severity::kInfo: return "info";
  }
  return "info";
}

std::optional<Severity> ParseSeverity(std::string_view s) {
  if (s == "error") return Severity::kError;
  if (s == "warning") return Severity::kWarning;
  if (s == "info") return Severity::kInfo;
  return std::nullopt;
}

ReportBuilder::ReportBuilder(const std::vector<ProcessTrace>& traces, ReportOptions options)
    : traces_(traces), options_(std::move(options)) {
  root_["schema"] = "colabtrace.report.v1";
  root_["processes"] = Json::MakeArray();
  for (size_t i = 0; i < traces_.size(); ++i) root_["processes"].Append(Json::MakeObject());
}

std::shared_ptr<const LifecycleModel> ReportBuilder::shared_lifecycle() {
  if (lifecycle_ == nullptr) lifecycle_ = std::make_shared<const LifecycleModel>(traces_);
  return lifecycle_;
}

const LifecycleModel& ReportBuilder::lifecycle() { return *shared_lifecycle(); }

const ProcessFacts& ReportBuilder::facts(const ProcessTrace& t) {
  if (facts_.empty() && !traces_.empty()) {
    const LifecycleModel& model = lifecycle();
    facts_.reserve(traces_.size());
    for (const ProcessTrace& each : traces_) facts_.push_back(ProcessFacts::Of(each, &model));
  }
  const auto i = static_cast<size_t>(&t - traces_.data());
  return facts_.at(i);  // throws for a trace that is not one of traces()
}

Json& ReportBuilder::process(size_t index) { return root_["processes"].array().at(index); }

std::vector<Json*> ReportBuilder::UntracedProcesses() {
  std::vector<Json*> out;
  auto& rows = root_["processes"].array();
  for (size_t i = traces_.size(); i < rows.size(); ++i) out.push_back(&rows[i]);
  return out;
}

const Json* ReportBuilder::UntracedProgram(const Json& row) {
  const Json* end = row.Find("end");
  return end != nullptr && end->Find("exec_failed") != nullptr ? nullptr : row.Find("exe");
}

void ReportBuilder::AddWarning(std::string w) {
  if (finished_) root_["warnings"].Append(w);
  warnings_.push_back(std::move(w));
}

const Json& ReportBuilder::Finish() {
  finished_ = true;
  std::stable_sort(findings_.begin(), findings_.end(), [](const Finding& a, const Finding& b) {
    if (a.severity != b.severity) return a.severity > b.severity;
    if (a.id != b.id) return a.id < b.id;
    return a.pid < b.pid;
  });
  Json& out = root_["findings"];
  out = Json::MakeArray();
  for (const Finding& f : findings_) {
    Json j = Json::MakeObject();
    j["id"] = f.id;
    j["severity"] = std::string(SeverityName(f.severity));
    j["pid"] = f.pid;
    j["summary"] = f.summary;
    j["evidence"] = f.evidence;
    j["advice"] = f.advice;
    out.Append(std::move(j));
  }
  Json& w = root_["warnings"];
  w = Json::MakeArray();
  for (const auto& s : warnings_) w.Append(s);
  return root_;
}

std::unique_ptr<ReportBuilder> BuildReport(const std::vector<ProcessTrace>& traces,
                                           ReportOptions options) {
  auto report = std::make_unique<ReportBuilder>(traces, std::move(options));
  for (const auto& t : traces) {
    for (const auto& w : t.warnings) report->AddWarning(w);
  }
  for (auto& analysis : MakeAllAnalyses()) analysis->Run(*report);
  report->Finish();
  return report;
}

// ---- formatting helpers ----------------------------------------------------------------

std::string FormatBytes(uint64_t bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) v /= 1024, ++u;
  char buf[32];
  if (u == 0) {
    std::snprintf(buf, sizeof(buf), "%llu B", static_cast<unsigned long long>(bytes));
  } else {
    std::snprintf(buf, sizeof(buf), "%.1f %s", v, kUnits[u]);
  }
  return buf;
}

std::string FormatDurationNs(uint64_t ns) {
  char buf[32];
  if (ns < 1000) {
    std::snprintf(buf, sizeof(buf), "%llu ns", static_cast<unsigned long long>(ns));
  } else if (ns < 1000000) {
    std::snprintf(buf, sizeof(buf), "%.1f us", static_cast<double>(ns) / 1e3);
  } else if (ns < 1000000000) {
    std::snprintf(buf, sizeof(buf), "%.1f ms", static_cast<double>(ns) / 1e6);
  } else {
    std::snprintf(buf, sizeof(buf), "%.2f s", static_cast<double>(ns) / 1e9);
  }
  return buf;
}

std::string ErrnoName(int e) {
  if (const char* n = strerrorname_np(e)) return n;
  return "errno " + std::to_string(e);
}

std::string_view Basename(std::string_view path) {
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos || path.size() == 1 ? path : path.substr(slash + 1);
}

std::string FormatHex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

namespace {

// Appends a control or stray byte as \n, \r, \t or \xNN.
void AppendEscaped(std::string& out, unsigned char c) {
  switch (c) {
    case '\n': out += "\\n"; return;
    case '\r': out += "\\r"; return;
    case '\t': out += "\\t"; return;
    default: break;
  }
  static const char kHex[] = "0123456789abcdef";
  out += "\\x";
  out += kHex[c >> 4];
  out += kHex[c & 15];
}

// EscapeForTerminal, keeping the newlines of preformatted multi-line text.
std::string EscapeBody(std::string_view s, bool keep_newlines) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '\n' && keep_newlines) {
      out += '\n';
    } else if (c < 0x20 || c == 0x7f) {
      AppendEscaped(out, c);
    } else if (c < 0x80) {
      out += static_cast<char>(c);
    } else if (const size_t len = Utf8SequenceLength(s.substr(i)); len == 0) {
      AppendEscaped(out, c);
    } else if (c == 0xc2 && static_cast<unsigned char>(s[i + 1]) < 0xa0) {
      AppendEscaped(out, static_cast<unsigned char>(s[i + 1]));  // a C1 control (U+0080..U+009F)
      ++i;
    } else {
      out.append(s.substr(i, len));
      i += len - 1;
    }
  }
  return out;
}

}  // namespace

std::string EscapeForTerminal(std::string_view s) { return EscapeBody(s, /*keep_newlines=*/false); }

std::string SignalName(int signo) {
  if (const char* abbrev = sigabbrev_np(signo)) return std::string("SIG") + abbrev;
  return "signal " + std::to_string(signo);
}

// ---- renderers -----------------------------------------------------------------------

namespace {

const char* SeverityColor(Severity s) {
  switch (s) {
    case Severity::kError: return "\033[1;31m";
    case Severity::kWarning: return "\033[1;33m";
    case Severity::kInfo: return "\033[1;36m";
  }
  return "";
}

}  // namespace

std::string RenderText(const ReportBuilder& report, bool color) {
  std::string out;
  const char* bold = color ? "\033[1m" : "";
  const char* reset = color ? "\033[0m" : "";
  out += std::string(bold) + "colabtrace report" + reset + "\n";
  // Every string here may hold trace text: escaped (sections keep their line breaks;
  // a trace string with a newline in a section is escaped where the section is built).
  for (const auto& w : report.warnings()) out += "warning: " + EscapeForTerminal(w) + "\n";
  out += "\n";
  for (const TextSection& s : report.sections()) {
    out += std::string(bold) + "== " + EscapeForTerminal(s.title) + " ==" + reset + "\n" +
           EscapeBody(s.body, /*keep_newlines=*/true);
    if (!s.body.empty() && s.body.back() != '\n') out += "\n";
    out += "\n";
  }
  out += std::string(bold) + "== Findings ==" + reset + "\n";
  if (report.findings().empty()) out += "No findings.\n";
  for (const Finding& f : report.findings()) {
    out += color ? SeverityColor(f.severity) : "";
    out += std::string(SeverityName(f.severity)) + reset + " " + f.id;
    if (f.pid != 0) out += " [pid " + std::to_string(f.pid) + "]";
    out += ": " + EscapeForTerminal(f.summary) + "\n";
    if (!f.advice.empty()) out += "    advice: " + EscapeForTerminal(f.advice) + "\n";
  }
  return out;
}

std::string RenderJson(const ReportBuilder& report) {
  return const_cast<ReportBuilder&>(report).root().Dump(2) + "\n";
}

bool WriteJson(const ReportBuilder& report, const Json::Sink& sink) {
  return const_cast<ReportBuilder&>(report).root().DumpStreaming(2, sink) && sink("\n");
}

// RenderHtml: report/html/page.cpp.

}  // namespace colabtrace::analyzer
