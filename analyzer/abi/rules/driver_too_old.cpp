// abi.driver-too-old (error)
//
// Rule: a GpuVersion record whose runtime's CUDA major is newer than the driver's (both
// > 0); or a CUDA call (GpuError, GpuModule, or an allocation) that failed with one of
// kDriverTooOldErrors.
//
// Only when a driver is there: a CUDA driver library loaded or a GpuVersion naming a
// driver version. Without any driver the runtime fails with the same 35
// (cudaErrorInsufficientDriver: the real libcudart.so.13 does so when libcuda.so.1 is not
// installed), and the cause is the missing driver, which abi.load-failed names (or, on a
// CPU-only host, nothing: that is not a fault), not its age.
//
// Majors, not minors: since CUDA 11, a runtime runs on any driver of the same major
// (minor-version compatibility), so a cu126 wheel on a 12.4 driver works. Only features
// newer than the driver (PTX of a newer ISA, some APIs) then fail, and they fail with one
// of the codes below, which is the evidence this rule reports for the same-major case.
// One finding per job and pair of versions (or per job for the failed calls alone).
#include "abi/rules/rules.h"

namespace colabtrace::analyzer::abi {
namespace {

// 35 cudaErrorInsufficientDriver, 222 cudaErrorUnsupportedPtxVersion,
// 803 cudaErrorSystemDriverMismatch, 804 cudaErrorCompatNotSupportedOnDevice.
constexpr std::initializer_list<int64_t> kDriverTooOldErrors = {35, 222, 803, 804};

int64_t Major(int64_t version) { return version / 1000; }  // 12040 -> 12

void DriverTooOldOf(const ProcessLibraries& p, JobContext& ctx) {
  const ProcessTrace& t = *p.trace;
  Json versions = Json::MakeArray();
  bool too_old = false;
  bool driver_reported = false;  // a GpuVersion named a driver version
  int64_t runtime = 0, driver = 0;
  std::string runtime_lib;
  constexpr size_t kMaxVersions = 16;  // a trace repeats the record per library; list a few
  for (const auto& v : t.records.GpuVersion) {
    if (versions.array().size() < kMaxVersions) {
      Json j = Json::MakeObject();
      j["runtime"] = CudaVersionText(v.runtime);
      j["driver"] = CudaVersionText(v.driver);
      j["runtime_lib"] = std::string(t.Str(v.runtime_lib));
      j["driver_lib"] = std::string(t.Str(v.driver_lib));
      versions.Append(std::move(j));
    }
    driver_reported |= v.driver > 0;
    if (v.runtime > 0 && v.driver > 0 && Major(v.runtime) > Major(v.driver)) {
      too_old = true;
      runtime = v.runtime;
      driver = v.driver;
      runtime_lib = std::string(t.Str(v.runtime_lib));
    }
  }
  Json errors = GpuErrors(ctx.symbols, t, kDriverTooOldErrors);
  if (!too_old && errors.array().empty()) return;
  const LoadedLibrary* driver_lib = nullptr;  // the CUDA driver library, if one was loaded
  for (size_t i = 0; i < p.inv.objects.size() && driver_lib == nullptr; ++i) {
    if (p.family[i].family == "cuda-driver") driver_lib = &p.inv.objects[i];
  }
  if (!too_old && driver_lib == nullptr && !driver_reported) return;  // no driver at all
  Finding f = Finding::Of(FindingId::kAbiDriverTooOld, t.pid());
  f.evidence["versions"] = std::move(versions);
  f.evidence["errors"] = std::move(errors);
  f.evidence["compared"] = "CUDA major (minor-version compatibility)";
  if (driver_lib != nullptr) f.evidence["driver_library"] = driver_lib->path;
  if (too_old) {
    f.summary = "the CUDA runtime " + CudaVersionText(runtime) +
                (runtime_lib.empty() ? "" : " (" + std::string(Basename(runtime_lib)) + ")") +
                " is newer than the driver supports (CUDA " + CudaVersionText(driver) + ")";
  } else {
    f.summary = "CUDA calls failed because the driver is too old for the loaded runtime or its PTX";
  }
  std::string cause = f.summary;  // the versions compared, or the failed calls
  ctx.findings.Add(std::move(f), std::move(cause));
}

void DriverTooOldRule(RuleContext& rule) { ForEachProcessLibraries(rule, DriverTooOldOf); }

const RuleRegistration kDriverTooOldRuleRegistration(DriverTooOldRule,
    {FindingId::kAbiDriverTooOld});

}  // namespace

}  // namespace colabtrace::analyzer::abi
