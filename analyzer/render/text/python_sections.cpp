// The Python sections: the Python stack of each crash (innermost first; past
// kProcessRowsBeforeGrouping crashes one section per distinct signal and stack), the
// packages imported (python.packages[]) and PyTorch's allocator at an out-of-memory error
// (the run model's TorchSnapshots).
#include <algorithm>
#include <map>

#include "model/process_role.h"
#include "model/python_stack.h"
#include "python/torch_snapshot.h"
#include "render/text/sections.h"

namespace colabtrace::analyzer::text {
namespace {

struct CrashStack {
  std::string signal;
  uint32_t pid = 0;
  uint64_t tid = 0;
  std::string body;  // its frames, one indented line each
};

// One section per crash stack, or past kProcessRowsBeforeGrouping one per distinct
// (signal, stack), naming how many crashes had it and a few pids.
void AddStackSections(const std::vector<CrashStack>& stacks, std::vector<TextSection>& out) {
  if (stacks.size() <= kProcessRowsBeforeGrouping) {
    for (const CrashStack& c : stacks) {
      out.push_back({"Python stack at " + c.signal + " (pid " + std::to_string(c.pid) + ", tid " +
                         std::to_string(c.tid) + "), innermost first",
                     c.body});
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
    out.push_back({"Python stack at " + g->first.first + " (" + std::to_string(n) +
                       (n == 1 ? " crash: pid " : " crashes: pids ") + PidSample(g->second) +
                       "), innermost first",
                   g->first.second});
  }
}

}  // namespace

void PythonSections(const ReportBuilder& report, std::vector<TextSection>& out) {
  std::vector<CrashStack> stacks;
  std::string snapshot_text;
  for (const ProcessTrace& t : report.traces()) {
    if (const std::optional<TorchSnapshot>& snap = report.run().Get<TorchSnapshots>().Of(report.run(), t)) {
      const TorchFragmentation f = AnalyzeTorchSnapshot(*snap);
      snapshot_text += "pid " + std::to_string(t.pid()) + ": request " + FormatBytes(f.request) + ", reserved " +
                       FormatBytes(f.reserved_bytes) + ", allocated " + FormatBytes(f.allocated_bytes) +
                       ", largest free block " + FormatBytes(f.largest_free_block) + ", " +
                       std::to_string(f.inactive_split_blocks) + " inactive split blocks (" +
                       FormatBytes(f.inactive_split_bytes) + "): " +
                       (f.fragmentation ? "fragmentation" : "not fragmentation") + "\n";
    }
    for (const auto& s : t.records.Signal) {
      const std::vector<std::string> frames = PythonStackFrames(t, s.py_stack);
      if (frames.empty()) continue;
      std::string body;
      for (const std::string& f : frames) body += "  " + f + "\n";
      stacks.push_back({SignalName(static_cast<int>(s.signo)), t.pid(), s.tid, std::move(body)});
    }
  }
  AddStackSections(stacks, out);
  const Json* python = report.document().Find("python");
  const Json* packages = python != nullptr ? python->Find("packages") : nullptr;
  if (packages != nullptr && packages->is_array() && !packages->array().empty()) {
    std::string text;
    for (const Json& p : packages->array()) {
      const std::string version = p["version"].is_string() ? p["version"].str() : std::string();
      text += (p["name"].is_string() ? p["name"].str() : std::string()) + " " +
              (version.empty() ? "(unknown version)" : version) + "\n";
    }
    out.push_back({"Python packages imported", text});
  }
  if (!snapshot_text.empty()) out.push_back({"PyTorch allocator at the out-of-memory error", snapshot_text});
}

}  // namespace colabtrace::analyzer::text
