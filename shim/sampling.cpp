#include "sampling.h"

#include <fcntl.h>
#include <sys/auxv.h>
#include <sys/stat.h>

#include <cstring>

#include "colabtrace/format/sample_tiers.h"
#include "config.h"
#include "raw.h"
#include "text.h"
#include "python/python_stack.h"
#include "writer.h"

namespace colabtrace::shim {
namespace {

char g_cgroup_dir[512];  // e.g. /sys/fs/cgroup/<path> (v2) or .../memory/<path> (v1)
bool g_cgroup_v2 = false;
uint64_t g_page_size = 0;
uint64_t g_ns_per_clock_tick = 0;  // /proc's CPU-time unit (sysconf(_SC_CLK_TCK)) in ns
uint64_t g_period_ns = 0;    // COLABTRACE_SAMPLE_MS in ns; 0: no periodic samples
uint64_t g_due_ns = 0;       // CLOCK_MONOTONIC of the next periodic sample (atomic)
void (*g_also_at_sample)(uint64_t) = nullptr;  // AlsoAtPeriodicSamples

// The thinned samples of this image (format/sample_tiers.h): written only by the thread
// that holds the periodic sample's gate, so no lock. g_thin_run is what ThinRun holds.
format::ThinTiers g_thin;
format::ThinRunHalf g_thin_run;

// A zeroed chunk of the trace stamped as tier k's thinned-sample chunk (CTTS), or null.
uint8_t* AllocThinChunk(int k) {
  uint8_t* p = g_recording ? g_trace.AllocChunk(true) : nullptr;
  if (p == nullptr) return nullptr;
  auto* ch = reinterpret_cast<format::ChunkHeader*>(p);
  ch->tid = 0;
  ch->base_ticks = Ticks();
  ch->seq = static_cast<uint32_t>(k);
  ch->flags = 0;
  ch->image = g_trace.image();
  format::ThinTiers::InitChunk(p, k);
  __atomic_store_n(&ch->magic, format::kThinChunkMagic, __ATOMIC_RELEASE);
  return p;
}

// Folds a periodic sample (and its Python position and Clock pair) into the tiers and
// the run's peaks.
void ThinPeriodicSample(const format::Sample& s, uint64_t mono_ns, uint64_t py_stack, const format::Clock& c) {
  const uint64_t tid = static_cast<uint64_t>(raw::Gettid());
  g_thin.AddSample(s.ts, mono_ns, tid, s.rss_bytes, s.vm_bytes, s.threads, s.cgroup_current,
                   s.cgroup_inactive_file, s.oom_kill, s.utime_ns, s.stime_ns, AllocThinChunk);
  format::ThinRunHalf& h = g_thin_run;
  ++h.samples;
  format::ThinNotePeak(h.peak_rss, h.peak_rss_ticks, s.rss_bytes, s.ts);
  format::ThinNotePeak(h.peak_vm, h.peak_vm_ticks, s.vm_bytes, s.ts);
  format::ThinNotePeak(h.peak_cgroup, h.peak_cgroup_ticks, s.cgroup_current, s.ts);
  format::ThinNotePeak(h.peak_threads, h.peak_threads_ticks, s.threads, s.ts);
  h.clock_ticks = c.ts;
  h.clock_mono_ns = c.mono_ns;
  h.clock_realtime_ns = c.realtime_ns;
  if (py_stack != 0) h.py_ticks = s.ts, h.py_tid = tid, h.py_stack = py_stack;
  h.base_mono_ns = g_thin.base_mono_ns;
  format::ThinPublishRun(g_thin.Run(), h);
}

// The number after `key` on a line of the cgroup's file `file` (read into buf), or
// UINT64_MAX.
uint64_t ReadCgroupKey(const char* file, const char* key, char* buf, size_t cap) {
  if (g_cgroup_dir[0] == '\0') return UINT64_MAX;
  PathBuf p;
  p.Add(g_cgroup_dir).Add("/").Add(file);
  if (raw::ReadSmallFile(p.s, buf, cap) <= 0) return UINT64_MAX;
  const char* v = FindLine(buf, key);
  return v ? ParseU64(v) : UINT64_MAX;
}

uint64_t ReadOomKillCount() {
  char buf[512];
  return ReadCgroupKey(g_cgroup_v2 ? "memory.events" : "memory.oom_control", "oom_kill ", buf, sizeof(buf));
}

// memory.stat's reclaimable page cache: inactive_file (v1: the hierarchy's
// total_inactive_file, as memory.usage_in_bytes counts the hierarchy). Not inlined: its
// 4 KiB buffer stays off the stack of the start and exit samples, which may run on a
// program's small alternate signal stack.
__attribute__((noinline)) uint64_t ReadInactiveFile() {
  char buf[4096];
  return ReadCgroupKey("memory.stat", g_cgroup_v2 ? "inactive_file " : "total_inactive_file ", buf,
                       sizeof(buf));
}

// Ticks until the next sample is due, from the tick rate seen so far. An estimate that
// is too low only costs an early look at the clock (see SampleIfDue).
uint64_t TicksUntil(uint64_t ns_from_now) {
  if (!g_ticks_are_tsc) return ns_from_now;
  const uint64_t tps = TickRateEstimate();
  if (tps == 0) return ns_from_now;  // TSCs tick at least once a nanosecond
  return static_cast<uint64_t>(static_cast<long double>(ns_from_now) * tps / 1e9L);
}

// Called by Emit (writer.h) for the first record past the due time, inside the
// caller's ShimScope. Claims the sample with a CAS so only one thread takes it.
void SampleIfDue(uint64_t now_ticks) {
  uint64_t gate = __atomic_load_n(&g_sample_due_ticks, __ATOMIC_ACQUIRE);
  if (now_ticks < gate || gate == UINT64_MAX) return;
  // Park the gate while we work: records emitted by the sample itself do not recurse.
  if (!__atomic_compare_exchange_n(&g_sample_due_ticks, &gate, UINT64_MAX, false,
                                   __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    return;
  }
  const uint64_t now_ns = MonotonicNs();
  const uint64_t due = __atomic_load_n(&g_due_ns, __ATOMIC_ACQUIRE);
  if (now_ns >= due) {
    // The sample reads /proc and the cgroup with KiB-sized buffers: never on a signal
    // handler's alternate stack, which may be small (Rust's stack-overflow report writes
    // on 8 KiB, and a loaded machine made a sample due there: SIGSEGV). The gate stays
    // open, so the next record off that stack takes it.
    if (raw::OnAlternateSignalStack()) {
      __atomic_store_n(&g_sample_due_ticks, gate, __ATOMIC_RELEASE);
      return;
    }
    // The periodic sample, its Python position and its Clock go into the window (the
    // thread's event chunk): their summary stays in the thinned-sample tiers.
    const format::Sample s = ReadSample(SampleKind::kPeriodic);
    EmitIntoWindow(s);
    const uint64_t py_stack = python::EmitPythonSample(s.ts, true);
    const format::Clock c = ReadClock();  // keeps the tick-to-ns fit exact even for a process that is killed
    EmitIntoWindow(c);
    ThinPeriodicSample(s, now_ns, py_stack, c);
    if (void (*also)(uint64_t) = __atomic_load_n(&g_also_at_sample, __ATOMIC_ACQUIRE); also != nullptr) {
      also(s.ts);
    }
    RefineTickRate();
    __atomic_store_n(&g_due_ns, now_ns + g_period_ns, __ATOMIC_RELEASE);
  }
  const uint64_t next_ns = __atomic_load_n(&g_due_ns, __ATOMIC_ACQUIRE);
  __atomic_store_n(&g_sample_due_ticks, now_ticks + TicksUntil(next_ns - now_ns < g_period_ns
                                                                   ? next_ns - now_ns
                                                                   : g_period_ns),
                   __ATOMIC_RELEASE);
}

}  // namespace

void FindCgroup() {
  g_cgroup_dir[0] = '\0';
  char buf[2048];
  if (raw::ReadSmallFile("/proc/self/cgroup", buf, sizeof(buf)) <= 0) return;
  // v2: "0::/path". v1: "N:memory:/path" (controllers may be comma-joined).
  const char* v2 = nullptr;
  const char* v1 = nullptr;
  for (char* line = buf; line && *line;) {
    char* next = std::strchr(line, '\n');
    if (next) *next++ = '\0';
    char* c1 = std::strchr(line, ':');
    char* c2 = c1 ? std::strchr(c1 + 1, ':') : nullptr;
    if (c1 && c2) {
      *c2 = '\0';
      const char* controllers = c1 + 1;
      if (*controllers == '\0') v2 = c2 + 1;
      for (const char* m = std::strstr(controllers, "memory"); m; m = nullptr) {
        if ((m == controllers || m[-1] == ',') && (m[6] == '\0' || m[6] == ',')) v1 = c2 + 1;
      }
    }
    line = next;
  }
  PathBuf p;
  struct stat st;
  if (v1 != nullptr) {
    p.Add("/sys/fs/cgroup/memory").Add(std::strcmp(v1, "/") == 0 ? "" : v1);
    if (raw::Syscall6(SYS_newfstatat, AT_FDCWD, reinterpret_cast<long>(p.s),
                      reinterpret_cast<long>(&st), 0) != 0) {
      p = PathBuf{};
      p.Add("/sys/fs/cgroup/memory");  // namespaced: our cgroup is the root we see
    }
    g_cgroup_v2 = false;
  } else if (v2 != nullptr) {
    p.Add("/sys/fs/cgroup").Add(std::strcmp(v2, "/") == 0 ? "" : v2);
    g_cgroup_v2 = true;
  } else {
    return;
  }
  std::memcpy(g_cgroup_dir, p.s, p.n + 1);
}

const char* CgroupVersionName() {
  return g_cgroup_dir[0] == '\0' ? "none" : g_cgroup_v2 ? "v2" : "v1";
}

uint64_t ReadCgroupNumber(const char* v2_name, const char* v1_name) {
  if (g_cgroup_dir[0] == '\0') return UINT64_MAX;
  PathBuf p;
  p.Add(g_cgroup_dir).Add("/").Add(g_cgroup_v2 ? v2_name : v1_name);
  char buf[64];
  if (raw::ReadSmallFile(p.s, buf, sizeof(buf)) <= 0 || buf[0] < '0' || buf[0] > '9') {
    return UINT64_MAX;
  }
  // cgroup v1 spells "no limit" as a page-rounded LONG_MAX.
  const uint64_t v = ParseU64(buf);
  return v >= (1ull << 62) ? UINT64_MAX : v;
}

format::Clock ReadClock() {
  format::Clock c;
  c.ts = Ticks();
  c.mono_ns = MonotonicNs();
  c.realtime_ns = RealtimeNs();
  return c;
}

void EmitClock() { Emit(ReadClock()); }

format::Sample ReadSample(SampleKind kind) {
  if (g_page_size == 0) {
    g_page_size = getauxval(AT_PAGESZ);
    if (g_page_size == 0) g_page_size = 4096;
  }
  if (g_ns_per_clock_tick == 0) {
    // What sysconf(_SC_CLK_TCK) answers, from the same auxiliary vector entry.
    const uint64_t hz = getauxval(AT_CLKTCK);
    g_ns_per_clock_tick = 1000000000ull / (hz != 0 && hz <= 1000000000ull ? hz : 100);
  }
  format::Sample s;
  s.ts = Ticks();
  // One read of /proc/self/stat gives what statm (size, resident) and status (Threads:)
  // gave in two, at half the kernel's formatting cost: "pid (comm) state ppid ...", the
  // fields counted from the last ')' since comm may hold spaces and parentheses.
  // Fields (proc(5), from 1): 14 utime and 15 stime in clock ticks, 20 num_threads,
  // 23 vsize in bytes, 24 rss in pages.
  char stat[1024];
  if (raw::ReadSmallFile("/proc/self/stat", stat, sizeof(stat)) > 0) {
    if (const char* p = std::strrchr(stat, ')')) {
      for (int field = 3; *p != '\0' && field <= 24; ++field) {
        while (*p != '\0' && *p != ' ') ++p;  // to the blank before this field
        if (*p == ' ') ++p;
        if (field == 14) s.utime_ns = ParseU64(p) * g_ns_per_clock_tick;
        if (field == 15) s.stime_ns = ParseU64(p) * g_ns_per_clock_tick;
        if (field == 20) s.threads = ParseU64(p);
        if (field == 23) s.vm_bytes = ParseU64(p);
        if (field == 24) s.rss_bytes = ParseU64(p) * g_page_size;
      }
    }
  }
  s.cgroup_current = ReadCgroupNumber("memory.current", "memory.usage_in_bytes");
  s.oom_kill = ReadOomKillCount();
  s.cgroup_inactive_file = kind == SampleKind::kPeriodic ? ReadInactiveFile() : UINT64_MAX;
  return s;
}

void TakeSample() {
  const format::Sample s = ReadSample(SampleKind::kEvent);
  Emit(s);
  python::EmitPythonSample(s.ts, false);  // the sampling thread's Python position (shim/python)
}

void AlsoAtPeriodicSamples(void (*fn)(uint64_t ticks)) { __atomic_store_n(&g_also_at_sample, fn, __ATOMIC_RELEASE); }

void DisarmPeriodicSamples() {
  // A fork child's copy of its parent's gate and tiers: the tiers point into the parent's
  // trace, which the child may still have mapped.
  __atomic_store_n(&g_sample_due_ticks, UINT64_MAX, __ATOMIC_RELEASE);
  g_thin = format::ThinTiers{};
  g_thin_run = format::ThinRunHalf{};
}

void ArmPeriodicSamples() {
  // A new trace (start, fork child) or a new image: tiers of its own, taken at the first
  // periodic sample.
  DisarmPeriodicSamples();
  g_thin.base_mono_ns = MonotonicNs();
  g_sample_hook = SampleIfDue;
  g_period_ns = static_cast<uint64_t>(g_config.sample_ms) * 1000000ull;
  if (g_period_ns == 0) {
    __atomic_store_n(&g_sample_due_ticks, UINT64_MAX, __ATOMIC_RELEASE);
    return;
  }
  __atomic_store_n(&g_due_ns, MonotonicNs() + g_period_ns, __ATOMIC_RELEASE);
  __atomic_store_n(&g_sample_due_ticks, Ticks() + TicksUntil(g_period_ns), __ATOMIC_RELEASE);
}

}  // namespace colabtrace::shim
