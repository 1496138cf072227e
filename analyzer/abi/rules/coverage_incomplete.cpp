// gpu.coverage-incomplete (info)
//
// Rule: (a) a library mapped by an RTLD_DEEPBIND load (itself or as a dependency it
// brought in) that uses CUDA (a CUDA toolkit/NVIDIA/framework library, or one whose
// DT_NEEDED names a CUDA toolkit library or libcuda): its CUDA calls bind inside its own
// scope, past the shim; (b) a loaded object that defines cudaMalloc in its dynamic
// symbol table but is not libcudart (a statically linked CUDA runtime).

#include "abi/rules/rules.h"

namespace colabtrace::analyzer::abi {

void CoverageIncompleteRule(const ProcessLibraries& p, RuleContext& ctx, ReportBuilder& report) {
  Json deep = Json::MakeArray(), stat = Json::MakeArray();
  for (size_t i = 0; i < p.inv.objects.size(); ++i) {
    const LoadedLibrary& o = p.inv.objects[i];
    FileFacts* fi = p.files[i];
    const elf::LibraryFamily& fam = p.family[i];
    if (o.deepbind) {
      bool uses_cuda = fam.group == elf::LibraryGroup::kCudaToolkit ||
                       fam.group == elf::LibraryGroup::kNvidiaLibrary ||
                       fam.group == elf::LibraryGroup::kFramework;
      if (fi != nullptr && fi->image) {
        for (const std::string& n : fi->image->needed()) {
          const elf::LibraryFamily nf = elf::ClassifyLibrary(n);
          if (nf.group == elf::LibraryGroup::kCudaToolkit || nf.family == "cuda-driver") uses_cuda = true;
        }
      }
      if (uses_cuda) {
        Json j = LibJson(o);
        j["flags"] = abi::DlopenFlagNames(o.flags);
        deep.Append(std::move(j));
      }
    }
    // libcolabtrace.so itself defines cudaMalloc: its hook.
    if (fam.family == "cudart" || o.unloaded_ns || o.is_vdso || o.path.empty() || NameOf(o) == "libcolabtrace.so") {
      continue;
    }
    if (fi == nullptr || !fi->image) {
      ctx.files.Skipped("gpu.coverage-incomplete", "no readable file: not checked for a static CUDA runtime", o.path);
    } else if (fi->image->DefinesDynamicSymbol("cudaMalloc")) {
      stat.Append(LibJson(o));
    }
  }
  auto emit = [&](Json objs, std::string_view cause, std::string summary, std::string advice) {
    if (objs.array().empty()) return;
    Finding f;
    f.id = "gpu.coverage-incomplete";
    f.severity = Severity::kInfo;
    f.pid = p.trace->pid();
    f.evidence["cause"] = std::string(cause);
    f.evidence["objects"] = std::move(objs);
    f.summary = std::move(summary);
    f.advice = std::move(advice);
    report.AddFinding(std::move(f));
  };
  const size_t nd = deep.array().size(), ns = stat.array().size();
  emit(std::move(deep), "RTLD_DEEPBIND",
       std::to_string(nd) + " CUDA-using librar" + (nd == 1 ? "y was" : "ies were") +
           " loaded with RTLD_DEEPBIND; their CUDA calls may bypass the trace",
       "RTLD_DEEPBIND makes a library bind to its own dependencies before the preloaded "
       "shim, so its CUDA runtime calls are not seen. Load it without RTLD_DEEPBIND when "
       "possible; GPU totals in this report may be low.");
  emit(std::move(stat), "static cudart",
       std::to_string(ns) + " loaded object" + (ns == 1 ? " defines" : "s define") +
           " cudaMalloc itself (a statically linked CUDA runtime)",
       "A statically linked CUDA runtime does not go through libcudart.so, so its runtime "
       "calls are not traced (its driver calls still are when it reaches the driver through "
       "dlsym or cuGetProcAddress). GPU totals in this report may be low.");
}

}  // namespace colabtrace::analyzer::abi
