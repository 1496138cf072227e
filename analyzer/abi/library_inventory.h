// LibraryInventory: the objects one process had loaded, and the loads that failed,
// rebuilt from its LibLoad / LibUnload / LibCheck records.
//
// The shim writes one LibLoad per object when it appears (api startup, dependency,
// discovered; fresh=1) and one per dlopen/dlmopen call (fresh=1 when that call mapped its
// target). A call whose target another thread's sync already wrote as "discovered" is
// merged into that object here, so every object says who loaded it and how.
//
// What colabtrace itself loaded (the libcupti of COLABTRACE_CUPTI=1: api kColabtrace, or
// in traces written before the shim marked it, a libcupti that appeared while the shim's
// CUPTI subscriber started) is not the program's: it is left out of objects and failures,
// with whatever its DT_NEEDED brought in, unless the program loads it too.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "colabtrace/format/records.h"
#include "model/run_model.h"
#include "trace/process_trace.h"

namespace colabtrace::analyzer::abi {

// A file's identity as the shim recorded it (raw stat at load time).
struct FileIdentity {
  uint64_t dev = 0, ino = 0, size = 0, mtime_ns = 0;
  bool known() const { return ino != 0 || size != 0 || mtime_ns != 0; }
  friend bool operator==(const FileIdentity&, const FileIdentity&) = default;
};

// A re-check of a loaded file that found a different identity (LibCheck).
struct IdentityChange {
  uint64_t ts = 0;
  FileIdentity now;
  int64_t err = 0;       // -errno when the stat failed (e.g. the file was removed)
  uint64_t when = 0;     // format::LibCheckWhen
};

struct LoadedLibrary {
  std::string path;       // as the loader named it (the executable's real path for it)
  std::string soname;
  std::string requested;  // the name asked for (dlopen argument or DT_NEEDED entry)
  std::string loaded_by;  // the requesting object's path, "LD_PRELOAD", or ""
  format::LibApi api = format::LibApi::kStartup;
  int64_t flags = 0;      // dlopen mode of the call that mapped it
  int64_t nsid = 0;       // dlmopen namespace
  uint64_t base = 0;      // load bias
  std::string build_id;   // lowercase hex, "" when none
  FileIdentity identity;
  uint64_t loaded_ns = 0;
  std::optional<uint64_t> unloaded_ns;
  bool deepbind = false;  // mapped by an RTLD_DEEPBIND load (itself or as a dependency)
  bool is_executable = false;  // the program of its image
  bool is_vdso = false;
  uint64_t image = 0;  // the process image (0, then one more per exec) that had it mapped:
                       // an exec unmaps them all (unloaded_ns is the new image's start)
  std::vector<IdentityChange> changes;
  uint64_t caller = 0;    // return address of the call that mapped it (0: none)
  uint64_t stack = 0;     // its Stack record id (0: none)
};

struct FailedLoad {
  format::LibApi api = format::LibApi::kDlopen;
  std::string requested;
  std::string requester;
  std::string error;
  int64_t flags = 0;
  int64_t nsid = 0;
  uint64_t ts = 0;
  uint64_t stack = 0;
};

struct LibraryInventory {
  std::vector<LoadedLibrary> objects;  // in load order
  std::vector<FailedLoad> failures;    // in time order
  uint64_t dlclose_calls = 0;

  static LibraryInventory Of(const ProcessTrace& t);
};

// Every trace's inventory (RunModel::Get<LibraryInventories>()).
struct LibraryInventories {
  std::vector<LibraryInventory> of_trace;  // same order as the run's traces
  static LibraryInventories Build(const RunModel& run);
};

// "cudart" for libcudart.so.12, /x/libcudart-1a2b3c4d.so.12, libcudart.so; "cudnn_ops"
// for libcudnn_ops.so.9: the library's name without "lib", version and wheel hash.
std::string LibraryStem(std::string_view soname_or_path);

// "RTLD_NOW|RTLD_GLOBAL|RTLD_DEEPBIND" for a dlopen mode.
std::string DlopenFlagNames(int64_t flags);

// "startup", "dlopen", "dlmopen", "dependency", "discovered", "colabtrace".
std::string_view LibApiName(format::LibApi api);

// Lowercase hex of bytes.
std::string HexBytes(const format::Bytes& b);

}  // namespace colabtrace::analyzer::abi
