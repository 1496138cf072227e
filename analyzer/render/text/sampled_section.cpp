// Sampled from outside: what each `colabtrace run` sampled. From the report's run[].
#include "core/format.h"
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
            r["sample_ms"].Dump(-1) + " ms (" + r["samples"].Dump(-1) + " samples)";
    // PSS and USS: with every sample in older traces (no pss_samples), else as read.
    if (const Json* n = r.Find("pss_samples"); n != nullptr && n->is_number()) {
      const Json* fixed = r.Find("pss_ms");
      const bool budget = fixed == nullptr || !fixed->is_number() || fixed->as_int() == 0;
      text += "; PSS read in " + n->Dump(-1) + " of them" +
              (budget ? std::string(" as its cost budget allowed") : ", every " + fixed->Dump(-1) + " ms") +
              ", at most " + FormatDurationNs(static_cast<uint64_t>(r["pss_max_gap_ms"].as_int()) * 1000000) +
              " apart for one process";
    }
    text += "\n";
  }
  out.push_back({"Sampled from outside", text});
}

}  // namespace colabtrace::analyzer::text
