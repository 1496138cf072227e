// Factories of the analyses, one per area. The process analysis always exists; the
// others are weak so that an area can be built (or not) on its own.
#pragma once

#include <memory>

#include "report/report.h"

namespace colabtrace::analyzer {

std::unique_ptr<Analysis> MakeProcessAnalysis();
// analyzer/io/: io.files[], processes[].io and the io.* findings.
std::unique_ptr<Analysis> MakeIoAnalysis() __attribute__((weak));
// analyzer/gpu/: gpu, processes[].gpu and the gpu.* findings.
std::unique_ptr<Analysis> MakeGpuAnalysis() __attribute__((weak));
// analyzer/abi/: libraries[] and the abi.* findings.
std::unique_ptr<Analysis> MakeLibraryAnalysis() __attribute__((weak));
// analyzer/python/: python.packages[], processes[].python (packages, PyTorch snapshot),
// the Python stack of each crash.
std::unique_ptr<Analysis> MakePythonAnalysis() __attribute__((weak));
// analyzer/perf/: processes[].steps and processes[].workers, and the perf.* findings.
std::unique_ptr<Analysis> MakePerfAnalysis() __attribute__((weak));
// analyzer/dist/: processes[].dist, the jobs of ranks ("dist") and the dist.* findings.
// Runs after the process and perf analyses, whose findings it may fold.
std::unique_ptr<Analysis> MakeDistAnalysis() __attribute__((weak));
// Whole-run host findings that need every process (host.memory-pressure, host.shm-small),
// per host. Runs after the area analyses.
std::unique_ptr<Analysis> MakeHostAnalysis();
// Moves `colabtrace run`'s own trace out of processes[] into "run". Runs after all others.
std::unique_ptr<Analysis> MakeRunWrapperAnalysis();

}  // namespace colabtrace::analyzer
