// The fingerprint: the host (kernel, OS, CPUs, memory, cgroup limits, /dev/shm) once
// per process, and the process itself (pid, exe, cwd, argv, the recorded environment
// variables, thread name) at every start, fork and exec; plus the environment hooks
// (setenv, putenv, unsetenv) and thread names (pthread_setname_np).
#include <gnu/libc-version.h>
#include <pthread.h>
#include <sched.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysinfo.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cstring>

#include "config.h"
#include "core_hooks.h"
#include "lifecycle.h"
#include "raw.h"
#include "sampling.h"
#include "text.h"
#include "writer.h"

namespace colabtrace::shim {
namespace {

uint64_t Now() { return Ticks(); }

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
                                          "CUDNN_", "COLABTRACE_", "JAX_",
                                          // torchrun's run id and restart count, Open MPI's ranks
                                          "TORCHELASTIC_", "OMPI_COMM_WORLD_"};
  for (const char* p : kPrefixes) {
    const size_t pl = std::strlen(p);
    if (len >= pl && std::strncmp(name, p, pl) == 0) return true;
  }
  // A launcher's identity of the process (the analyzer's job model, analyzer/dist/):
  // torchrun's, then Slurm's and PMI's where torchrun's are absent.
  static const char* const kNames[] = {
      "RANK",          "LOCAL_RANK",     "WORLD_SIZE",    "LOCAL_WORLD_SIZE", "GROUP_RANK",
      "GROUP_WORLD_SIZE", "ROLE_RANK",   "ROLE_WORLD_SIZE", "MASTER_ADDR",    "MASTER_PORT",
      "SLURM_PROCID",  "SLURM_LOCALID",  "SLURM_NTASKS",  "SLURM_NODEID",     "SLURM_JOB_ID",
      "SLURM_STEP_ID", "PMI_RANK",       "PMI_SIZE"};
  for (const char* n : kNames) {
    if (std::strlen(n) == len && std::strncmp(name, n, len) == 0) return true;
  }
  return false;
}

char g_self_exe[1024];

// ---- the CPUs and GPUs the job may use (under COLABTRACE_HOST_ROOT) ------------------------

PathBuf HostPath(const char* path) {
  PathBuf p;
  p.Add(g_config.host_root).Add(path);
  return p;
}

// The number a cgroup file starts with, in *out; false for "max", a negative number
// ("-1": v1's "no limit") or anything unreadable.
bool ReadCgroupLimit(const PathBuf& path, uint64_t* out) {
  char buf[64];
  if (raw::ReadSmallFile(path.s, buf, sizeof(buf)) <= 0 || buf[0] < '0' || buf[0] > '9') return false;
  *out = ParseU64(buf);
  return true;
}

// The CPU limit of one cgroup folder (`dir`, a path under the host root) in thousandths
// of a CPU, or UINT64_MAX when it sets none. v2: cpu.max "QUOTA PERIOD" ("max PERIOD":
// none); v1: cpu.cfs_quota_us (-1: none) over cpu.cfs_period_us.
uint64_t CgroupDirCpuLimit(const PathBuf& dir, bool v2) {
  uint64_t quota = 0, period = 0;
  if (v2) {
    PathBuf f = dir;
    f.Add("/cpu.max");
    char buf[64];
    if (raw::ReadSmallFile(f.s, buf, sizeof(buf)) <= 0 || buf[0] < '0' || buf[0] > '9') return UINT64_MAX;
    quota = ParseU64(buf);
    const char* blank = std::strchr(buf, ' ');
    period = blank != nullptr ? ParseU64(blank) : 0;
  } else {
    PathBuf q = dir, p = dir;
    q.Add("/cpu.cfs_quota_us");
    p.Add("/cpu.cfs_period_us");
    if (!ReadCgroupLimit(q, &quota) || !ReadCgroupLimit(p, &period)) return UINT64_MAX;
  }
  if (quota == 0 || period == 0) return UINT64_MAX;
  return quota * 1000 / period;
}

// The tightest CPU limit on this process's cgroup and its ancestors, in thousandths of a
// CPU (UINT64_MAX: none found). The cgroup comes from <root>/proc/self/cgroup: v2's
// "0::/path", else v1's line whose controllers include "cpu". Inside a cgroup namespace the
// path may not exist under /sys/fs/cgroup; its ancestors (at last the mount's root, which
// is then the namespace's cgroup) are read all the same.
uint64_t CgroupCpuLimitMillicpus() {
  char buf[2048];
  if (raw::ReadSmallFile(HostPath("/proc/self/cgroup").s, buf, sizeof(buf)) <= 0) return UINT64_MAX;
  const char* v2 = nullptr;
  const char* v1 = nullptr;
  for (char* line = buf; line != nullptr && *line != '\0';) {
    char* next = std::strchr(line, '\n');
    if (next != nullptr) *next++ = '\0';
    char* c1 = std::strchr(line, ':');
    char* c2 = c1 != nullptr ? std::strchr(c1 + 1, ':') : nullptr;
    if (c2 != nullptr) {
      *c2 = '\0';
      const char* controllers = c1 + 1;
      if (*controllers == '\0') v2 = c2 + 1;
      for (const char* c = controllers; *c != '\0';) {  // the comma-separated names
        const char* end = std::strchr(c, ',');
        const size_t len = end != nullptr ? static_cast<size_t>(end - c) : std::strlen(c);
        if (len == 3 && std::strncmp(c, "cpu", 3) == 0) v1 = c2 + 1;
        if (end == nullptr) break;
        c = end + 1;
      }
    }
    line = next;
  }
  const bool is_v2 = v1 == nullptr;
  const char* path = is_v2 ? v2 : v1;
  if (path == nullptr) return UINT64_MAX;
  // v1's cpu controller is mounted as cpu,cpuacct (with a cpu link on most systems): the
  // first of those that exists.
  static constexpr const char* kMounts[] = {"/sys/fs/cgroup", "/sys/fs/cgroup/cpu,cpuacct",
                                            "/sys/fs/cgroup/cpu"};
  uint64_t best = UINT64_MAX;
  for (int m = is_v2 ? 0 : 1; m < (is_v2 ? 1 : 3); ++m) {
    PathBuf dir = HostPath(kMounts[m]);
    struct stat st;
    if (raw::Syscall6(SYS_newfstatat, AT_FDCWD, reinterpret_cast<long>(dir.s), reinterpret_cast<long>(&st), 0) != 0) {
      continue;
    }
    const size_t base = dir.n;
    dir.Add(std::strcmp(path, "/") == 0 ? "" : path);
    for (int level = 0; level < 32; ++level) {  // the cgroup, then each ancestor
      const uint64_t v = CgroupDirCpuLimit(dir, is_v2);
      if (v < best) best = v;
      if (dir.n <= base) break;
      while (dir.n > base && dir.s[dir.n - 1] != '/') --dir.n;
      if (dir.n > base) --dir.n;  // the '/' before the last name
      dir.s[dir.n] = '\0';
    }
    break;
  }
  return best;
}

// The NVIDIA GPUs the driver lists (<root>/proc/driver/nvidia/gpus/<bus id>/information,
// its "Model:" line), in bus order, joined by ", ": a HostInfo nvidia_gpus when there is
// one. And the GPU device nodes (<root>/dev/nvidia0, nvidia1...): a HostNum
// nvidia_dev_nodes, when /dev can be read.
__attribute__((noinline)) void FingerprintNvidia() {
  constexpr int kMaxGpus = 32;
  char bus[kMaxGpus][24];
  int gpus = 0;
  const PathBuf gpu_dir = HostPath("/proc/driver/nvidia/gpus");
  raw::ForEachDirEntry(gpu_dir.s, [&](const char* name) {
    if (name[0] == '.' || gpus == kMaxGpus || std::strlen(name) >= sizeof(bus[0])) return;
    std::strcpy(bus[gpus++], name);
  });
  for (int i = 1; i < gpus; ++i) {  // insertion sort by bus id: the order nvidia-smi uses
    for (int j = i; j > 0 && std::strcmp(bus[j - 1], bus[j]) > 0; --j) {
      char t[sizeof(bus[0])];
      std::strcpy(t, bus[j]);
      std::strcpy(bus[j], bus[j - 1]);
      std::strcpy(bus[j - 1], t);
    }
  }
  char models[1024];
  size_t len = 0;
  for (int i = 0; i < gpus; ++i) {
    PathBuf info = gpu_dir;
    info.Add("/").Add(bus[i]).Add("/information");
    char buf[2048];
    if (raw::ReadSmallFile(info.s, buf, sizeof(buf)) <= 0) continue;
    const char* v = FindLine(buf, "Model:");
    if (v == nullptr) continue;
    while (*v == ' ' || *v == '\t') ++v;
    const char* end = v;
    while (*end != '\0' && *end != '\n') ++end;
    while (end > v && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r')) --end;
    if (end == v) continue;
    if (len > 0 && len + 2 < sizeof(models)) {
      models[len++] = ',';
      models[len++] = ' ';
    }
    for (; v < end && len + 1 < sizeof(models); ++v) models[len++] = *v;
  }
  models[len] = '\0';
  if (len > 0) EmitHostInfo("nvidia_gpus", models);
  uint64_t nodes = 0;
  if (raw::ForEachDirEntry(HostPath("/dev").s, [&](const char* name) {
        if (std::strncmp(name, "nvidia", 6) == 0 && name[6] >= '0' && name[6] <= '9') ++nodes;
      })) {
    EmitHostNum("nvidia_dev_nodes", nodes);
  }
}

}  // namespace

const char* SelfExePath() { return g_self_exe; }

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
  // /proc/meminfo's MemTotal, from the same kernel counter without formatting the file.
  struct sysinfo si;
  if (raw::Syscall6(SYS_sysinfo, reinterpret_cast<long>(&si)) == 0) {
    EmitHostNum("mem_total", static_cast<uint64_t>(si.totalram) * (si.mem_unit ? si.mem_unit : 1));
  }
  EmitHostInfo("cgroup_version", CgroupVersionName());
  EmitHostNum("cgroup_memory_max", ReadCgroupNumber("memory.max", "memory.limit_in_bytes"));
  struct statfs sf;
  if (raw::Syscall6(SYS_statfs, reinterpret_cast<long>("/dev/shm"), reinterpret_cast<long>(&sf)) ==
      0) {
    EmitHostNum("shm_size", static_cast<uint64_t>(sf.f_blocks) * sf.f_bsize);
    EmitHostNum("shm_free", static_cast<uint64_t>(sf.f_bavail) * sf.f_bsize);
  }
  EmitHostNum("page_size", static_cast<uint64_t>(sysconf(_SC_PAGESIZE)));
  const uint64_t cpu_limit = CgroupCpuLimitMillicpus();
  if (cpu_limit != UINT64_MAX) EmitHostNum("cgroup_cpu_quota_millicpus", cpu_limit);
  FingerprintNvidia();
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
  long n = raw::Readlink("/proc/self/exe", g_self_exe, sizeof(g_self_exe) - 1);
  g_self_exe[n > 0 ? n : 0] = '\0';
  ps.exe = InternCString(g_self_exe);
  char path[1024];
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
  // The thread's name as /proc/self/task/<tid>/comm shows it, in one system call.
  char comm[32] = {};  // the kernel writes at most 16 bytes, NUL included
  if (raw::Syscall6(SYS_prctl, PR_GET_NAME, reinterpret_cast<long>(comm)) == 0 && comm[0] != '\0') {
    format::ThreadName tn;
    tn.ts = ps.ts;
    tn.tid = static_cast<uint64_t>(raw::Gettid());
    tn.name = InternCString(comm);
    Emit(tn);
  }
}

}  // namespace colabtrace::shim

// ---- hooks -------------------------------------------------------------------------------
using namespace colabtrace::shim;  // NOLINT: the hooks below are thin entry points

// Hook entry points: default visibility; the version script limits exports to hooks.def.
#pragma GCC visibility push(default)
extern "C" {

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
