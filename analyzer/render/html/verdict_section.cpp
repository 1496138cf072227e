// The verdict, first on the page (render/first_screen.h): one line that says the run is
// healthy, or counts its errors and warnings and names the worst, each linked to its
// finding below; then the run's vital signs as a small table, the ones worth a look
// (a limit nearly reached, a failed process, an input-bound loop) marked.
#include "render/first_screen.h"
#include "render/html/escape.h"
#include "render/html/sections.h"

namespace colabtrace::analyzer::html {

std::string VerdictSection(const PageContext& ctx) {
  const FirstScreen screen = FirstScreen::Of(ctx.report);
  const std::string state = screen.healthy() ? "healthy" : screen.errors > 0 || !screen.failed_main.empty() ? "error" : "warning";
  std::string s = "<section id=\"verdict\" class=\"verdict " + state + "\" data-errors=\"" +
                  std::to_string(screen.errors) + "\" data-warnings=\"" + std::to_string(screen.warnings) +
                  "\" data-info=\"" + std::to_string(screen.infos) + "\">\n<p class=\"verdict-line\">" +
                  Text(screen.VerdictLine()) + "</p>\n";
  if (!screen.worst.empty()) {
    const Finding* first = ctx.report.findings().data();
    s += "<ul class=\"worst\">";
    for (const Finding* f : screen.worst) {
      const std::string sev(SeverityName(f->severity));
      s += "<li><span class=\"sev " + sev + "\">" + sev + "</span> <a href=\"#" +
           FindingAnchor(static_cast<size_t>(f - first)) + "\"><code>" + Text(f->id) + "</code></a>";
      if (f->pid != 0) s += " <span class=\"pid\">pid " + std::to_string(f->pid) + "</span>";
      s += " " + Text(f->summary) + "</li>";
    }
    s += "</ul>\n";
  }
  if (!screen.vitals.empty()) {
    s += "<table class=\"vitals\">";
    for (const VitalSign& v : screen.vitals) {
      s += std::string(v.alarm ? "<tr class=\"alarm\">" : "<tr>") + "<th>" + Text(v.label) + "</th><td>" +
           Text(v.value) + "</td></tr>";
    }
    s += "</table>\n";
  }
  return s + "</section>\n";
}

}  // namespace colabtrace::analyzer::html
