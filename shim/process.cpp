// Process lifecycle: start-up, the environment fingerprint, the resource sampler, fork,
// exec, spawn and exit. Everything the analyzer needs to say how a process ended.
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <gnu/libc-version.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/utsname.h>

#include <cstdarg>
#include <cstring>

#include "config.h"
#include "core_hooks.h"
#include "modules.h"
#include "raw.h"
#include "writer.h"

extern char** environ;

// The real vfork, for the assembly stub (vfork_x86_64.S).
extern "C" __attribute__((visibility("hidden"))) void* colabtrace_real_vfork;
void* colabtrace_real_vfork = nullptr;

namespace colabtrace::shim {

namespace {

using format::ExitHow;

char g_shim_path[512];  // this library's own path, to tell whether an exec keeps us
int g_exit_recorded = 0;
int g_finished = 0;
int g_argc = 0;
char** g_argv = nullptr;
pthread_t g_sampler;
bool g_sampler_running = false;
char g_cgroup_dir[512];  // e.g. /sys/fs/cgroup/<path> (v2) or .../memory/<path> (v1)
bool g_cgroup_v2 = false;

uint64_t Now() { return Ticks(); }

// ---- small string helpers (no allocation) ----------------------------------------------

struct PathBuf {
  char s[1200];
  size_t n = 0;
  PathBuf& Add(const char* t) {
    while (*t && n + 1 < sizeof(s)) s[n++] = *t++;
    s[n] = '\0';
    return *this;
  }
  PathBuf& AddNum(uint64_t v) {
    char d[24];
    int k = 0;
    do d[k++] = static_cast<char>('0' + v % 10); while ((v /= 10) != 0);
    while (k > 0 && n + 1 < sizeof(s)) s[n++] = d[--k];
    s[n] = '\0';
    return *this;
  }
};

uint64_t ParseU64(const char* s) {
  uint64_t v = 0;
  while (*s == ' ' || *s == '\t') ++s;
  while (*s >= '0' && *s <= '9') v = v * 10 + static_cast<uint64_t>(*s++ - '0');
  return v;
}

// Returns the value after "key" on the line that starts with it, or nullptr.
const char* FindLine(const char* text, const char* key) {
  const size_t k = std::strlen(key);
  for (const char* p = text; p && *p;) {
    if (std::strncmp(p, key, k) == 0) return p + k;
    p = std::strchr(p, '\n');
    if (p) ++p;
  }
  return nullptr;
}

void EmitHostInfo(const char* key, const char* value) {
  format::HostInfo r;
  r.ts = Now();
  r.key = InternCString(key);
  r.value = InternCString(value);
  Emit(r);
}

void EmitHostNum(const char* key, uint64_t value) {
  format::HostNum r;
  r.ts = Now();
  r.key = InternCString(key);
  r.value = value;
  Emit(r);
}

void EmitClock() {
  format::Clock c;
  c.ts = Ticks();
  c.mono_ns = MonotonicNs();
  c.realtime_ns = RealtimeNs();
  Emit(c);
}

// ---- cgroup ------------------------------------------------------------------------------

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

// Reads a cgroup file of ours; UINT64_MAX if missing. "max" also reads as UINT64_MAX.
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

uint64_t ReadOomKillCount() {
  if (g_cgroup_dir[0] == '\0') return UINT64_MAX;
  PathBuf p;
  p.Add(g_cgroup_dir).Add(g_cgroup_v2 ? "/memory.events" : "/memory.oom_control");
  char buf[512];
  if (raw::ReadSmallFile(p.s, buf, sizeof(buf)) <= 0) return UINT64_MAX;
  const char* v = FindLine(buf, "oom_kill ");
  return v ? ParseU64(v) : UINT64_MAX;
}

// ---- the sampler ------------------------------------------------------------------------

void TakeSample() {
  format::Sample s;
  s.ts = Now();
  char buf[256];
  const long page = 4096;
  if (raw::ReadSmallFile("/proc/self/statm", buf, sizeof(buf)) > 0) {
    const char* p = buf;
    s.vm_bytes = ParseU64(p) * page;
    p = std::strchr(p, ' ');
    s.rss_bytes = p ? ParseU64(p + 1) * page : 0;
  }
  char status[4096];
  if (raw::ReadSmallFile("/proc/self/status", status, sizeof(status)) > 0) {
    if (const char* t = FindLine(status, "Threads:")) s.threads = ParseU64(t);
  }
  s.cgroup_current = ReadCgroupNumber("memory.current", "memory.usage_in_bytes");
  s.oom_kill = ReadOomKillCount();
  Emit(s);
}

void* SamplerMain(void*) {
  const uint64_t period_ns = static_cast<uint64_t>(g_config.sample_ms) * 1000000ull;
  for (uint32_t n = 0;; ++n) {
    struct timespec ts{static_cast<time_t>(period_ns / 1000000000ull),
                       static_cast<long>(period_ns % 1000000000ull)};
    raw::Syscall6(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, reinterpret_cast<long>(&ts), 0);
    if (!g_recording) continue;
    ShimScope scope;
    if (!scope.entered()) continue;
    TakeSample();
    EmitClock();  // keeps the tick-to-ns fit exact even for a process that is killed
    if (n == 0) RefineTickRate();
  }
  return nullptr;
}

void StartSampler() {
  g_sampler_running = false;
  if (g_config.sample_ms == 0) return;
  // The sampler must never take the host's signals: block all of them while creating
  // it (it inherits the mask), then restore ours.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 64 * 1024);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  if (pthread_create(&g_sampler, &attr, SamplerMain, nullptr) == 0) {
    g_sampler_running = true;
    real::pthread_setname_np.get()(g_sampler, "colabtrace");
  }
  pthread_attr_destroy(&attr);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

// ---- the fingerprint --------------------------------------------------------------------

bool LooksSecret(const char* name, size_t len) {
  static const char* const kWords[] = {"TOKEN", "SECRET", "KEY", "PASSWORD", "PASSWD",
                                       "CREDENTIAL"};
  for (const char* w : kWords) {
    const size_t wl = std::strlen(w);
    for (size_t i = 0; i + wl <= len; ++i) {
      if (strncasecmp(name + i, w, wl) == 0) return true;
    }
  }
  return false;
}

bool IsRecordedEnvName(const char* name, size_t len) {
  static const char* const kPrefixes[] = {"CUDA_", "LD_",    "PYTORCH_", "XLA_",
                                          "TF_",   "NCCL_",  "NVIDIA_",  "CUBLAS_",
                                          "CUDNN_", "COLABTRACE_", "JAX_"};
  for (const char* p : kPrefixes) {
    const size_t pl = std::strlen(p);
    if (len >= pl && std::strncmp(name, p, pl) == 0) return true;
  }
  return false;
}

void FingerprintEnvironment() {
  struct utsname u;
  if (uname(&u) == 0) {
    EmitHostInfo("hostname", u.nodename);
    EmitHostInfo("kernel", u.release);
    EmitHostInfo("kernel_version", u.version);
    EmitHostInfo("machine", u.machine);
  }
  char buf[4096];
  if (raw::ReadSmallFile("/etc/os-release", buf, sizeof(buf)) > 0) {
    if (const char* v = FindLine(buf, "PRETTY_NAME=")) {
      char name[256];
      size_t n = 0;
      for (; *v && *v != '\n' && n + 1 < sizeof(name); ++v) {
        if (*v != '"') name[n++] = *v;
      }
      name[n] = '\0';
      EmitHostInfo("os_release", name);
    }
  }
  EmitHostInfo("glibc", gnu_get_libc_version());
  // Which machine and boot this trace comes from: the analyzer reads the files a trace
  // names only when it runs on the same host (disk checks, abi.stale-library).
  static const struct { const char* key; const char* path; } kHostIds[] = {
      {"boot_id", "/proc/sys/kernel/random/boot_id"}, {"machine_id", "/etc/machine-id"}};
  for (const auto& [key, path] : kHostIds) {
    char id[64];
    const long n = raw::ReadSmallFile(path, id, sizeof(id));
    if (n <= 0) continue;
    size_t len = 0;
    while (len < static_cast<size_t>(n) && len + 1 < sizeof(id) && id[len] != '\n' && id[len] != '\0') ++len;
    id[len] = '\0';
    if (len > 0) EmitHostInfo(key, id);
  }
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) EmitHostNum("cpu_count", CPU_COUNT(&set));
  EmitHostNum("cpu_online", static_cast<uint64_t>(sysconf(_SC_NPROCESSORS_ONLN)));
  if (raw::ReadSmallFile("/proc/meminfo", buf, sizeof(buf)) > 0) {
    if (const char* v = FindLine(buf, "MemTotal:")) EmitHostNum("mem_total", ParseU64(v) * 1024);
  }
  EmitHostInfo("cgroup_version", g_cgroup_dir[0] == '\0' ? "none" : g_cgroup_v2 ? "v2" : "v1");
  EmitHostNum("cgroup_memory_max", ReadCgroupNumber("memory.max", "memory.limit_in_bytes"));
  struct statfs sf;
  if (raw::Syscall6(SYS_statfs, reinterpret_cast<long>("/dev/shm"), reinterpret_cast<long>(&sf)) ==
      0) {
    EmitHostNum("shm_size", static_cast<uint64_t>(sf.f_blocks) * sf.f_bsize);
    EmitHostNum("shm_free", static_cast<uint64_t>(sf.f_bavail) * sf.f_bsize);
  }
  EmitHostNum("page_size", static_cast<uint64_t>(sysconf(_SC_PAGESIZE)));
}

void RecordEnvVar(const char* name, size_t name_len, const char* value, format::EnvSource src) {
  if (!IsRecordedEnvName(name, name_len)) return;
  format::EnvVar r;
  r.ts = Now();
  r.name = InternString(std::string_view(name, name_len));
  r.redacted = LooksSecret(name, name_len) ? 1 : 0;
  r.value = (r.redacted || value == nullptr) ? 0 : InternCString(value);
  r.source = static_cast<uint64_t>(src);
  Emit(r);
}

void FingerprintProcess(format::ProcessOrigin origin, uint32_t parent_tid, char** envp) {
  format::ProcessStart ps;
  ps.ts = Now();
  ps.pid = static_cast<uint64_t>(g_pid);
  ps.ppid = static_cast<uint64_t>(raw::Getppid());
  ps.origin = static_cast<uint64_t>(origin);
  ps.image = g_trace.image();
  ps.parent_tid = parent_tid;
  char path[1024];
  long n = raw::Readlink("/proc/self/exe", path, sizeof(path) - 1);
  path[n > 0 ? n : 0] = '\0';
  ps.exe = InternCString(path);
  n = raw::Syscall6(SYS_getcwd, reinterpret_cast<long>(path), sizeof(path));
  if (n <= 0) path[0] = '\0';
  ps.cwd = InternCString(path);
  Emit(ps);
  for (int i = 0; g_argv != nullptr && i < g_argc && g_argv[i] != nullptr; ++i) {
    format::Argv a;
    a.ts = ps.ts;
    a.index = static_cast<uint64_t>(i);
    a.value = InternCString(g_argv[i]);
    Emit(a);
  }
  for (char** e = envp; e != nullptr && *e != nullptr; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (eq != nullptr) RecordEnvVar(*e, static_cast<size_t>(eq - *e), eq + 1, format::EnvSource::kStartup);
  }
  char comm[64];
  PathBuf cp;
  cp.Add("/proc/self/task/").AddNum(static_cast<uint64_t>(raw::Gettid())).Add("/comm");
  if (raw::ReadSmallFile(cp.s, comm, sizeof(comm)) > 0) {
    if (char* nl = std::strchr(comm, '\n')) *nl = '\0';
    format::ThreadName tn;
    tn.ts = ps.ts;
    tn.tid = static_cast<uint64_t>(raw::Gettid());
    tn.name = InternCString(comm);
    Emit(tn);
  }
}

// ---- opening the trace -----------------------------------------------------------------

void ProgramName(char* out, size_t cap) {
  const char* src = (g_argv && g_argc > 0 && g_argv[0]) ? g_argv[0] : "unknown";
  if (const char* slash = std::strrchr(src, '/')) src = slash + 1;
  size_t n = 0;
  for (; *src && n + 1 < cap && n < 48; ++src) {
    const char c = *src;
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    out[n++] = ok ? c : '_';
  }
  if (n == 0) out[n++] = '_';
  out[n] = '\0';
}

bool IsDirectory(const char* path) {
  struct stat st;
  return raw::Syscall6(SYS_newfstatat, AT_FDCWD, reinterpret_cast<long>(path),
                       reinterpret_cast<long>(&st), 0) == 0 &&
         S_ISDIR(st.st_mode);
}

bool CreateTraceFile() {
  char prog[64];
  ProgramName(prog, sizeof(prog));
  PathBuf base;
  const char* out = g_config.out;
  const size_t out_len = std::strlen(out);
  if (out_len == 0) {
    base.Add("colabtrace.");
  } else if (out[out_len - 1] == '/' || IsDirectory(out)) {
    if (out[out_len - 1] == '/') raw::Syscall6(SYS_mkdirat, AT_FDCWD, reinterpret_cast<long>(out), 0700);
    base.Add(out).Add(out[out_len - 1] == '/' ? "" : "/").Add("colabtrace.");
  } else {
    base.Add(out).Add(".");  // a file prefix
  }
  base.Add(prog).Add(".").AddNum(static_cast<uint64_t>(g_pid));
  const uint64_t tps = InitTicks();
  const uint64_t features = g_ticks_are_tsc ? uint64_t{format::kFeatureTicksAreTsc} : 0;
  for (int attempt = 0; attempt < 100; ++attempt) {
    PathBuf path = base;
    if (attempt > 0) path.Add(".").AddNum(static_cast<uint64_t>(attempt));
    path.Add(".ctrace");
    if (g_trace.Create(path.s, static_cast<uint32_t>(g_pid), features, tps, Ticks(),
                       MonotonicNs(), RealtimeNs())) {
      return true;
    }
    // Create fails without following links; if nothing is at the path, the directory
    // is unusable and we give up, else the name is taken and we try the next suffix.
    struct stat st;
    if (raw::Syscall6(SYS_newfstatat, AT_FDCWD, reinterpret_cast<long>(path.s),
                      reinterpret_cast<long>(&st), AT_SYMLINK_NOFOLLOW) != 0) {
      PathBuf msg;
      msg.Add("cannot create trace file ").Add(path.s).Add("; not tracing this process");
      Say(msg.s, false);
      return false;
    }
  }
  return false;
}

void StartModules(StartKind kind) {
  SyncModuleMap();
  if (IoModuleStart) IoModuleStart(kind);
  if (LibsModuleStart) LibsModuleStart(kind);
  if (GpuModuleStart) GpuModuleStart(kind);
  if (CuptiModuleStart) CuptiModuleStart(kind);
}

// Opens (or, after exec, adopts) the trace and writes the start records.
void BeginTrace(format::ProcessOrigin origin, uint32_t parent_tid, char** envp) {
  g_recording = false;
  const int inherited = origin == format::ProcessOrigin::kInitial
                            ? TraceFile::FindInheritedTrace(static_cast<uint32_t>(g_pid))
                            : -1;
  if (inherited >= 0 && g_trace.Adopt(inherited, static_cast<uint32_t>(g_pid))) {
    origin = format::ProcessOrigin::kExec;
    InitTicks();
  } else if (!CreateTraceFile()) {
    return;
  }
  g_recording = true;
  ShimScope scope;
  EmitClock();
  FingerprintProcess(origin, parent_tid, envp);
  if (origin != format::ProcessOrigin::kExec) FingerprintEnvironment();
  NoteConfigErrors();
  TakeSample();
  RefineTickRate();
  StartModules(origin == format::ProcessOrigin::kForkChild ? StartKind::kForkChild
               : origin == format::ProcessOrigin::kExec    ? StartKind::kExecAdopted
                                                           : StartKind::kProcessStart);
}

void AfterForkInChild() {
  const int parent_tid = static_cast<int>(t_thread.tid);
  g_pid = raw::Getpid();
  if (!g_trace.is_open()) return;
  g_recording = false;
  g_trace.AbandonInChild();
  ResetInterning();
  __atomic_add_fetch(&g_generation, 1, __ATOMIC_ACQ_REL);
  t_thread.chunk = t_thread.pos = t_thread.end = nullptr;
  t_thread.vfork_pending = 0;
  g_exit_recorded = 0;
  g_finished = 0;
  BeginTrace(format::ProcessOrigin::kForkChild, static_cast<uint32_t>(parent_tid), environ);
  StartSampler();
}

// ts0: when fork was called. The record carries the call's start, like every record,
// so the child's trace (which starts inside fork) never begins before its fork record.
void RecordFork(pid_t r, format::ForkHow how, uint64_t ts0) {
  if (r == 0 || !Recording()) return;
  ShimScope scope;
  if (!scope.entered()) return;
  format::Fork f;
  f.ts = ts0;
  f.child_pid = r > 0 ? r : -static_cast<int64_t>(errno);
  f.how = static_cast<uint64_t>(how);
  Emit(f);
}

// ---- exec ---------------------------------------------------------------------------

// True if envp still preloads this library, so the next image will adopt the trace.
bool EnvKeepsShim(char* const* envp) {
  const char* self = std::strrchr(g_shim_path, '/');
  self = self ? self + 1 : g_shim_path;
  if (*self == '\0') return false;
  for (char* const* e = envp; e != nullptr && *e != nullptr; ++e) {
    if (std::strncmp(*e, "LD_PRELOAD=", 11) == 0) return std::strstr(*e + 11, self) != nullptr;
  }
  return false;
}

enum class ExecApi : uint8_t { kExecve, kExecv, kExecvp, kExecvpe, kExecl, kExeclp, kExecle,
                               kFexecve, kExecveat };

// Runs do_exec() with the trace handed over to the next image; records the failure if
// the exec returns.
template <class F> int TracedExec(const char* path, ExecApi api, char* const* envp, F&& do_exec) {
  if (!Recording()) return do_exec();
  const bool handoff = EnvKeepsShim(envp);
  {
    ShimScope scope;
    format::ExecStart r;
    r.ts = Now();
    r.path = InternCString(path);
    r.api = static_cast<uint64_t>(api);
    Emit(r);
    TakeSample();
  }
  if (handoff) g_trace.PrepareExecHandoff();
  const int ret = do_exec();
  const int err = errno;
  if (handoff) g_trace.UndoExecHandoff();
  {
    ShimScope scope;
    format::ExecFailed r;
    r.ts = Now();
    r.path = InternCString(path);
    r.err = static_cast<uint64_t>(err);
    Emit(r);
  }
  errno = err;
  return ret;
}

// Collects execl-style variadic arguments into argv (NULL-terminated).
constexpr int kMaxExeclArgs = 4096;

}  // namespace

// ---- module map ---------------------------------------------------------------------------

namespace {
constexpr int kMaxModules = 4096;
uint64_t g_module_bases[kMaxModules];
bool g_module_seen[kMaxModules];  // present in the current dl_iterate_phdr walk
int g_module_count = 0;
unsigned long long g_seen_adds = ~0ull, g_seen_subs = ~0ull;

int EmitNewModule(struct dl_phdr_info* info, size_t size, void*) {
  const uint64_t base = info->dlpi_addr;
  for (int i = 0; i < g_module_count; ++i) {
    if (g_module_bases[i] == base) {
      g_module_seen[i] = true;
      return 0;
    }
  }
  if (g_module_count < kMaxModules) g_module_seen[g_module_count] = true;
  if (g_module_count < kMaxModules) g_module_bases[g_module_count++] = base;
  format::Module m;
  m.ts = Now();
  m.base = base;
  char exe[1024];
  const char* name = info->dlpi_name;
  if (name == nullptr || name[0] == '\0') {
    const long n = raw::Readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    exe[n > 0 ? n : 0] = '\0';
    name = exe;
  }
  m.path = InternCString(name);
  uint64_t end = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const auto& ph = info->dlpi_phdr[i];
    if (ph.p_type == PT_LOAD && ph.p_vaddr + ph.p_memsz > end) end = ph.p_vaddr + ph.p_memsz;
    if (ph.p_type == PT_NOTE && size >= offsetof(struct dl_phdr_info, dlpi_adds)) {
      const uint8_t* p = reinterpret_cast<const uint8_t*>(base + ph.p_vaddr);
      const uint8_t* e = p + ph.p_memsz;
      while (p + 12 <= e) {
        uint32_t namesz, descsz, type;
        std::memcpy(&namesz, p, 4);
        std::memcpy(&descsz, p + 4, 4);
        std::memcpy(&type, p + 8, 4);
        const uint8_t* desc = p + 12 + ((namesz + 3) & ~3u);
        if (desc + descsz > e) break;
        if (type == 3 /* NT_GNU_BUILD_ID */ && namesz == 4 && std::memcmp(p + 12, "GNU", 4) == 0) {
          m.build_id = format::Bytes{desc, descsz};
        }
        p = desc + ((descsz + 3) & ~3u);
      }
    }
  }
  m.size = end;
  Emit(m);
  return 0;
}
}  // namespace

void ReadLoaderCounters(unsigned long long* adds, unsigned long long* subs) {
  struct Counters {
    unsigned long long adds = 0, subs = 0;
  } c;
  dl_iterate_phdr(
      [](struct dl_phdr_info* info, size_t size, void* data) {
        if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
          auto* cc = static_cast<Counters*>(data);
          cc->adds = info->dlpi_adds;
          cc->subs = info->dlpi_subs;
        }
        return 1;
      },
      &c);
  *adds = c.adds;
  *subs = c.subs;
}

void SyncModuleMap() {
  struct {
    unsigned long long adds = 0, subs = 0;
  } c;
  ReadLoaderCounters(&c.adds, &c.subs);
  if (c.adds == g_seen_adds && c.subs == g_seen_subs) return;
  const bool unloaded = c.subs != g_seen_subs && g_seen_subs != ~0ull;
  g_seen_adds = c.adds;
  g_seen_subs = c.subs;
  for (int i = 0; i < g_module_count; ++i) g_module_seen[i] = false;
  dl_iterate_phdr(EmitNewModule, nullptr);
  if (!unloaded) return;
  // Forget bases that are gone, keeping the array compact.
  int kept = 0;
  for (int i = 0; i < g_module_count; ++i) {
    if (!g_module_seen[i]) continue;
    g_module_bases[kept] = g_module_bases[i];
    g_module_seen[kept++] = true;
  }
  g_module_count = kept;
}

void RecordExit(int64_t code, ExitHow how, bool finish) {
  // A vfork child (e.g. _exit(127) after a failed exec) shares its parent's memory: it
  // must neither write the parent's exit record nor close the parent's trace.
  if (InVforkChild()) return;
  if (g_recording && __atomic_exchange_n(&g_exit_recorded, 1, __ATOMIC_ACQ_REL) == 0) {
    ShimScope scope;
    if (GpuModuleFinish) GpuModuleFinish();
    if (LibsModuleFinish) LibsModuleFinish();
    if (CuptiModuleFinish) CuptiModuleFinish();
    TakeSample();
    format::Exit e;
    e.ts = Now();
    e.code = code;
    e.how = static_cast<uint64_t>(how);
    Emit(e);
    EmitClock();
  }
  if (finish && __atomic_exchange_n(&g_finished, 1, __ATOMIC_ACQ_REL) == 0) g_trace.Close();
}

// ---- start and end ------------------------------------------------------------------

namespace {

__attribute__((constructor(101))) void ShimInit(int argc, char** argv, char** envp) {
  g_pid = raw::Getpid();
  g_argc = argc;
  g_argv = argv;
  LoadConfig();
  if (g_config.disable) return;
  Dl_info self;
  if (dladdr(reinterpret_cast<void*>(&ShimInit), &self) != 0 && self.dli_fname != nullptr) {
    std::strncpy(g_shim_path, self.dli_fname, sizeof(g_shim_path) - 1);
  }
  FindCgroup();
  // environ, not the constructor's envp: a library whose constructor ran before ours
  // may have called setenv, and the job sees the environment as it is now.
  BeginTrace(format::ProcessOrigin::kInitial, 0, environ != nullptr ? environ : envp);
  if (!g_recording) return;
  COLABTRACE_RESOLVE_REAL_FNS(COLABTRACE_CORE_HOOKS)
  colabtrace_real_vfork = ResolveNext("vfork");
  pthread_atfork(nullptr, nullptr, AfterForkInChild);
  InstallFatalSignalHandlers();
  StartSampler();
}

__attribute__((destructor(101))) void ShimFini() {
  // exit() and a return from main recorded the code already; this only closes.
  RecordExit(-1, ExitHow::kDestructor, /*finish=*/true);
}

int (*g_real_main)(int, char**, char**) = nullptr;

int MainWrapper(int argc, char** argv, char** envp) {
  const int r = g_real_main(argc, argv, envp);
  RecordExit(r, ExitHow::kReturnFromMain, /*finish=*/false);
  return r;
}

}  // namespace
}  // namespace colabtrace::shim

// ---- hooks -------------------------------------------------------------------------------
using namespace colabtrace::shim;  // NOLINT: the hooks below are thin entry points
using colabtrace::format::ExitHow;

// Hook entry points: default visibility; the version script limits exports to hooks.def.
#pragma GCC visibility push(default)
extern "C" {

int __libc_start_main(int (*main)(int, char**, char**), int argc, char** argv, void (*init)(void),
                      void (*fini)(void), void (*rtld_fini)(void), void* stack_end) {
  g_real_main = main;
  return real::__libc_start_main.get()(MainWrapper, argc, argv, init, fini, rtld_fini, stack_end);
}

void exit(int code) {
  RecordExit(code, ExitHow::kExit, /*finish=*/false);
  real::exit.get()(code);
  __builtin_unreachable();
}

void _exit(int code) {
  RecordExit(code, ExitHow::kUnderscoreExit, /*finish=*/true);
  real::_exit.get()(code);
  __builtin_unreachable();
}

void _Exit(int code) {
  RecordExit(code, ExitHow::kUnderscoreExit, /*finish=*/true);
  real::_Exit.get()(code);
  __builtin_unreachable();
}

void quick_exit(int code) {
  RecordExit(code, ExitHow::kQuickExit, /*finish=*/true);
  real::quick_exit.get()(code);
  __builtin_unreachable();
}

pid_t fork(void) {
  const uint64_t t0 = Ticks();
  const pid_t r = real::fork.get()();  // the child re-opens its trace in the atfork handler
  RecordFork(r, colabtrace::format::ForkHow::kFork, t0);
  return r;
}

pid_t _Fork(void) {
  const uint64_t t0 = Ticks();
  const pid_t r = real::_Fork.get()();  // _Fork runs no atfork handlers
  if (r == 0) {
    AfterForkInChild();
  } else {
    RecordFork(r, colabtrace::format::ForkHow::kFork, t0);
  }
  return r;
}

int execve(const char* path, char* const argv[], char* const envp[]) {
  return TracedExec(path, ExecApi::kExecve, envp,
                    [&] { return real::execve.get()(path, argv, envp); });
}

int execv(const char* path, char* const argv[]) {
  return TracedExec(path, ExecApi::kExecv, environ, [&] { return real::execv.get()(path, argv); });
}

int execvp(const char* file, char* const argv[]) {
  return TracedExec(file, ExecApi::kExecvp, environ,
                    [&] { return real::execvp.get()(file, argv); });
}

int execvpe(const char* file, char* const argv[], char* const envp[]) {
  return TracedExec(file, ExecApi::kExecvpe, envp,
                    [&] { return real::execvpe.get()(file, argv, envp); });
}

int fexecve(int fd, char* const argv[], char* const envp[]) {
  return TracedExec("(fexecve)", ExecApi::kFexecve, envp,
                    [&] { return real::fexecve.get()(fd, argv, envp); });
}

int execveat(int dirfd, const char* path, char* const argv[], char* const envp[], int flags) {
  return TracedExec(path, ExecApi::kExecveat, envp,
                    [&] { return real::execveat.get()(dirfd, path, argv, envp, flags); });
}

// execl-family: gather the arguments, then exec through the real v-variant.
#define CT_GATHER_EXECL_ARGS(first, ap, argv, extra)                 \
  char* argv[kMaxExeclArgs + 1];                                     \
  int argc_ = 0;                                                     \
  argv[argc_++] = const_cast<char*>(first);                          \
  while (argv[argc_ - 1] != nullptr && argc_ < kMaxExeclArgs)        \
    argv[argc_++] = va_arg(ap, char*);                               \
  argv[argc_] = nullptr;                                             \
  extra;                                                             \
  va_end(ap)

int execl(const char* path, const char* arg, ...) {
  va_list ap;
  va_start(ap, arg);
  CT_GATHER_EXECL_ARGS(arg, ap, argv, (void)0);
  return TracedExec(path, ExecApi::kExecl, environ, [&] { return real::execv.get()(path, argv); });
}

int execlp(const char* file, const char* arg, ...) {
  va_list ap;
  va_start(ap, arg);
  CT_GATHER_EXECL_ARGS(arg, ap, argv, (void)0);
  return TracedExec(file, ExecApi::kExeclp, environ,
                    [&] { return real::execvp.get()(file, argv); });
}

int execle(const char* path, const char* arg, ...) {
  va_list ap;
  va_start(ap, arg);
  char** envp = nullptr;
  CT_GATHER_EXECL_ARGS(arg, ap, argv, envp = va_arg(ap, char**));
  return TracedExec(path, ExecApi::kExecle, envp,
                    [&] { return real::execve.get()(path, argv, envp); });
}

int posix_spawn(pid_t* pid, const char* path, const posix_spawn_file_actions_t* actions,
                const posix_spawnattr_t* attr, char* const argv[], char* const envp[]) {
  const int r = real::posix_spawn.get()(pid, path, actions, attr, argv, envp);
  if (Recording()) {
    ShimScope scope;
    colabtrace::format::Spawn s;
    s.ts = Ticks();
    s.child_pid = r == 0 && pid != nullptr ? *pid : -static_cast<int64_t>(r);
    s.path = InternCString(path);
    s.api = 0;
    Emit(s);
  }
  return r;
}

int posix_spawnp(pid_t* pid, const char* file, const posix_spawn_file_actions_t* actions,
                 const posix_spawnattr_t* attr, char* const argv[], char* const envp[]) {
  const int r = real::posix_spawnp.get()(pid, file, actions, attr, argv, envp);
  if (Recording()) {
    ShimScope scope;
    colabtrace::format::Spawn s;
    s.ts = Ticks();
    s.child_pid = r == 0 && pid != nullptr ? *pid : -static_cast<int64_t>(r);
    s.path = InternCString(file);
    s.api = 1;
    Emit(s);
  }
  return r;
}

int setenv(const char* name, const char* value, int overwrite) {
  const int r = real::setenv.get()(name, value, overwrite);
  if (r == 0 && name != nullptr && Recording()) {
    ShimScope scope;
    RecordEnvVar(name, std::strlen(name), getenv(name), colabtrace::format::EnvSource::kSetenv);
  }
  return r;
}

int putenv(char* string) {
  const int r = real::putenv.get()(string);
  if (r == 0 && Recording()) {
    ShimScope scope;
    const char* eq = std::strchr(string, '=');
    if (eq != nullptr) {
      RecordEnvVar(string, static_cast<size_t>(eq - string), eq + 1,
                   colabtrace::format::EnvSource::kPutenv);
    } else {
      RecordEnvVar(string, std::strlen(string), nullptr, colabtrace::format::EnvSource::kUnsetenv);
    }
  }
  return r;
}

int unsetenv(const char* name) {
  const int r = real::unsetenv.get()(name);
  if (r == 0 && Recording()) {
    ShimScope scope;
    RecordEnvVar(name, std::strlen(name), nullptr, colabtrace::format::EnvSource::kUnsetenv);
  }
  return r;
}

int pthread_setname_np(pthread_t thread, const char* name) {
  const int r = real::pthread_setname_np.get()(thread, name);
  if (r == 0 && thread == pthread_self() && Recording()) {
    ShimScope scope;
    colabtrace::format::ThreadName tn;
    tn.ts = Ticks();
    tn.tid = static_cast<uint64_t>(raw::Gettid());
    tn.name = InternCString(name);
    Emit(tn);
  }
  return r;
}

}  // extern "C"
#pragma GCC visibility pop
