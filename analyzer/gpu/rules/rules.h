// The gpu.* rules of one process, one file per finding id (or a small family) in this
// folder, each with its rule, thresholds and advice beside it. Each reads the process's
// AllocationTimeline (gpu/allocation_timeline.h, the typed model) and adds its findings;
// AddGpuFindings (gpu/gpu_findings.cpp) runs them in order. gpu.launch-failed is
// gpu/launch_failures.cpp; gpu.device-fault (device_fault.cpp) reads the launch ring and
// the fault records instead of the timeline.
#pragma once

#include <string>
#include <vector>

#include "gpu/gpu_findings.h"

namespace colabtrace::analyzer::gpu {

void AddOomFindings(ReportBuilder& report, const ProcessTrace& t, const AllocationTimeline& g,
                    const OthersOnDevice& others);                                         // oom.cpp
void AddLeakFinding(ReportBuilder& report, const ProcessTrace& t, const AllocationTimeline& g);      // leak.cpp
void AddChurnFinding(ReportBuilder& report, const ProcessTrace& t, const AllocationTimeline& g);     // churn.cpp
void AddNearCapacity(ReportBuilder& report, const ProcessTrace& t, const AllocationTimeline& g);     // near_capacity.cpp
void AddConfigFindings(ReportBuilder& report, const ProcessTrace& t, const AllocationTimeline& g);   // allocator_config_ignored.cpp
void AddCoverageFinding(ReportBuilder& report, const ProcessTrace& t, const AllocationTimeline& g);  // coverage_incomplete.cpp
void AddDeviceFaultFinding(ReportBuilder& report, const ProcessTrace& t);                           // device_fault.cpp

// Shared by the rules (gpu_findings.cpp).
std::string Pct(double v);                                  // "42.0%"
uint64_t Rel(const ProcessTrace& t, uint64_t ts);           // ns after the process started
std::string Seconds(uint64_t ns);                           // "+1.234 s" (a Rel time)
Json StackJson(const std::vector<std::string>& frames);

}  // namespace colabtrace::analyzer::gpu
