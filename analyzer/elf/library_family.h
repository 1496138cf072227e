// Which library a file is (cudart, cublasLt, cudnn, libstdc++, torch, ...) and which
// CUDA major version it was built for.
//
// A soname's major is not always a CUDA major: libcudart.so.13 and libcublasLt.so.13
// are CUDA 13, but libcufft.so.12, libcusparse.so.12 and libcurand.so.10 also ship with
// CUDA 13, libcudnn.so.9 is cuDNN 9 and libnccl.so.2 is NCCL 2. ClassifyLibrary() says
// which case applies; DetectCudaMajor() combines the evidence an ElfImage offers.
//
// Device code is no such evidence: the PTX ISA version a library embeds and the toolkit
// release ptxas stamps into a cubin say which compiler built the kernels, not which
// runtime the library needs (the CUDA 13 wheel's libcufile.so.0 carries PTX ISA 7.1).
// DeviceCodeCudaRelease() reads them as weak evidence to show, never to decide.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "elf/elf_image.h"
#include "elf/fatbin.h"

namespace colabtrace::elf {

enum class LibraryGroup {
  kCudaToolkit,    // cudart, cublas, cufft, nvrtc, cupti, ...
  kCudaDriver,     // libcuda.so.1, libnvidia-*
  kNvidiaLibrary,  // cudnn, nccl, cusparseLt, ...: versioned on their own
  kSystem,         // glibc, libstdc++, libgcc_s
  kFramework,      // torch, c10
  kUnknown,
};

struct LibraryFamily {
  std::string family;  // "cudart", "cublasLt", "cudnn", "libstdc++", ...; "" if unknown
  LibraryGroup group = LibraryGroup::kUnknown;
  std::optional<int> soname_major;  // the N of "lib*.so.N[.M...]"
  // True when soname_major is the CUDA major (libcudart.so.12 is CUDA 12); false for
  // families versioned on their own (cufft, curand, cusparse, cusolver, cudnn, nccl).
  bool soname_major_is_cuda_major = false;
};

// Classifies a soname or a path ("libcudnn_ops.so.9", "/x/libcudart-1234abcd.so.12",
// "libtorch_cuda.so"). Sub-libraries map to their family: libcudnn_ops/_cnn/_adv/
// _graph/_engines_* -> "cudnn", libcufftw -> "cufft", libcusolverMg -> "cusolver".
// Wheel-mangled names (auditwheel's "-<8 hex>" suffix) are recognised.
LibraryFamily ClassifyLibrary(std::string_view soname_or_path);

// The N of "lib*.so.N[.M...]", or nullopt.
std::optional<int> SonameMajor(std::string_view soname);

// CUDA major for a PTX ISA version: 7.x -> 11, 8.x -> 12, 9.x -> 13; 6.0-6.2 -> 9,
// 6.3-6.5 -> 10. nullopt for older or unknown ISAs.
std::optional<int> CudaMajorForPtxIsa(int isa_major, int isa_minor);

enum class CudaMajorSource {
  kSoname,      // the library's own soname (libcudart.so.13)
  kVerdef,      // a version it defines, named after a CUDA library (libcudart.so.13)
  kDependency,  // a CUDA library it needs (DT_NEEDED/verneed libnvJitLink.so.13)
  kDeviceCode,  // weak: the toolkit release recorded in its device code, or its PTX ISA
                // (only from DeviceCodeCudaRelease, never from DetectCudaMajor)
};

struct CudaMajor {
  int major = 0;
  CudaMajorSource source = CudaMajorSource::kSoname;
  std::string evidence;  // e.g. "needs libnvJitLink.so.13", "PTX ISA 9.0"
};

// The CUDA major `image` links against or is named for, from the first evidence found
// in the order of CudaMajorSource: its soname (a family whose soname major is the CUDA
// major), a version it defines, a CUDA library or version it needs (DT_NEEDED,
// verneed). nullopt when nothing tells, e.g. libcudnn.so.9, libcufft.so.12 (it needs no
// CUDA library: it reaches the driver through dlopen), libcufile.so.0 or libstdc++.
std::optional<CudaMajor> DetectCudaMajor(const ElfImage& image);

// Weak evidence only (source kDeviceCode): the toolkit release ptxas records in the
// first cubin (`Cuda compilation tools, release 13.0`), else the one NVVM writes in the
// newest PTX, else that PTX's ISA version (7.x -> 11, 8.x -> 12, 9.x -> 13). At most one
// PTX and one cubin entry are decompressed (each bounded to 64 MiB). It says which
// compiler built the kernels, not which runtime the library needs.
std::optional<CudaMajor> DeviceCodeCudaRelease(const FatbinListing& listing);

}  // namespace colabtrace::elf
