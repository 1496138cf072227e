// The process core's own shared state and steps, used by start-up and exit
// (process.cpp), fork and exec (fork_exec.cpp) and the fingerprint (fingerprint.cpp).
// Not for capability modules: they plug in through modules.h.
#pragma once

#include <cstddef>
#include <cstdint>

#include "colabtrace/format/records.h"

namespace colabtrace::shim {

extern int g_argc;        // main's argc and argv, for the fingerprint and the trace name
extern char** g_argv;
extern char g_shim_path[512];  // this library's own path, to tell whether an exec keeps us

// How much of libc a freshly started process image may use while it opens its trace.
// After fork() libc has reset its locks (atfork child handlers run after that); after
// _Fork() or a raw clone() it has not, and only raw system calls are safe.
enum class LibcState { kUsable, kLocksUnreset };

// Opens (or, after exec, adopts) the trace and writes the start records.
void BeginTrace(format::ProcessOrigin origin, uint32_t parent_tid, char** envp, LibcState libc);

// Re-points the shim at a new process after fork, _Fork or clone without CLONE_VM: the
// child forgets the parent's trace and opens its own.
void AfterForkInChild(LibcState libc);

// In a fork child: drops the copy of a vfork child's note that its parent had not
// written out yet (fork_exec.cpp), so a vfork child of its own can leave one.
void ForgetVforkNote();

// Writes the fingerprint records (fingerprint.cpp). Inside BeginTrace's ShimScope.
void FingerprintEnvironment();
void FingerprintProcess(format::ProcessOrigin origin, uint32_t parent_tid, char** envp);
void RecordEnvVar(const char* name, size_t name_len, const char* value, format::EnvSource src);

// The program's file (/proc/self/exe; "" if unreadable), read by FingerprintProcess at
// every start, fork and exec, and only read back after that: the process fingerprint, the
// module map and the library inventory name the main program from it (one readlink
// instead of three, ~6 us each).
const char* SelfExePath();

}  // namespace colabtrace::shim
