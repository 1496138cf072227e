// The fingerprint: the host (kernel, OS, CPUs, memory, cgroup limits, /dev/shm) once
// per process, and the process itself (pid, exe, cwd, argv, the recorded environment
// variables, thread name) at every start, fork and exec; plus the environment hooks
// (setenv, putenv, unsetenv) and thread names (pthread_setname_np).
#include <gnu/libc-version.h>
#include <pthread.h>
#include <sched.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/statfs.h>
#include <sys/sysinfo.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cstring>

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
                                          "CUDNN_", "COLABTRACE_", "JAX_"};
  for (const char* p : kPrefixes) {
    const size_t pl = std::strlen(p);
    if (len >= pl && std::strncmp(name, p, pl) == 0) return true;
  }
  return false;
}

char g_self_exe[1024];

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
