// The tick source and its rate estimate (clock.h). Kept apart from process.cpp so that
// the writer (trace_file.cpp, writer.cpp, clock.cpp) links into a unit test without the
// process hooks.
#include "clock.h"

#include <cstring>
#include <string_view>

#include "raw.h"
#include "writer.h"

namespace colabtrace::shim {

bool g_ticks_are_tsc = false;

namespace {
uint64_t g_calib_ticks = 0, g_calib_ns = 0;  // the InitTicks anchor for RefineTickRate
}  // namespace

namespace {
bool g_ticks_decided = false;  // this address space read /proc/cpuinfo already

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
  // A fork child keeps its parent's decision: same CPU flags, and no /proc read (about
  // 0.1 ms) in every forked worker.
  if (g_ticks_decided) return StartCalibration();
  bool constant = false, nonstop = false;
#if defined(__x86_64__)
  char buf[8192];
  if (raw::ReadSmallFile("/proc/cpuinfo", buf, sizeof(buf)) > 0) {
    // The first "flags" line (every CPU lists the same flags).
    const char* flags = nullptr;
    for (const char* p = buf; p != nullptr && *p != '\0';) {
      if (std::strncmp(p, "flags", 5) == 0) {
        flags = p + 5;
        break;
      }
      p = std::strchr(p, '\n');
      if (p != nullptr) ++p;
    }
    if (flags != nullptr) {
      const char* eol = std::strchr(flags, '\n');
      const size_t len = eol ? static_cast<size_t>(eol - flags) : std::strlen(flags);
      const std::string_view f(flags, len);
      constant = f.find(" constant_tsc") != std::string_view::npos;
      nonstop = f.find(" nonstop_tsc") != std::string_view::npos;
    }
  }
#endif
  g_ticks_are_tsc = constant && nonstop;
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
  if (h == nullptr || !g_ticks_are_tsc) return;
  const uint64_t tps = TickRateEstimate();
  if (tps != 0) h->ticks_per_sec_hint = tps;
}

}  // namespace colabtrace::shim
