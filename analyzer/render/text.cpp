#include "render/render.h"

#include <cstdio>

#include "render/first_screen.h"
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

// The first screen: the verdict line, the worst findings, the vital signs.
std::string FirstScreenText(const FirstScreen& screen, bool color) {
  const char* reset = color ? "\033[0m" : "";
  const Severity worst = screen.errors > 0 || !screen.failed_main.empty() ? Severity::kError : Severity::kWarning;
  std::string out = std::string(color ? (screen.healthy() ? "\033[1;32m" : SeverityColor(worst)) : "") +
                    EscapeForTerminal(screen.VerdictLine()) + reset + "\n";
  for (const Finding* f : screen.worst) {
    char sev[16];
    std::snprintf(sev, sizeof(sev), "%-8s", std::string(SeverityName(f->severity)).c_str());
    out += "  " + std::string(color ? SeverityColor(f->severity) : "") + sev + reset + f->id;
    if (f->pid != 0) out += " [pid " + std::to_string(f->pid) + "]";
    out += ": " + EscapeForTerminal(f->summary) + "\n";
  }
  if (!screen.worst.empty() && screen.errors + screen.warnings > screen.worst.size()) {
    out += "  (" + std::to_string(screen.errors + screen.warnings - screen.worst.size()) +
           " more under Findings)\n";
  }
  if (!screen.worst.empty() && !screen.vitals.empty()) out += "\n";
  for (const VitalSign& v : screen.vitals) {
    char label[32];
    std::snprintf(label, sizeof(label), "  %-13s", v.label.c_str());
    out += label + EscapeForTerminal(v.value) + "\n";
  }
  return out;
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
  out += FirstScreenText(FirstScreen::Of(report), color) + "\n";
  for (const TextSection& s : text::TextSections(report)) {
    out += std::string(bold) + "== " + EscapeForTerminal(s.title) + " ==" + reset + "\n" +
           EscapeForTerminalKeepingLines(s.body);
    if (!s.body.empty() && s.body.back() != '\n') out += "\n";
    out += "\n";
  }
  out += std::string(bold) + "== Findings ==" + reset + "\n";
  if (report.findings().empty()) out += "No findings.\n";
  for (const FindingFold& fold : FoldFindings(report.findings())) {
    const Finding& f = *fold.findings.front();
    out += color ? SeverityColor(f.severity) : "";
    out += std::string(SeverityName(f.severity)) + reset + " " + f.id;
    if (fold.findings.size() > 1) {
      // Info findings of one id: one line, the first one's summary.
      out += " \u00d7" + std::to_string(fold.findings.size()) + ": " + EscapeForTerminal(f.summary) +
             " (`report --format json` has each)\n";
      continue;
    }
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
