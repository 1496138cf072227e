// gpu.leak (warning)
//
// Rule: never-freed allocations from one site that keep coming after warm-up
// (leak_growth.h), grouped by allocation stack (Python stack first). Memory merely held
// at exit (caches, pools) is not reported here.
#include <algorithm>
#include <cmath>
#include <map>
#include <string_view>

#include "model/process_facts.h"
#include "gpu/leak_growth.h"
#include "gpu/rules/rules.h"
#include "model/python_stack.h"

namespace colabtrace::analyzer::gpu {
namespace {

constexpr size_t kMaxLeakGroups = 10;  // allocation sites listed in the evidence

void LeakOf(RuleContext& ctx, const ProcessTrace& t, const AllocationTimeline& g) {
  const LeakGrowth lg = FindLeakGrowth(g, t.end_ns());
  if (lg.groups.empty()) return;
  const bool killed = ctx.run().facts(t).end_kind == EndKind::kKilled;
  double rate = 0;
  for (const LeakGroup& gr : lg.groups) rate += gr.rate_bytes_per_s;
  Finding finding = Finding::Of(FindingId::kGpuLeak, t.pid());
  Json& ev = finding.evidence;
  ev["growth_bytes"] = lg.growth_bytes;
  ev["allocations"] = lg.growth_allocations;
  ev["growth_rate_bytes_per_s"] = static_cast<uint64_t>(std::llround(rate));
  ev["held_at_exit_bytes"] = lg.held_at_exit_bytes;
  ev["leaked_bytes"] = g.leaked_bytes;
  ev["warmup_end_ns"] = Rel(t, lg.warmup_end);
  if (lg.warmup_from_samples) ev["warmup_live_from"] = "samples";  // the window gave up its records
  ev["at"] = killed ? "kill" : "exit";
  ev["groups"] = static_cast<uint64_t>(lg.groups.size());
  Json arr = Json::MakeArray();
  for (size_t i = 0; i < lg.groups.size() && i < kMaxLeakGroups; ++i) {
    const LeakGroup& gr = lg.groups[i];
    Json j = Json::MakeObject();
    j["bytes"] = gr.bytes;
    j["count"] = gr.count;
    j["after_warmup_count"] = gr.after_warmup_count;
    j["rate_bytes_per_s"] = static_cast<uint64_t>(std::llround(gr.rate_bytes_per_s));
    j["first_at_ns"] = Rel(t, gr.first_ts);
    j["last_at_ns"] = Rel(t, gr.last_ts);
    j["api"] = GpuApiLabel(gr.api);
    j["kind"] = std::string(MemKindName(gr.kind));
    if (gr.py_stack != 0) j["python_stack"] = PythonStackJson(t, gr.py_stack);
    j["stack"] = StackJson(BlockStack(ctx.run().symbols(), t, gr.stack, gr.caller));
    arr.Append(std::move(j));
  }
  ev["by_stack"] = std::move(arr);
  char rate_text[64];
  std::snprintf(rate_text, sizeof(rate_text), "%s/s", FormatBytes(static_cast<uint64_t>(rate)).c_str());
  finding.summary = "GPU memory kept growing: " + std::to_string(lg.growth_allocations) +
                    " allocation(s), " + FormatBytes(lg.growth_bytes) + ", from " +
                    std::to_string(lg.groups.size()) + " allocation site(s) were never freed (about " +
                    rate_text + ") and still allocated " +
                    (killed ? "when the process was killed" : "at exit");
  ctx.Add(std::move(finding));
}

void LeakRule(RuleContext& ctx) { ForEachProcess(ctx, LeakOf); }

const RuleRegistration kLeakRuleRegistration(LeakRule, {FindingId::kGpuLeak});
}  // namespace

}  // namespace colabtrace::analyzer::gpu
