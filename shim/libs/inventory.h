// LibraryInventory: every object mapped into the process, kept in step with the loader.
//
// At start (and in a fork child, and after an exec) every loaded object is written as a
// LibLoad record; after each hooked dlopen/dlmopen/dlclose the loader's list is compared
// with what was seen before (dl_iterate_phdr, cheap when its load/unload counters have
// not moved): new objects get a LibLoad (api kDependency when a DT_NEEDED names them,
// else kDiscovered), vanished ones a LibUnload. The call itself gets its own LibLoad or
// LibUnload record. Each object's file identity (dev, inode, size, mtime) is taken with a
// raw stat when it appears and re-checked at later loads (at most every few seconds) and
// at exit; a change is written as a LibCheck record.
//
// Synchronisation: the inventory is updated under a try-lock. A thread that finds it
// busy leaves a note and the holder syncs again before letting go, so no thread ever
// waits (a hook can run inside the loader's constructors, under its locks).
#pragma once

#include <link.h>

#include <cstdint>

#include "caller_trampoline.h"
#include "colabtrace/format/records.h"
#include "modules.h"

namespace colabtrace::shim::libs {

// The NT_GNU_BUILD_ID of a loaded object (bounds-checked against its loaded segments),
// or an empty view. The one build-id reader of the shim: the module map uses it too.
format::Bytes LoadedBuildId(const struct dl_phdr_info* info);

// One dlopen/dlmopen call, after the real function returned.
struct LoadCall {
  format::LibApi api = format::LibApi::kDlopen;
  const char* requested = nullptr;  // as passed (may be nullptr)
  int mode = 0;
  long lmid = 0;                    // dlmopen's namespace argument
  void* handle = nullptr;           // the result
  const char* error = nullptr;      // the dlerror text when handle is nullptr
  CallerObject caller;
  const void* return_address = nullptr;
  uint64_t t0 = 0, t1 = 0;          // ticks around the real call
};

// Records a load call and whatever it mapped. Call inside an entered ShimScope.
void RecordLoadCall(const LoadCall& call);

// Records a dlclose call and whatever it unmapped. Call inside an entered ShimScope.
void RecordCloseCall(void* handle, int rc, const char* error, uint64_t t0, uint64_t t1);

// Writes the start inventory (all objects loaded now). Called from LibsModuleStart.
void InventoryStart(StartKind kind);

// Final sync and identity re-check; called once at a clean exit.
void InventoryFinish();

}  // namespace colabtrace::shim::libs
