// Which kernel a launch record means, and which library holds its code: for
// gpu.launch-failed (GpuLaunchFailed) and gpu.device-fault (GpuLaunchRing).
//
// A launch names its kernel by a handle whose meaning depends on the entry point:
//   - cudaLaunchKernel*: the host stub, named offline from the module map and the
//     object's symbol table (nvcc gives the stub the kernel's own name);
//   - nvcc's __cudaLaunchKernel: a cudaKernel_t that the stub obtained from
//     __cudaGetKernel (GpuFunction, api __cudaGetKernel, records the stub);
//   - the driver: a CUfunction or CUkernel, named by the GpuFunction records of the
//     lookups (cuModuleGetFunction, cuLibraryGetKernel, cuFuncGetName), following
//     cuKernelGetFunction's CUfunction -> CUkernel; or by the name a record carries.
// Names are demangled. A host stub is named from the program's symbols when its file can be
// read, else by the name the shim recorded at its first launch or its __cudaGetKernel
// (cudaFuncGetName), so a report made away from the recording machine names it too. The library is the object holding the host stub, else the
// module's file, the object whose mapping held the module's image (a program's
// .nv_fatbin handed over by its runtime), or the object that loaded it: never the runtime
// that called the driver. Each stub and handle is resolved once (a trace may hold
// millions of launch records).
#pragma once

#include <cstdint>
#include <map>
#include <tuple>
#include <string>
#include <string_view>

#include "core/json.h"
#include "model/symbolize.h"
#include "trace/process_trace.h"

namespace colabtrace::analyzer::gpu {

struct KernelName {
  std::string kernel;   // "" when unknown
  std::string library;  // file name of the object, "" when unknown
};

class KernelNames {
 public:
  // symbols: the run model's cache, for naming a host stub from the program's symbols.
  KernelNames(const ProcessTrace& t, SymbolCache& symbols);

  // api/func/name/module/inner_func as in GpuLaunchFailed (name, module and inner_func 0
  // for a GpuLaunchRing record). Falls back to the handle in hex.
  const KernelName& Of(uint64_t api, uint64_t func, uint64_t name = 0, uint64_t module = 0,
                       uint64_t inner_func = 0);

 private:
  KernelName OfStub(uint64_t stub);
  KernelName OfHandle(uint64_t handle, int depth = 0);
  std::string ModuleLibrary(uint64_t module) const;

  const ProcessTrace& t_;
  SymbolCache& symbols_;
  std::map<uint64_t, const format::GpuFunction*> functions_;  // the last record of each handle
  std::map<uint64_t, std::string> module_libraries_;          // by CUmodule/CUlibrary
  std::map<uint64_t, KernelName> stubs_;
  std::map<uint64_t, std::string> stub_names_;  // the names the trace carries, by host stub
  std::map<std::tuple<uint64_t, uint64_t, uint64_t, uint64_t, uint64_t>, KernelName> resolved_;
};

// One kernel of an evidence list: {kernel, library, python_line (the innermost of the
// program's own frames of py_stack: ProgramFrame), python_stack (all its frames, innermost
// first; null without one), api, stream}.
Json KernelJson(const ProcessTrace& t, KernelNames& names, uint64_t api, uint64_t func, uint64_t py_stack,
                uint64_t stream);
// KernelJson of a launch ring entry, with its grid, block and launching thread (tid).
Json RingKernelJson(const ProcessTrace& t, KernelNames& names, const format::GpuLaunchRing& r);

// True for the runtime launch entry points whose func is a host stub (cudaLaunchKernel*),
// and for nvcc's __cudaLaunchKernel* (func: a cudaKernel_t).
bool IsStubLaunch(uint64_t api);
bool IsNvccLaunch(uint64_t api);
// True for the driver's kernel lookups (cuModuleGetFunction, cuLibraryGetKernel,
// cuKernelGetFunction), whose failure for want of an image a GpuLaunchFailed records.
bool IsKernelLookup(uint64_t api);

}  // namespace colabtrace::analyzer::gpu
