#include "elf/library_family.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <utility>

#include "elf/text.h"
#include "fmt/format.h"

namespace colabtrace::elf {
namespace {

struct FamilyRule {
  std::string_view stem;  // library name without "lib" and ".so..."
  bool prefix;            // match stem as a prefix ("cudnn_" covers cudnn_ops, ...)
  std::string_view family;
  LibraryGroup group;
  bool tracks_cuda_major;
};

using G = LibraryGroup;
// First match wins, so specific entries precede prefixes that would cover them.
constexpr std::array kRules = {
    FamilyRule{"cudart", false, "cudart", G::kCudaToolkit, true},
    FamilyRule{"cuda", false, "cuda-driver", G::kCudaDriver, false},
    FamilyRule{"nvidia-ml", false, "nvml", G::kCudaDriver, false},
    FamilyRule{"nvidia-", true, "nvidia-driver", G::kCudaDriver, false},
    FamilyRule{"cublasLt", false, "cublasLt", G::kCudaToolkit, true},
    FamilyRule{"cublas", false, "cublas", G::kCudaToolkit, true},
    FamilyRule{"nvblas", false, "nvblas", G::kCudaToolkit, true},
    FamilyRule{"nvrtc", false, "nvrtc", G::kCudaToolkit, true},
    FamilyRule{"nvrtc-builtins", false, "nvrtc", G::kCudaToolkit, true},
    FamilyRule{"nvJitLink", false, "nvJitLink", G::kCudaToolkit, true},
    FamilyRule{"cupti", false, "cupti", G::kCudaToolkit, true},
    FamilyRule{"npp", true, "npp", G::kCudaToolkit, true},
    FamilyRule{"nvjpeg", false, "nvjpeg", G::kCudaToolkit, true},
    FamilyRule{"cufft", false, "cufft", G::kCudaToolkit, false},
    FamilyRule{"cufftw", false, "cufft", G::kCudaToolkit, false},
    FamilyRule{"curand", false, "curand", G::kCudaToolkit, false},
    FamilyRule{"cusparseLt", false, "cusparseLt", G::kNvidiaLibrary, false},
    FamilyRule{"cusparse", false, "cusparse", G::kCudaToolkit, false},
    FamilyRule{"cusolver", false, "cusolver", G::kCudaToolkit, false},
    FamilyRule{"cusolverMg", false, "cusolver", G::kCudaToolkit, false},
    FamilyRule{"cufile", true, "cufile", G::kCudaToolkit, false},
    FamilyRule{"nvToolsExt", false, "nvtx", G::kCudaToolkit, false},
    FamilyRule{"nvtx3interop", false, "nvtx", G::kCudaToolkit, false},
    FamilyRule{"nvvm", false, "nvvm", G::kCudaToolkit, false},
    FamilyRule{"cudnn", false, "cudnn", G::kNvidiaLibrary, false},
    FamilyRule{"cudnn_", true, "cudnn", G::kNvidiaLibrary, false},
    FamilyRule{"nccl", false, "nccl", G::kNvidiaLibrary, false},
    FamilyRule{"nvshmem", true, "nvshmem", G::kNvidiaLibrary, false},
    FamilyRule{"cutensor", true, "cutensor", G::kNvidiaLibrary, false},
    FamilyRule{"stdc++", false, "libstdc++", G::kSystem, false},
    FamilyRule{"gcc_s", false, "libgcc_s", G::kSystem, false},
    FamilyRule{"gomp", false, "libgomp", G::kSystem, false},
    FamilyRule{"c", false, "glibc", G::kSystem, false},
    FamilyRule{"m", false, "glibc", G::kSystem, false},
    FamilyRule{"dl", false, "glibc", G::kSystem, false},
    FamilyRule{"rt", false, "glibc", G::kSystem, false},
    FamilyRule{"pthread", false, "glibc", G::kSystem, false},
    FamilyRule{"ld-linux-", true, "glibc", G::kSystem, false},
    FamilyRule{"torch", false, "torch", G::kFramework, false},
    FamilyRule{"torch_", true, "torch", G::kFramework, false},
    FamilyRule{"c10", false, "torch", G::kFramework, false},
    FamilyRule{"c10_", true, "torch", G::kFramework, false},
};

// "libcudnn_ops.so.9.1" -> "cudnn_ops"; "/x/libcudart-1a2b3c4d.so.12" -> "cudart";
// "libnvrtc.alt.so.13" -> "nvrtc"; "ld-linux-x86-64.so.2" -> "ld-linux-x86-64".
std::string_view Stem(std::string_view name) {
  if (const size_t slash = name.rfind('/'); slash != std::string_view::npos) {
    name = name.substr(slash + 1);
  }
  ConsumePrefix(&name, "lib");
  for (size_t at = name.find(".so"); at != std::string_view::npos; at = name.find(".so", at + 1)) {
    if (at + 3 == name.size() || name[at + 3] == '.') {
      name = name.substr(0, at);
      break;
    }
  }
  ConsumeSuffix(&name, ".alt");
  // auditwheel renames libfoo.so.N to libfoo-<8 hex digits>.so.N.
  if (name.size() > 9 && name[name.size() - 9] == '-') {
    const std::string_view hash = name.substr(name.size() - 8);
    if (std::all_of(hash.begin(), hash.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; })) {
      name.remove_suffix(9);
    }
  }
  return name;
}

}  // namespace

std::optional<int> SonameMajor(std::string_view soname) {
  const size_t at = soname.rfind(".so.");
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = soname.substr(at + 4);
  rest = rest.substr(0, rest.find('.'));
  return ParseInt(rest);
}

LibraryFamily ClassifyLibrary(std::string_view soname_or_path) {
  LibraryFamily out;
  out.soname_major = SonameMajor(soname_or_path);
  const std::string_view stem = Stem(soname_or_path);
  for (const FamilyRule& r : kRules) {
    if (r.prefix ? stem.starts_with(r.stem) : stem == r.stem) {
      out.family = std::string(r.family);
      out.group = r.group;
      out.soname_major_is_cuda_major = r.tracks_cuda_major && out.soname_major.has_value();
      break;
    }
  }
  return out;
}

std::optional<int> CudaMajorForPtxIsa(int isa_major, int isa_minor) {
  if (isa_major >= 7) return isa_major + 4;  // 7.0 came with CUDA 11.0, 8.0 with 12.0, 9.0 with 13.0
  if (isa_major == 6) return isa_minor <= 2 ? 9 : 10;
  return std::nullopt;
}

namespace {

std::optional<CudaMajor> FromName(std::string_view name, CudaMajorSource source,
                                  std::string_view what) {
  const LibraryFamily f = ClassifyLibrary(name);
  if (!f.soname_major_is_cuda_major) return std::nullopt;
  return CudaMajor{*f.soname_major, source, fmt::format("{} {}", what, name)};
}

std::optional<int> MajorOfRelease(std::string_view release) {  // "13.0" -> 13
  return ParseInt(release.substr(0, release.find('.')));
}

}  // namespace

std::optional<CudaMajor> DeviceCodeCudaRelease(const FatbinListing& listing) {
  constexpr size_t kMaxDecompressed = size_t{64} << 20;
  const FatbinEntry* cubin = nullptr;
  const FatbinEntry* best_ptx = nullptr;  // highest ISA from the headers
  for (const FatbinEntry& e : listing.entries) {
    if (e.kind == FatbinKind::kCubin && cubin == nullptr) cubin = &e;
    if (e.kind == FatbinKind::kPtx &&
        (best_ptx == nullptr || std::pair(e.version_major, e.version_minor) >
                                    std::pair(best_ptx->version_major, best_ptx->version_minor))) {
      best_ptx = &e;
    }
  }
  // The release ptxas and NVVM write into the code names the compiler exactly.
  if (cubin != nullptr) {
    absl::StatusOr<std::string> code = ReadEntryPayload(*cubin, kMaxDecompressed);
    absl::StatusOr<CubinInfo> info = code.ok() ? InspectCubin(*code) : code.status();
    if (info.ok()) {
      if (std::optional<int> m = MajorOfRelease(info->toolkit)) {
        return CudaMajor{*m, CudaMajorSource::kDeviceCode,
                         fmt::format("cubin {} built by CUDA {}", DescribeArch(*cubin), info->toolkit)};
      }
    }
  }
  if (best_ptx != nullptr) {
    absl::StatusOr<std::string> code = ReadEntryPayload(*best_ptx, kMaxDecompressed);
    absl::StatusOr<PtxInfo> info = code.ok() ? InspectPtx(*code) : code.status();
    if (info.ok()) {
      if (std::optional<int> m = MajorOfRelease(info->toolkit)) {
        return CudaMajor{*m, CudaMajorSource::kDeviceCode,
                         fmt::format("PTX {} built by CUDA {}", DescribeArch(*best_ptx), info->toolkit)};
      }
    }
    if (std::optional<int> m = CudaMajorForPtxIsa(best_ptx->version_major, best_ptx->version_minor)) {
      return CudaMajor{*m, CudaMajorSource::kDeviceCode,
                       fmt::format("PTX ISA {}.{}", best_ptx->version_major, best_ptx->version_minor)};
    }
  }
  return std::nullopt;
}

std::optional<CudaMajor> DetectCudaMajor(const ElfImage& image) {
  if (auto m = FromName(image.soname(), CudaMajorSource::kSoname, "soname")) return m;
  for (const VersionDefinition& d : image.verdef()) {
    if (d.is_base) continue;
    if (auto m = FromName(d.name, CudaMajorSource::kVerdef, "defines version")) return m;
  }
  for (const std::string& n : image.needed()) {
    if (auto m = FromName(n, CudaMajorSource::kDependency, "needs")) return m;
  }
  for (const VersionRequirement& r : image.verneed()) {
    if (auto m = FromName(r.file, CudaMajorSource::kDependency, "needs")) return m;
    for (const std::string& v : r.versions) {
      if (auto m = FromName(v, CudaMajorSource::kDependency, "needs version")) return m;
    }
  }
  return std::nullopt;
}

}  // namespace colabtrace::elf
