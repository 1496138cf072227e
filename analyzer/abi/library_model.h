// ProcessLibraries: the typed library model of one process, computed once per report
// and read by every abi.* rule (analyzer/abi/rules/, one file per finding id).
//
// It holds the process's LibraryInventory plus, per loaded object, its family, the CUDA
// major it links against or is named for, the file holding its bytes and the file now at
// its path. Which files those are is LibraryFiles' decision (library_files.h: --sysroot
// first, a build id or the same file on the recording host proves it).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "abi/file_facts.h"
#include "abi/library_files.h"
#include "abi/library_inventory.h"
#include "model/process_facts.h"
#include "elf/cuda_arch.h"
#include "elf/library_family.h"
#include "core/json.h"
#include "trace/process_trace.h"

namespace colabtrace::analyzer::abi {

struct ProcessLibraries {
  ProcessLibraries(const ProcessTrace& t, const LibraryInventory& inventory) : trace(&t), inv(inventory) {}

  const ProcessTrace* trace = nullptr;
  const LibraryInventory& inv;  // the run model's (LibraryInventories)
  std::vector<elf::LibraryFamily> family;           // per object
  // Per object, from DT_NEEDED, symbol versions and the soname (never device code);
  // from the soname alone when its file is not readable.
  std::vector<std::optional<elf::CudaMajor>> cuda;
  std::vector<FileFacts*> files;    // per object: its bytes as loaded (LibraryFiles::Loaded); nullptr: none
  std::vector<FileFacts*> on_disk;  // per object: the file now at its path (LibraryFiles::AtRecordedPath)
  uint64_t end_realtime_ns = 0;
  HostOrigin host;
  bool process_failed = false;   // non-zero exit, a fatal signal, or killed
  bool gpu_call_failed = false;  // a GPU call failed (GpuError, a failed allocation, free,
                                 // module load or kernel launch)

  // process_failed reads t's facts in the run model, so that it agrees with how
  // processes[] says it ended.
  static ProcessLibraries Of(const RunModel& run, const ProcessTrace& t, LibraryFiles& files);

  // The file of `path` as this process loaded it (when it is one of its objects), else
  // LibraryFiles::Named: for paths a record names (a requester, a dlerror's object).
  FileFacts* FileNamed(const std::string& path, LibraryFiles& library_files) const;
};

// Every trace's ProcessLibraries, read through one LibraryFiles, and the --gpu-arch
// what-if: built once (RunModel::Get<LibraryModels>()) for the rules (abi/rules/ and
// gpu.coverage-incomplete's library causes) and the libraries[] rows.
struct LibraryModels {
  // The files the models were read through. The rules that find a file unreadable record
  // it there (LibraryFiles::Skipped) for the report's libraries_files.
  std::unique_ptr<LibraryFiles> files;
  std::vector<ProcessLibraries> of_trace;  // same order as the run's traces
  std::optional<elf::GpuArch> what_if;     // --gpu-arch, when it names an architecture
  std::string what_if_error;               // else why not ("" without --gpu-arch)

  static LibraryModels Build(const RunModel& run);
};

// ---- shared helpers of the rules -------------------------------------------------------

// The soname, else the file name.
std::string NameOf(const LoadedLibrary& o);
// colabtrace_elf's family of an object (by soname, else by path).
elf::LibraryFamily FamilyOf(const LoadedLibrary& o);
// "cuda-toolkit", "cuda-driver", "nvidia-library", "system", "framework", "other".
std::string_view GroupName(elf::LibraryGroup g);
// 12040 -> "12.4".
std::string CudaVersionText(int64_t v);
// "pip" for site-packages/dist-packages (not apt's), "system" for system dirs, else "".
std::string_view Origin(const std::string& path);
// The evidence object for one loaded library.
Json LibJson(const LoadedLibrary& o);
// The nvidia-* pip package that ships a family ("nvidia-cudnn-cu12"), or "".
std::string PipPackageFor(std::string_view family, std::optional<int> cuda_major);
// "same", "changed", "changed during the run", "removed during the run" (the shim's
// re-checks found no file and none is there now), "same build", "missing", "unknown".
std::string DiskState(const LoadedLibrary& o, const FileFacts* f, uint64_t end_realtime_ns);
// The loaded object (same namespace) whose soname or file name is `name`, or "".
std::string LoadedPathFor(const ProcessLibraries& p, const std::string& name, int64_t nsid);
// Failed GPU calls (GpuError, GpuAlloc, GpuModule) with one of `codes`, as evidence.
Json GpuErrors(SymbolCache& symbols, const ProcessTrace& t, std::initializer_list<int64_t> codes);

}  // namespace colabtrace::analyzer::abi
