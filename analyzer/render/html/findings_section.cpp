// Findings, first on the page: severity, id, process, summary, advice, and the evidence
// object as nested tables (arrays and strings capped; the JSON report has all of it).
// A number is shown in the unit its field's name gives (UnitOfField, core/format.h: bytes,
// nanoseconds, addresses), the raw number in its title; the JSON report keeps it raw.
// In reading order (render/first_screen.h: errors first, a GPU device fault leading);
// errors and warnings expanded, the info findings of one id folded behind one line with
// their count.
#include <algorithm>
#include <string>
#include <vector>

#include "render/first_screen.h"
#include "render/html/escape.h"
#include "render/html/sections.h"

namespace colabtrace::analyzer::html {
namespace {

constexpr size_t kFoldedStringBytes = 160;
constexpr size_t kFoldedListItems = 6;

// A number in `unit`: "<span class="unit" title="2147483648">2.0 GiB</span>"; "" when it has
// none (or is negative or not a number).
std::string InUnit(const Json& v, FieldUnit unit) {
  if (unit == FieldUnit::kNone || !v.is_number()) return "";
  const int64_t i = v.as_int();
  const double d = v.number();
  if (i < 0 || d < 0 || !(d < 1.8e19)) return "";
  const uint64_t u = static_cast<double>(i) == d ? static_cast<uint64_t>(i) : static_cast<uint64_t>(d + 0.5);
  return "<span class=\"unit\" title=\"" + Text(v.Dump(-1)) + "\">" + Text(FormatInUnit(unit, u)) + "</span>";
}

std::string Scalar(const Json& v, FieldUnit unit = FieldUnit::kNone) {
  if (v.is_null()) return "<span class=\"null\">null</span>";
  if (std::string shown = InUnit(v, unit); !shown.empty()) return shown;
  if (v.is_string()) {
    const std::string& s = v.str();
    const bool cut = s.size() > kMaxStringBytes;
    const std::string body = Block(cut ? Shorten(s, kMaxStringBytes) : s);
    const std::string shown = s.find('\n') != std::string::npos ? "<pre>" + body + "</pre>" : body;
    // Long text (a stack) is folded behind its beginning.
    if (s.size() <= kFoldedStringBytes) return shown;
    return "<details><summary>" + Text(Shorten(s.substr(0, s.find('\n')), kFoldedStringBytes)) + "</summary>" +
           shown + "</details>";
  }
  return Text(v.Dump(-1));
}

// `unit`: the unit of the field that holds v (for a list, of each of its numbers).
std::string Evidence(const Json& v, int depth, FieldUnit unit = FieldUnit::kNone) {
  if (v.is_object()) {
    if (v.object().empty()) return "";
    if (depth > 5) return Text(Shorten(v.Dump(-1), 200));
    std::string s = "<table class=\"ev\">";
    for (const auto& [key, value] : v.object()) {
      s += "<tr><th>" + Text(key) + "</th><td>" + Evidence(value, depth + 1, UnitOfField(key)) + "</td></tr>";
    }
    return s + "</table>";
  }
  if (v.is_array()) {
    const auto& a = v.array();
    bool scalars = true;
    for (const Json& e : a) scalars = scalars && !e.is_object() && !e.is_array();
    std::string s;
    const size_t shown = std::min(a.size(), kMaxEvidenceItems);
    if (scalars) {
      for (size_t i = 0; i < shown; ++i) s += (i ? ", " : "") + Scalar(a[i], unit);
      // A long list (a stack's frames) is folded behind its first entry.
      if (a.size() > kFoldedListItems) {
        s = "<details><summary>" + std::to_string(a.size()) + " entries: " + Scalar(a[0], unit) + ", \u2026</summary>" + s;
        if (a.size() > shown) s += " <span class=\"more\">(" + std::to_string(a.size() - shown) + " more)</span>";
        return s + "</details>";
      }
    } else {
      // Lists of objects (segments, copies, groups) folded below the top level.
      if (depth > 0) s += "<details><summary>" + std::to_string(a.size()) + " entries</summary>";
      s += "<ol class=\"ev\">";
      for (size_t i = 0; i < shown; ++i) s += "<li>" + Evidence(a[i], depth + 1) + "</li>";
      s += "</ol>";
      if (depth > 0) s += "</details>";
    }
    if (a.size() > shown) s += " <span class=\"more\">(" + std::to_string(a.size() - shown) + " more)</span>";
    return s;
  }
  return Scalar(v, unit);
}

std::string Article(const Finding& f, size_t index) {
  const std::string sev(SeverityName(f.severity));
  // data-id right after the class: tests and scripts key on that order.
  std::string s = "<article class=\"finding " + sev + "\" data-id=\"" + Text(f.id) + "\" id=\"" +
                  FindingAnchor(index) + "\">\n<h3><span class=\"sev " + sev + "\">" + sev + "</span> <code>" +
                  Text(f.id) + "</code>";
  if (f.pid != 0) s += " <span class=\"pid\">pid " + std::to_string(f.pid) + "</span>";
  s += "</h3>\n<p class=\"summary\">" + Text(f.summary) + "</p>\n";
  if (!f.advice.empty()) s += "<p class=\"advice\"><b>Advice:</b> " + Text(f.advice) + "</p>\n";
  const std::string ev = Evidence(f.evidence, 0);
  if (!ev.empty()) s += "<details class=\"evidence\" open><summary>Evidence</summary>" + ev + "</details>\n";
  return s + "</article>\n";
}

}  // namespace

std::string FindingAnchor(size_t index) { return "finding-" + std::to_string(index); }

std::string FindingsSection(const PageContext& ctx) {
  const auto& findings = ctx.report.findings();
  size_t counts[3] = {0, 0, 0};
  for (const Finding& f : findings) ++counts[static_cast<int>(f.severity)];
  std::string s = "<section id=\"findings\"><h2>Findings</h2>\n";
  if (findings.empty()) return s + "<p>No findings.</p></section>\n";
  s += "<p class=\"counts\"><span class=\"sev error\">" + std::to_string(counts[2]) +
       " error</span> <span class=\"sev warning\">" + std::to_string(counts[1]) +
       " warning</span> <span class=\"sev info\">" + std::to_string(counts[0]) + " info</span></p>\n";
  // Errors and warnings expanded; the info findings of one id folded behind one line.
  size_t shown = 0;
  for (const FindingFold& fold : FoldFindings(findings)) {
    if (shown == kMaxFindings) break;
    if (fold.severity != Severity::kInfo) {
      s += Article(*fold.findings.front(), static_cast<size_t>(fold.findings.front() - findings.data()));
      ++shown;
      continue;
    }
    const Finding& first = *fold.findings.front();
    const size_t n = fold.findings.size();
    s += "<details class=\"fold info\" data-id=\"" + Text(fold.id) + "\" data-count=\"" + std::to_string(n) +
         "\"><summary><span class=\"sev info\">info</span> <code>" + Text(fold.id) + "</code>" +
         (n > 1 ? " \u00d7" + std::to_string(n) : std::string()) + ": " + Text(Shorten(first.summary, 200)) +
         "</summary>\n";
    for (const Finding* f : fold.findings) {
      if (shown == kMaxFindings) break;
      s += Article(*f, static_cast<size_t>(f - findings.data()));
      ++shown;
    }
    s += "</details>\n";
  }
  s += MoreNote(findings.size() - shown, "findings");
  return s + "</section>\n";
}

}  // namespace colabtrace::analyzer::html
