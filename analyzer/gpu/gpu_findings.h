// What the gpu.* rules (gpu/rules/, one file per finding id, registered in the rule
// registry) and the GPU analysis share: the verdict on an out-of-memory failure and the
// JSON of blocks and address maps.
//
// The rules (docs/gpu-validation.md lists them with the reasoning):
//   gpu.oom-fragmentation  an out-of-memory failure while the free memory read right
//                          after it was at least the request, or PyTorch's snapshot shows
//                          its cached blocks fragmented (rules/oom.cpp decides both ids).
//   gpu.oom                any other out-of-memory failure that was not recovered; the
//                          cause is whichever holds the most: this process's segments,
//                          other processes, or the CUDA context.
//   gpu.leak               never-freed allocations from one site that keep growing after
//                          warm-up (leak_growth.h); memory merely held at exit is not one.
//   gpu.device-fault       a sticky device error (700 illegal address, 710 assert, ...)
//                          surfaced at a call; the kernels in flight on its stream, newest
//                          (the likely culprit) first.
//   gpu.launch-failed      kernel launches that returned an error; not those failing with
//                          a sticky error (the device fault's).
//   gpu.churn              >= 1000 raw segment allocate/free pairs at >= 100 per second
//                          (runs of >= 32 frees on one thread, cache releases, left out).
//   gpu.near-capacity      a device's peak >= 95% of its memory.
//   gpu.allocator-config-ignored  an allocator variable set after the first allocation,
//                          or contradicted by the calls the framework made.
//   gpu.coverage-incomplete  frees of addresses never seen allocated, driver allocations
//                          made by a libcudart that bypassed the runtime hooks, entry
//                          points the shim could not wrap, CUPTI's gaps, and the
//                          libraries that hide calls (abi/rules/coverage_incomplete.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gpu/allocation_timeline.h"
#include "report/report.h"

namespace colabtrace::analyzer::gpu {

// The other traced processes that had device memory live on the same device at a time:
// (pid, bytes) for each.
using OthersOnDevice =
    std::function<std::vector<std::pair<uint32_t, uint64_t>>(int64_t device, uint64_t ts)>;

// How a failed allocation is explained.
struct FailureVerdict {
  // kGpuOom or kGpuOomFragmentation as the segments show it; none if not out of memory.
  std::optional<FindingId> id;
  // "fragmentation", "this-process", "other-process", "context", "larger-than-device",
  // "unknown" (no memory reading after the failure)
  std::string cause;
  uint64_t held_elsewhere = 0;     // total - free - this process's live bytes
  uint64_t context_estimate = 0;
  uint64_t others_estimate = 0;    // other processes, traced or not
  uint64_t pool_cached = 0;        // freed memory a stream-ordered pool still holds
  std::vector<std::pair<uint32_t, uint64_t>> traced_others;
};

FailureVerdict JudgeFailure(const Failure& f, const DeviceMemory* device,
                            const OthersOnDevice& others);

// The other traced processes of the run with memory live on the device of traces()[i]
// at a time (gpu.oom's cause).
OthersOnDevice OthersOnDeviceOf(const RunModel& run, size_t i);

// JSON helpers shared with the analysis.
Json BlockJson(SymbolCache& symbols, const ProcessTrace& t, const Block& b);
Json AddressMapJson(SymbolCache& symbols, const ProcessTrace& t, const AddressMap& m);
std::vector<std::string> BlockStack(SymbolCache& symbols, const ProcessTrace& t, uint64_t stack,
                                    uint64_t caller);
std::string DeviceLabel(const DeviceMemory* d, int64_t index);

}  // namespace colabtrace::analyzer::gpu
