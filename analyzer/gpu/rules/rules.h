// The gpu.* rules, one file per finding id (gpu.oom and gpu.oom-fragmentation, decided
// together, share oom.cpp), each with its rule and thresholds beside it and registered
// in the rule registry (report/rule_registry.h); the GPU analysis runs them with
// RunRules. Most read each process's AllocationTimeline (gpu/allocation_timeline.h, the
// run model's GpuTimelines); gpu.device-fault and gpu.launch-failed read the launch
// records instead. gpu.coverage-incomplete is abi/rules/coverage_incomplete.cpp: its
// causes are partly the libraries a process loaded (the abi model, a layer above).
#pragma once

#include <string>
#include <vector>

#include "gpu/gpu_findings.h"
#include "report/rule_registry.h"

namespace colabtrace::analyzer::gpu {

// Runs per_process(ctx, trace, its timeline) for every trace of the run, in order.
template <class PerProcess>
void ForEachProcess(RuleContext& ctx, PerProcess&& per_process) {
  const std::vector<ProcessTrace>& traces = ctx.run().traces();
  const std::vector<AllocationTimeline>& timelines = ctx.run().Get<GpuTimelines>().of_trace;
  for (size_t i = 0; i < traces.size(); ++i) per_process(ctx, traces[i], timelines[i]);
}

// Shared by the rules (gpu_findings.cpp).
std::string Pct(double v);                                  // "42.0%"
uint64_t Rel(const ProcessTrace& t, uint64_t ts);           // ns after the process started
std::string Seconds(uint64_t ns);                           // "+1.234 s" (a Rel time)
Json StackJson(const std::vector<std::string>& frames);

}  // namespace colabtrace::analyzer::gpu
