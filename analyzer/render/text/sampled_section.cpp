// Sampled from outside: what each `colabtrace run` sampled. From the report's run[].
#include "render/text/sections.h"

namespace colabtrace::analyzer::text {

void SampledSection(const ReportBuilder& report, std::vector<TextSection>& out) {
  const Json* runs = report.document().Find("run");
  if (runs == nullptr || !runs->is_array()) return;
  std::string text;
  for (const Json& r : runs->array()) {
    text += "colabtrace run (pid " + r["pid"].Dump(-1) + ") ran pid " +
            r["child_pid"].Dump(-1) + " and sampled " +
            r["processes_sampled"].Dump(-1) + " processes every " +
            r["sample_ms"].Dump(-1) + " ms (" + r["samples"].Dump(-1) +
            " samples)\n";
  }
  out.push_back({"Sampled from outside", text});
}

}  // namespace colabtrace::analyzer::text
