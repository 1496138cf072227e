#include "gpu/cupti_merge.h"

#include <algorithm>
#include <map>

#include "gpu/gpu_api.h"

namespace colabtrace::analyzer::gpu {
namespace {

std::string StateName(uint64_t code) {
  switch (static_cast<format::CuptiStateCode>(code)) {
    case format::CuptiStateCode::kSubscribed: return "subscribed";
    case format::CuptiStateCode::kBackedOff: return "backed-off";
    case format::CuptiStateCode::kLoadFailed: return "load-failed";
    case format::CuptiStateCode::kFailed: return "failed";
    case format::CuptiStateCode::kFlushed: return "flushed";
    case format::CuptiStateCode::kInjected: return "injected";
    case format::CuptiStateCode::kHandedOver: return "handed-over";
  }
  return "unknown";
}

// CUpti_ActivityMemoryKind (shim/gpu/cupti_api.h).
constexpr uint64_t kPageable = 1, kPinned = 2, kDevice = 3, kManaged = 5, kDeviceStatic = 6,
                   kManagedStatic = 7;

}  // namespace

CuptiMemoryClass ClassifyCuptiMemory(const format::CuptiMemory& m) {
  if (m.op != 1 || m.pool_record != 0 || m.addr == 0) return CuptiMemoryClass::kOther;
  if (m.source == 2) return CuptiMemoryClass::kProgramAllocation;  // a driver API call returned it
  switch (m.memory_kind) {
    case kDevice:
    case kManaged: return CuptiMemoryClass::kProgramAllocation;
    case kDeviceStatic:
    case kManagedStatic: return CuptiMemoryClass::kDriverStatic;
    case kPinned:
    case kPageable: return CuptiMemoryClass::kHost;
    default: return CuptiMemoryClass::kOther;
  }
}

CuptiSummary SummarizeCupti(const ProcessTrace& t) {
  CuptiSummary s;
  for (const auto& r : t.records.CuptiState) {
    s.seen = true;
    s.activity_records += r.records;
    s.dropped += r.dropped;
    const auto code = static_cast<format::CuptiStateCode>(r.state);
    if (code == format::CuptiStateCode::kInjected) {
      s.injected = true;
    } else if (code == format::CuptiStateCode::kHandedOver) {
      s.handed_over_ts = r.ts;
      s.state = StateName(r.state);
      s.rc = r.rc;
    } else if (!s.handed_over_ts && (code != format::CuptiStateCode::kFlushed || s.state.empty())) {
      // (a flush another thread finished after a hand-over leaves the state handed-over)
      s.state = StateName(r.state);
      s.rc = r.rc;
    }
  }
  // Per address: allocations the hooks saw, and each CUPTI source's (with the bytes).
  struct Counts {
    uint64_t hooks = 0, activity = 0, callback = 0, bytes = 0;
  };
  std::map<uint64_t, Counts> by_addr;
  for (const auto& a : t.records.GpuAlloc) {
    const ApiClass cls = ClassifyGpuApi(a.api);
    if (a.rc == 0 && a.addr != 0 && cls.role == ApiRole::kAlloc && IsDeviceMemory(cls.kind)) {
      ++by_addr[a.addr].hooks;
    }
  }
  for (const auto& m : t.records.CuptiMemory) {
    switch (ClassifyCuptiMemory(m)) {
      case CuptiMemoryClass::kProgramAllocation: break;
      case CuptiMemoryClass::kDriverStatic:
        ++s.driver_static_allocations;
        s.driver_static_bytes += m.bytes;
        continue;
      case CuptiMemoryClass::kHost: ++s.host_allocations; continue;
      case CuptiMemoryClass::kOther: continue;
    }
    Counts& c = by_addr[m.addr];
    ++(m.source == 2 ? c.callback : c.activity);
    c.bytes = std::max<uint64_t>(c.bytes, m.bytes);
  }
  for (const auto& [addr, c] : by_addr) {
    const uint64_t cupti = std::max(c.activity, c.callback);
    s.merged_allocations += std::min(cupti, c.hooks);
    if (cupti > c.hooks) {
      s.only_allocations += cupti - c.hooks;
      s.only_bytes += (cupti - c.hooks) * c.bytes;
    }
  }
  for (const auto& m : t.records.CuptiModule) {
    if (m.event == static_cast<uint64_t>(format::CuptiModuleEvent::kModuleLoaded) && s.module_archs.size() < 256) {
      s.module_archs.emplace_back(t.Str(m.archs));
    }
  }
  return s;
}

}  // namespace colabtrace::analyzer::gpu
