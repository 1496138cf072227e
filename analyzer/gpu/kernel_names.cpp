#include "gpu/kernel_names.h"

#include <tuple>
#include <vector>

#include "core/format.h"
#include "gpu/gpu_api.h"
#include "model/python_stack.h"
#include "model/symbolize.h"
#include "colabtrace/format/records.h"
#include "report/report.h"

namespace colabtrace::analyzer::gpu {
namespace {

using format::GpuApi;

std::string FileName(std::string_view path) {
  const size_t slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

// "kernel(float*)+0x0 (libfoo.so+0x1139)" -> {"kernel(float*)", "libfoo.so"}; a frame
// with no symbol ("libfoo.so+0x1139") names only the library.
KernelName FromSymbolized(const std::string& line) {
  KernelName n;
  const size_t paren = line.rfind(" (");
  if (paren == std::string::npos) {
    const size_t plus = line.rfind('+');
    n.library = plus == std::string::npos ? "" : line.substr(0, plus);
    return n;
  }
  const size_t plus = line.rfind('+', paren);
  n.kernel = line.substr(0, plus == std::string::npos ? paren : plus);
  const std::string inner = line.substr(paren + 2);
  const size_t lib_plus = inner.rfind('+');
  n.library = lib_plus == std::string::npos ? inner : inner.substr(0, lib_plus);
  return n;
}

}  // namespace

bool IsStubLaunch(uint64_t api) {
  switch (static_cast<GpuApi>(api)) {
    case GpuApi::kCudaLaunchKernel:
    case GpuApi::kCudaLaunchKernel_ptsz:
    case GpuApi::kCudaLaunchKernelExC:
    case GpuApi::kCudaLaunchKernelExC_ptsz:
    case GpuApi::kCudaLaunchCooperativeKernel:
    case GpuApi::kCudaLaunchCooperativeKernel_ptsz:
      return true;
    default:
      return false;
  }
}

bool IsNvccLaunch(uint64_t api) {
  return api == static_cast<uint64_t>(GpuApi::kNvccLaunchKernel) ||
         api == static_cast<uint64_t>(GpuApi::kNvccLaunchKernel_ptsz);
}

bool IsKernelLookup(uint64_t api) {
  return api == static_cast<uint64_t>(GpuApi::kCuModuleGetFunction) ||
         api == static_cast<uint64_t>(GpuApi::kCuLibraryGetKernel) ||
         api == static_cast<uint64_t>(GpuApi::kCuKernelGetFunction);
}

KernelNames::KernelNames(const ProcessTrace& t, SymbolCache& symbols) : t_(t), symbols_(symbols) {
  // The last record that says something about each handle: a name, a stub, or another handle
  // it stands for (cuKernelGetFunction may hand back the CUkernel's own value, which says
  // nothing more than the lookup that named it).
  for (const auto& f : t.records.GpuFunction) {
    const bool informative = !t.Str(f.name).empty() || f.stub != 0 || (f.kernel != 0 && f.kernel != f.handle);
    if (informative || functions_.find(f.handle) == functions_.end()) functions_[f.handle] = &f;
    if (f.stub != 0 && !t.Str(f.name).empty()) stub_names_[f.stub] = std::string(t.Str(f.name));
  }
  // By handle, the last successful load: the file it came from, else the object whose
  // mapping held the image, else the object that loaded it.
  for (const auto& m : t.records.GpuModule) {
    if (m.handle == 0 || m.rc != 0) continue;
    std::string_view where = t.Str(m.path);
    if (where.empty()) where = t.Str(m.image_object);
    if (where.empty()) where = t.Str(m.caller);
    module_libraries_[m.handle] = FileName(where);
  }
}

std::string KernelNames::ModuleLibrary(uint64_t module) const {
  auto it = module_libraries_.find(module);
  return it != module_libraries_.end() ? it->second : std::string();
}

KernelName KernelNames::OfStub(uint64_t stub) {
  auto [it, fresh] = stubs_.try_emplace(stub);
  if (fresh) {
    const std::vector<std::string> sym = symbols_.Stack(t_, {stub});
    if (!sym.empty()) it->second = FromSymbolized(sym[0]);
    if (it->second.kernel.empty()) {
      auto named = stub_names_.find(stub);
      if (named != stub_names_.end()) it->second.kernel = Demangle(named->second);
    }
  }
  return it->second;
}

KernelName KernelNames::OfHandle(uint64_t handle, int depth) {
  KernelName n;
  auto it = functions_.find(handle);
  if (it == functions_.end() || depth > 4) return n;
  const format::GpuFunction& f = *it->second;
  if (f.stub != 0) return OfStub(f.stub);                         // __cudaGetKernel
  if (f.kernel != 0 && f.kernel != handle) return OfHandle(f.kernel, depth + 1);  // cuKernelGetFunction
  n.kernel = Demangle(std::string(t_.Str(f.name)));
  n.library = ModuleLibrary(f.module);
  if (n.library.empty() && f.module == 0) {
    // cuFuncGetName names a handle without its module: an earlier lookup of the same
    // handle may know it.
    for (const auto& g : t_.records.GpuFunction) {
      if (g.handle == handle && g.module != 0) n.library = ModuleLibrary(g.module);
    }
  }
  return n;
}

const KernelName& KernelNames::Of(uint64_t api, uint64_t func, uint64_t name, uint64_t module,
                                  uint64_t inner_func) {
  const auto key = std::make_tuple(api, func, name, module, inner_func);
  auto [it, fresh] = resolved_.try_emplace(key);
  if (!fresh) return it->second;
  KernelName& n = it->second;
  if (IsStubLaunch(api)) {
    n = OfStub(func);
    if (!t_.Str(name).empty()) n.kernel = Demangle(std::string(t_.Str(name)));
  } else {
    n = OfHandle(func);
    // The driver's own name for the handle, or the name a failed lookup asked for.
    if (!t_.Str(name).empty()) n.kernel = Demangle(std::string(t_.Str(name)));
    // nvcc's launch with no __cudaGetKernel record for its handle (on the H200 the real
    // runtime's handle for a kernel without an image pointed into the program itself):
    // name it as a host stub when the address lies in a loaded object's symbols.
    if (n.kernel.empty() && IsNvccLaunch(api) && func != 0) {
      const KernelName stub = OfStub(func);
      if (!stub.kernel.empty()) n = stub;
    }
  }
  // What the runtime launched or looked up underneath, when the stub said nothing.
  if (n.kernel.empty() && inner_func != 0) {
    const KernelName inner = OfHandle(inner_func);
    n.kernel = inner.kernel;
    if (n.library.empty()) n.library = inner.library;
  }
  if (n.library.empty() && module != 0) n.library = ModuleLibrary(module);
  if (n.kernel.empty()) n.kernel = FormatHex(func);
  return n;
}

namespace {

Json Dims(uint64_t x, uint64_t y, uint64_t z) {
  Json a = Json::MakeArray();
  a.Append(x);
  a.Append(y);
  a.Append(z);
  return a;
}

}  // namespace

Json KernelJson(const ProcessTrace& t, KernelNames& names, uint64_t api, uint64_t func, uint64_t py_stack,
                uint64_t stream) {
  const KernelName& n = names.Of(api, func);
  Json k = Json::MakeObject();
  k["kernel"] = n.kernel;
  k["library"] = n.library.empty() ? Json() : Json(n.library);
  const std::vector<std::string> py = PythonStackFrames(t, py_stack);
  k["python_line"] = py.empty() ? Json() : Json(ProgramFrame(py));
  k["python_stack"] = PythonStackJson(t, py_stack);
  k["api"] = GpuApiLabel(api);
  k["stream"] = FormatHex(stream);
  return k;
}

Json RingKernelJson(const ProcessTrace& t, KernelNames& names, const format::GpuLaunchRing& r) {
  Json k = KernelJson(t, names, r.api, r.func, r.py_stack, r.stream);
  k["grid"] = Dims(r.grid_x, r.grid_y, r.grid_z);
  k["block"] = Dims(r.block_x, r.block_y, r.block_z);
  k["tid"] = r.tid;
  return k;
}

}  // namespace colabtrace::analyzer::gpu
