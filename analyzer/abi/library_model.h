// ProcessLibraries: the typed library model of one process, computed once per report
// and read by every abi.* rule (analyzer/abi/rules/, one file per finding id).
//
// It holds the process's LibraryInventory plus, per loaded object, its family, the CUDA
// major it was built for and the facts of its file on disk. Files are read only when
// the analyzer runs on the host that recorded the trace (HostOrigin); on another host
// a file is used only when its build id proves it is the loaded one.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "abi/file_facts.h"
#include "abi/library_inventory.h"
#include "analyses/process_facts.h"
#include "elf/cuda_arch.h"
#include "elf/library_family.h"
#include "report/json.h"
#include "trace/process_trace.h"

namespace colabtrace::analyzer::abi {

// Whether the analyzing machine is the one (and the boot) that recorded a trace.
struct HostOrigin {
  bool same_host = true;
  std::string why;  // "boot_id", "machine_id" or "hostname": what differed; "" when same
  // The label for disk-based evidence: "" on the same host, else
  // "skipped: trace from another host".
  std::string DiskChecksLabel() const;
};

// This machine's identity, for comparing with a trace's HostInfo (boot_id, machine_id,
// hostname). COLABTRACE_ANALYZER_HOST_ID (test-only, documented in docs/DEVELOPING.md)
// replaces this machine's boot_id and machine_id with its value.
struct LocalHost {
  std::string boot_id, machine_id, hostname;
  static const LocalHost& Get();
};

// Compares the trace's recorded identity with this machine's: boot_id first, then
// machine_id, then (for traces that recorded neither) the hostname.
HostOrigin HostOriginOf(const ProcessTrace& t, const LocalHost& local = LocalHost::Get());

struct ProcessLibraries {
  const ProcessTrace* trace = nullptr;
  LibraryInventory inv;
  std::vector<elf::LibraryFamily> family;           // per object
  std::vector<std::optional<elf::CudaMajor>> cuda;  // per object
  std::vector<FileFacts*> files;                    // per object; nullptr: not read (see above)
  uint64_t end_realtime_ns = 0;
  HostOrigin host;
  bool process_failed = false;  // non-zero exit, a fatal signal, or killed

  // facts: t's process facts given the run's lifecycle model (ReportBuilder::facts), so
  // that process_failed agrees with how processes[] says it ended.
  static ProcessLibraries Of(const ProcessTrace& t, const ProcessFacts& facts, FileFactsCache& cache);
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
// True when the file on disk is (still) the one the process loaded.
bool SameAsLoaded(const LoadedLibrary& o, const FileFacts& f);
// "same", "changed", "changed during the run", "removed during the run" (the shim's
// re-checks found no file and none is there now), "same build", "missing", "unknown".
std::string DiskState(const LoadedLibrary& o, const FileFacts* f, uint64_t end_realtime_ns);
// The loaded object (same namespace) whose soname or file name is `name`, or "".
std::string LoadedPathFor(const ProcessLibraries& p, const std::string& name, int64_t nsid);
// Failed GPU calls (GpuError, GpuAlloc, GpuModule) with one of `codes`, as evidence.
Json GpuErrors(const ProcessTrace& t, std::initializer_list<int64_t> codes);

}  // namespace colabtrace::analyzer::abi
