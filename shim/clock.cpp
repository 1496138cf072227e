// The tick source and its rate estimate (clock.h). Kept apart from process.cpp so that
// the writer (trace_file.cpp, writer.cpp, clock.cpp) links into a unit test without the
// process hooks.
#include "clock.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <dlfcn.h>
#endif

#include "writer.h"

namespace colabtrace::shim {

bool g_ticks_are_tsc = false;

namespace {
uint64_t g_calib_ticks = 0, g_calib_ns = 0;  // the InitTicks anchor for RefineTickRate
}  // namespace

namespace {
bool g_ticks_decided = false;  // this address space decided the tick source already

// CPUID leaf 0x80000007, EDX bit 8 ("invariant TSC"): the bit from which Linux sets both
// constant_tsc and nonstop_tsc in /proc/cpuinfo (arch/x86/kernel/cpu/{amd,intel,...}.c).
// Older Intel models get constant_tsc alone from their model number, and VMware guests
// get it forced, but never nonstop_tsc, so "both flags" and "this bit" agree. Reading
// the bit costs two CPUID instructions (each a trap to the hypervisor in a VM, ~8 us on
// this project's VMs) instead of opening and formatting /proc/cpuinfo (~50 us). glibc
// (>= 2.33) ran those at its own start and keeps the leaves: its copy, when it has one,
// costs a dlsym (~3 us) instead.
bool CpuHasInvariantTsc() {
#if defined(__x86_64__)
  // <sys/platform/x86.h>'s ABI: struct cpuid_feature, and CPUID_INDEX_80000007 == 4.
  struct CpuidFeature {
    unsigned cpuid[4];  // eax, ebx, ecx, edx as CPUID returned them
    unsigned active[4];
  };
  using LeafFn = const CpuidFeature* (*)(unsigned);
  constexpr unsigned kIndex80000007 = 4, kEdx = 3;
  if (const auto leaf = reinterpret_cast<LeafFn>(dlsym(RTLD_DEFAULT, "__x86_get_cpuid_feature_leaf"))) {
    return (leaf(kIndex80000007)->cpuid[kEdx] & (1u << 8)) != 0;
  }
  (void)dlerror();  // an older glibc: leave the program no "undefined symbol" message
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(0x80000007u, &a, &b, &c, &d) == 0) return false;  // no such leaf
  return (d & (1u << 8)) != 0;
#else
  return false;
#endif
}

// The anchor RefineTickRate measures from, and the header's first rate estimate.
uint64_t StartCalibration() {
  g_ticks_decided = true;
  if (!g_ticks_are_tsc) return 1000000000ull;
  // A rough first estimate from the time since this process started; Clock records
  // (at start, with every sample and at exit) give the analyzer the exact fit, and
  // RefineTickRate() improves the header's figure once start-up is done.
  g_calib_ticks = Ticks();
  g_calib_ns = MonotonicNs();
  return 0;
}
}  // namespace

uint64_t InitTicksFromTrace(bool ticks_are_tsc) {
  g_ticks_are_tsc = ticks_are_tsc;
  return StartCalibration();
}

uint64_t InitTicks() {
  // A fork child keeps its parent's decision (g_ticks_decided survives fork).
  if (g_ticks_decided) return StartCalibration();
  g_ticks_are_tsc = CpuHasInvariantTsc();
  return StartCalibration();
}

uint64_t TickRateEstimate() {
  if (!g_ticks_are_tsc) return 1000000000ull;
  if (g_calib_ns == 0) return 0;
  const uint64_t t = Ticks(), n = MonotonicNs();
  if (n <= g_calib_ns + 10000 || t <= g_calib_ticks) return 0;
  return static_cast<uint64_t>(static_cast<long double>(t - g_calib_ticks) * 1e9L /
                               static_cast<long double>(n - g_calib_ns));
}

void RefineTickRate() {
  format::FileHeader* h = g_trace.header();
  if (h == nullptr) return;
  if (!g_ticks_are_tsc) return g_trace.SetTickRate(h->ticks_per_sec_hint);
  const uint64_t tps = TickRateEstimate();
  if (tps != 0) h->ticks_per_sec_hint = tps;
  g_trace.SetTickRate(h->ticks_per_sec_hint);
}

}  // namespace colabtrace::shim
