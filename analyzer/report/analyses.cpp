// The list of analyses. Each area's analysis lives in its own folder and provides a
// factory; an area that is not built is skipped (weak symbols).
#include "report/analyses.h"
#include "report/report.h"

namespace colabtrace::analyzer {

std::vector<std::unique_ptr<Analysis>> MakeAllAnalyses() {
  std::vector<std::unique_ptr<Analysis>> all;
  all.push_back(MakeProcessAnalysis());
  for (auto factory : {&MakeIoAnalysis, &MakeGpuAnalysis, &MakeLibraryAnalysis, &MakePythonAnalysis,
                       &MakePerfAnalysis, &MakeDistAnalysis}) {
    if (factory != nullptr) all.push_back(factory());
  }
  all.push_back(MakeHostAnalysis());
  all.push_back(MakeRunWrapperAnalysis());
  return all;
}

}  // namespace colabtrace::analyzer
