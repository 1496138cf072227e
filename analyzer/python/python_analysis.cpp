// The Python analysis: packages behind imported modules (python.packages[],
// processes[].python), the Python stack of each crash as a text section, and PyTorch's
// allocator snapshot at an OOM (processes[].python.torch_snapshot).
#include <csignal>
#include <map>
#include <set>

#include "report/analyses.h"
#include "model/process_role.h"
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
    std::string packages_text, snapshot_text;
    std::vector<CrashStack> stacks;
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
        const TorchFragmentation f = AnalyzeTorchSnapshot(*snap);
        python["torch_snapshot"] = TorchFragmentationJson(*snap, f);
        snapshot_text += "pid " + std::to_string(t.pid()) + ": request " + FormatBytes(f.request) +
                         ", reserved " + FormatBytes(f.reserved_bytes) + ", allocated " +
                         FormatBytes(f.allocated_bytes) + ", largest free block " +
                         FormatBytes(f.largest_free_block) + ", " +
                         std::to_string(f.inactive_split_blocks) + " inactive split blocks (" +
                         FormatBytes(f.inactive_split_bytes) + "): " +
                         (f.fragmentation ? "fragmentation" : "not fragmentation") + "\n";
      }
      if (!python.object().empty()) report.process(i)["python"] = std::move(python);
      for (const auto& s : t.records.Signal) {
        const std::vector<std::string> frames = PythonStackFrames(t, s.py_stack);
        if (frames.empty()) continue;
        std::string body;
        for (const std::string& f : frames) body += "  " + f + "\n";
        stacks.push_back({SignalName(static_cast<int>(s.signo)), t.pid(), s.tid, std::move(body)});
      }
    }
    AddStackSections(report, stacks);
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
        packages_text += key.first + " " + (key.second.empty() ? "(unknown version)" : key.second) + "\n";
      }
      report.root()["python"]["packages"] = std::move(packages);
      report.AddText("Python packages imported", packages_text);
    }
    if (!snapshot_text.empty()) report.AddText("PyTorch allocator at the out-of-memory error", snapshot_text);
  }

 private:
  struct CrashStack {
    std::string signal;
    uint32_t pid = 0;
    uint64_t tid = 0;
    std::string body;  // its frames, one indented line each
  };

  // One section per crash stack, or past kProcessRowsBeforeGrouping one per distinct
  // (signal, stack), naming how many crashes had it and a few pids.
  static void AddStackSections(ReportBuilder& report, const std::vector<CrashStack>& stacks) {
    if (stacks.size() <= kProcessRowsBeforeGrouping) {
      for (const CrashStack& c : stacks) {
        report.AddText("Python stack at " + c.signal + " (pid " + std::to_string(c.pid) + ", tid " +
                           std::to_string(c.tid) + "), innermost first",
                       c.body);
      }
      return;
    }
    std::map<std::pair<std::string, std::string>, std::vector<int64_t>> groups;  // (signal, body) -> pids
    std::vector<const std::pair<const std::pair<std::string, std::string>, std::vector<int64_t>>*> order;
    for (const CrashStack& c : stacks) {
      auto [it, fresh] = groups.try_emplace({c.signal, c.body});
      if (fresh) order.push_back(&*it);
      it->second.push_back(c.pid);
    }
    std::stable_sort(order.begin(), order.end(),
                     [](const auto* a, const auto* b) { return a->second.size() > b->second.size(); });
    for (const auto* g : order) {
      const size_t n = g->second.size();
      report.AddText("Python stack at " + g->first.first + " (" + std::to_string(n) +
                         (n == 1 ? " crash: pid " : " crashes: pids ") + PidSample(g->second) +
                         "), innermost first",
                     g->first.second);
    }
  }

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
