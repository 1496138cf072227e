#include "render/text/sections.h"

#include "model/process_facts.h"

namespace colabtrace::analyzer::text {

std::vector<const Json*> RowsOfTraces(const ReportBuilder& report) {
  std::vector<const Json*> out;
  const Json* rows = report.document().Find("processes");
  size_t j = 0;
  for (const ProcessTrace& t : report.traces()) {
    const bool has_row = !IsRunWrapper(t) && rows != nullptr && rows->is_array() && j < rows->array().size();
    out.push_back(has_row ? &rows->array()[j++] : nullptr);
  }
  return out;
}

std::vector<TextSection> TextSections(const ReportBuilder& report) {
  std::vector<TextSection> out;
  RanksSection(report, out);
  ProcessesSection(report, out);
  IoSections(report, out);
  GpuMemorySection(report, out);
  LibrariesSection(report, out);
  PythonSections(report, out);
  SampledSection(report, out);
  return out;
}

}  // namespace colabtrace::analyzer::text
