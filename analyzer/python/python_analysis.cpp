// The Python analysis: packages behind imported modules (python.packages[],
// processes[].python) and PyTorch's allocator snapshot at an OOM
// (processes[].python.torch_snapshot). Their text sections, and the Python stack of each
// crash: render/text/python_sections.cpp.
#include <csignal>
#include <map>
#include <set>

#include "report/analyses.h"
#include "model/python_stack.h"
#include "python/torch_snapshot.h"

namespace colabtrace::analyzer {
namespace {

class PythonAnalysis final : public Analysis {
 public:
  std::string_view name() const override { return "python"; }

  void Run(ReportBuilder& report) override {
    const auto& traces = report.traces();
    // (name, version) -> (modules, pids)
    std::map<std::pair<std::string, std::string>, std::pair<std::set<std::string>, std::set<uint32_t>>> all;
    for (size_t i = 0; i < traces.size(); ++i) {
      const ProcessTrace& t = traces[i];
      Json python = Json::MakeObject();
      if (!t.records.PyPackage.empty()) {
        Json packages = Json::MakeArray();
        for (const auto& p : t.records.PyPackage) {
          Json row = Json::MakeObject();
          const std::string name(t.Str(p.name)), version(t.Str(p.version));
          row["name"] = name;
          row["version"] = version;
          Json modules = Json::MakeArray();
          auto& agg = all[{name, version}];
          for (const std::string& m : SplitCommas(t.Str(p.modules))) {
            modules.Append(m);
            agg.first.insert(m);
          }
          agg.second.insert(t.pid());
          row["modules"] = std::move(modules);
          packages.Append(std::move(row));
        }
        python["packages"] = std::move(packages);
      }
      if (const std::optional<TorchSnapshot>& snap = report.run().Get<TorchSnapshots>().Of(report.run(), t)) {
        python["torch_snapshot"] = TorchFragmentationJson(*snap, AnalyzeTorchSnapshot(*snap));
      }
      if (!python.object().empty()) report.process(i)["python"] = std::move(python);
    }
    if (!all.empty()) {
      Json packages = Json::MakeArray();
      for (const auto& [key, value] : all) {
        Json row = Json::MakeObject();
        row["name"] = key.first;
        row["version"] = key.second;
        Json modules = Json::MakeArray();
        for (const std::string& m : value.first) modules.Append(m);
        row["modules"] = std::move(modules);
        Json pids = Json::MakeArray();
        for (uint32_t pid : value.second) pids.Append(pid);
        row["pids"] = std::move(pids);
        packages.Append(std::move(row));
      }
      report.root()["python"]["packages"] = std::move(packages);
    }
  }

 private:
  static std::vector<std::string> SplitCommas(std::string_view s) {
    std::vector<std::string> out;
    size_t start = 0;
    while (start <= s.size()) {
      size_t end = s.find(',', start);
      if (end == std::string_view::npos) end = s.size();
      if (end > start) out.emplace_back(s.substr(start, end - start));
      start = end + 1;
    }
    return out;
  }
};

}  // namespace

std::unique_ptr<Analysis> MakePythonAnalysis() { return std::make_unique<PythonAnalysis>(); }

}  // namespace colabtrace::analyzer
