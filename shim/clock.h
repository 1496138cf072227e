// The shim's clock: a cheap tick counter for timestamps and durations.
//
// On x86-64 with an invariant TSC, ticks are rdtsc (about 7 ns, no vDSO call). Otherwise
// ticks are CLOCK_MONOTONIC nanoseconds. The trace header says which; Clock records pair
// ticks with CLOCK_MONOTONIC and CLOCK_REALTIME so the analyzer converts offline.
#pragma once

#include <time.h>

#include <cstdint>

namespace colabtrace::shim {

extern bool g_ticks_are_tsc;  // decided once at start-up (Clock::Init)

inline uint64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

inline uint64_t RealtimeNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// Always inlined: an out-of-line call per timestamp showed up in profiles of the I/O hooks.
__attribute__((always_inline)) inline uint64_t Ticks() {
#if defined(__x86_64__)
  if (__builtin_expect(g_ticks_are_tsc, 1)) return __builtin_ia32_rdtsc();
#endif
  return MonotonicNs();
}

// Decides the tick source (TSC only when CPUID reports an invariant TSC, the bit behind
// /proc/cpuinfo's constant_tsc and nonstop_tsc) and returns an estimate of ticks per
// second (0: not known yet). A fork child reuses the decision its parent made.
uint64_t InitTicks();

// The same for an image that adopted a trace across exec: the trace's header already
// says what its ticks are, and every image of the process must use the same unit.
uint64_t InitTicksFromTrace(bool ticks_are_tsc);

// Updates the trace header's ticks-per-second estimate from the time since InitTicks.
// Called with every periodic sample, so the figure sharpens as the process runs.
void RefineTickRate();

// The ticks-per-second estimate so far (0 when unknown: too early to tell).
uint64_t TickRateEstimate();

}  // namespace colabtrace::shim
