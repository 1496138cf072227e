#include "render/render.h"

#include "render/text/sections.h"

namespace colabtrace::analyzer {

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
  for (const TextSection& s : text::TextSections(report)) {
    out += std::string(bold) + "== " + EscapeForTerminal(s.title) + " ==" + reset + "\n" +
           EscapeForTerminalKeepingLines(s.body);
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
  return report.document().Dump(2) + "\n";
}

bool WriteJson(const ReportBuilder& report, const Json::Sink& sink) {
  return report.document().DumpStreaming(2, sink) && sink("\n");
}

// RenderHtml: render/html/page.cpp.

}  // namespace colabtrace::analyzer
