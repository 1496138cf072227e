// How capability modules (file I/O, GPU, libraries, CUPTI) plug into the core.
//
// The core calls each Start function after it opens a trace: at process start, in a
// fork child (which gets a fresh trace) and after an exec adopted the trace. A module
// that is not linked in is skipped (weak symbols). Start functions run inside a
// ShimScope and may Emit.
#pragma once

#include <cstddef>
#include <cstdint>

#include "colabtrace/format/records.h"

namespace colabtrace::shim {

enum class StartKind { kProcessStart, kForkChild, kExecAdopted };
struct ThreadState;  // writer.h

void IoModuleStart(StartKind) __attribute__((weak, visibility("hidden")));
void GpuModuleStart(StartKind) __attribute__((weak, visibility("hidden")));
void LibsModuleStart(StartKind) __attribute__((weak, visibility("hidden")));
void CuptiModuleStart(StartKind) __attribute__((weak, visibility("hidden")));
void PythonModuleStart(StartKind) __attribute__((weak, visibility("hidden")));
// Called once at a clean end (exit, _exit, return from main) before the trace closes.
void GpuModuleFinish() __attribute__((weak, visibility("hidden")));
void LibsModuleFinish() __attribute__((weak, visibility("hidden")));
void CuptiModuleFinish() __attribute__((weak, visibility("hidden")));
// Called by the fatal-signal handler (signal context, its own writer w, before the Signal
// record): the GPU module writes the kernels it last launched (its launch ring), unless a
// device fault already did. Async-signal-safe.
void GpuModuleFatalSignal(ThreadState& w) __attribute__((weak, visibility("hidden")));

// Symbol interposition for dynamically looked-up entry points. The dlsym/dlvsym hooks
// (shim/libs) pass every successful lookup through here; the GPU module (shim/gpu)
// returns its wrapper for driver entry points it traces (cuMemAlloc_v2, cuGetProcAddress,
// ...) and for the CUPTI calls by which a program takes CUPTI (cuptiSubscribe(_v2),
// cuptiActivityRegisterCallbacks: the shim hands its subscription over first), and `real`
// unchanged for everything else. Must be cheap for names it does not
// wrap and must never load a library.
void* GpuInterposeSymbol(const char* name, void* real) __attribute__((weak, visibility("hidden")));

// The same for libnccl's entry points (shim/nccl): the GPU module passes names that start
// with "nccl" here; the NCCL module returns its hook for a name it hooks (keeping `real` as
// the function the hook calls) and `real` for everything else.
void* NcclInterposeSymbol(const char* name, void* real) __attribute__((weak, visibility("hidden")));

// A dlopen the shim itself makes (the CUPTI module's libcupti): glibc's dlopen called
// directly (the shim is the caller: its search path, no RUNPATH of the program's), any
// dlerror() text its failure leaves consumed so the program never reads it, and a
// successful load recorded as colabtrace's own (LibLoad api kColabtrace, requester: the
// shim), never as the program's. Call inside a ShimScope, or where the thread already
// holds one (t_thread.busy): the record is written then too.
void* LibsOwnDlopen(const char* file, int mode) __attribute__((weak, visibility("hidden")));

// Emits Module records for objects loaded since the last call (and at the first call,
// for all of them). Cheap when nothing changed: it compares dl_iterate_phdr's load and
// unload counters. Bases of unloaded objects are forgotten, so an object loaded later
// at a reused base gets its own record. Call inside a ShimScope; not reentrant (the
// libraries module calls it under its own lock).
void SyncModuleMap();

// The dynamic loader's load and unload counters (dl_iterate_phdr's dlpi_adds and
// dlpi_subs): when both are unchanged, no object was loaded or unloaded.
void ReadLoaderCounters(unsigned long long* adds, unsigned long long* subs);

// Captures up to max return addresses of the calling thread, innermost first, skipping
// `skip` frames of the shim. Returns the count. libgcc's unwinder, linked statically
// and local to the shim (native_stack.cpp); async-signal-safe.
size_t CaptureStack(uint64_t* out, size_t max, size_t skip);

// From a signal handler: the stack of the interrupted code, starting at the interrupted
// instruction of `uc` (the handler's ucontext_t). Returns the count.
size_t CaptureSignalStack(const void* uc, uint64_t* out, size_t max);

// Installs the handler that records deaths by signal (signals.cpp).
void InstallFatalSignalHandlers();

// From a fatal-signal handler: a String record with a fresh id (no interning: the intern
// table may be in use by the very thread that was interrupted), through the handler's own
// writer w. Returns its id (0: no trace). signals.cpp.
uint64_t EmitStringFromSignalHandler(ThreadState& w, const char* s, size_t n);

// Runs fn(arg) on the shim's own 64 KiB stack, every signal blocked (signals.cpp), for
// work that may be reached from a program's signal handler on a small alternate stack
// (a handler that calls _exit). False, without running fn, when that stack is taken (a
// crash being recorded) or on an architecture without the switch: run fn directly then.
bool RunOnShimStack(void (*fn)(void*), void* arg);

// Records an exit (once per process image) and, when finish is set, closes the trace.
void RecordExit(int64_t code, format::ExitHow how, bool finish);

}  // namespace colabtrace::shim
