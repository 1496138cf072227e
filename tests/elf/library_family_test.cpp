#include "elf/library_family.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "test_util.h"

#ifndef ELFTEST_NVCC_MAJOR
#define ELFTEST_NVCC_MAJOR 0
#endif

namespace colabtrace::elf {
namespace {

using ::testing::HasSubstr;
using namespace colabtrace::elf::testing;

TEST(LibraryFamilyTest, Classify) {
  struct Case {
    std::string_view name;
    std::string_view family;
    LibraryGroup group;
    std::optional<int> major;
    bool cuda_major;
  };
  using G = LibraryGroup;
  const Case cases[] = {
      {"libcudart.so.12", "cudart", G::kCudaToolkit, 12, true},
      {"/usr/local/cuda/lib64/libcublasLt.so.13", "cublasLt", G::kCudaToolkit, 13, true},
      {"libcublas.so.12.4.5.8", "cublas", G::kCudaToolkit, 12, true},
      {"libcudart-9335f6a2.so.12", "cudart", G::kCudaToolkit, 12, true},  // auditwheel
      {"libnvrtc.so.13", "nvrtc", G::kCudaToolkit, 13, true},
      {"libnvrtc-builtins.so.13.0", "nvrtc", G::kCudaToolkit, 13, true},
      {"libnvrtc.alt.so.13", "nvrtc", G::kCudaToolkit, 13, true},
      {"libnvJitLink.so.13", "nvJitLink", G::kCudaToolkit, 13, true},
      {"libcupti.so.13", "cupti", G::kCudaToolkit, 13, true},
      {"libcufft.so.12", "cufft", G::kCudaToolkit, 12, false},
      {"libcufftw.so.12", "cufft", G::kCudaToolkit, 12, false},
      {"libcurand.so.10", "curand", G::kCudaToolkit, 10, false},
      {"libcusparse.so.12", "cusparse", G::kCudaToolkit, 12, false},
      {"libcusolverMg.so.12", "cusolver", G::kCudaToolkit, 12, false},
      {"libcusparseLt.so.0", "cusparseLt", G::kNvidiaLibrary, 0, false},
      {"libcudnn.so.9", "cudnn", G::kNvidiaLibrary, 9, false},
      {"libcudnn_ops.so.9", "cudnn", G::kNvidiaLibrary, 9, false},
      {"libcudnn_cnn.so.9", "cudnn", G::kNvidiaLibrary, 9, false},
      {"libcudnn_adv.so.9.1.0", "cudnn", G::kNvidiaLibrary, 9, false},
      {"libcudnn_graph.so.9", "cudnn", G::kNvidiaLibrary, 9, false},
      {"libcudnn_engines_precompiled.so.9", "cudnn", G::kNvidiaLibrary, 9, false},
      {"libcudnn_engines_runtime_compiled.so.9", "cudnn", G::kNvidiaLibrary, 9, false},
      {"libnccl.so.2", "nccl", G::kNvidiaLibrary, 2, false},
      {"libcuda.so.1", "cuda-driver", G::kCudaDriver, 1, false},
      {"libnvidia-ml.so.1", "nvml", G::kCudaDriver, 1, false},
      {"libstdc++.so.6", "libstdc++", G::kSystem, 6, false},
      {"libgcc_s.so.1", "libgcc_s", G::kSystem, 1, false},
      {"libc.so.6", "glibc", G::kSystem, 6, false},
      {"ld-linux-x86-64.so.2", "glibc", G::kSystem, 2, false},
      {"libtorch_cuda.so", "torch", G::kFramework, std::nullopt, false},
      {"libtorch.so", "torch", G::kFramework, std::nullopt, false},
      {"libc10_cuda.so", "torch", G::kFramework, std::nullopt, false},
      {"libfoo.so.3", "", G::kUnknown, 3, false},
      {"libcudart", "cudart", G::kCudaToolkit, std::nullopt, false},  // no major: not usable
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const LibraryFamily f = ClassifyLibrary(c.name);
    EXPECT_EQ(f.family, c.family);
    EXPECT_EQ(f.group, c.group);
    EXPECT_EQ(f.soname_major, c.major);
    EXPECT_EQ(f.soname_major_is_cuda_major, c.cuda_major);
  }
}

TEST(LibraryFamilyTest, SonameMajorAndPtxIsa) {
  EXPECT_EQ(SonameMajor("libx.so.1.2.3"), 1);
  EXPECT_EQ(SonameMajor("libx.so"), std::nullopt);
  EXPECT_EQ(SonameMajor("libx.so.abc"), std::nullopt);
  EXPECT_EQ(SonameMajor("libx.so."), std::nullopt);
  EXPECT_EQ(CudaMajorForPtxIsa(9, 0), 13);
  EXPECT_EQ(CudaMajorForPtxIsa(8, 8), 12);
  EXPECT_EQ(CudaMajorForPtxIsa(8, 0), 12);
  EXPECT_EQ(CudaMajorForPtxIsa(7, 8), 11);
  EXPECT_EQ(CudaMajorForPtxIsa(6, 4), 10);
  EXPECT_EQ(CudaMajorForPtxIsa(6, 0), 9);
  EXPECT_EQ(CudaMajorForPtxIsa(5, 0), std::nullopt);
}

std::optional<CudaMajor> Detect(const std::string& path) {
  absl::StatusOr<ElfImage> image = ElfImage::Open(path);
  EXPECT_TRUE(image.ok()) << image.status();
  return image.ok() ? DetectCudaMajor(*image) : std::nullopt;
}

TEST(LibraryFamilyTest, DetectCudaMajorOnCuda13Libraries) {
  const std::string dir = kCudaLib;
  struct Case {
    std::string file;
    std::optional<int> major;
    CudaMajorSource source;
    std::string evidence;
  };
  const Case cases[] = {
      {"libcudart.so.13", 13, CudaMajorSource::kSoname, "soname libcudart.so.13"},
      {"libcublasLt.so.13", 13, CudaMajorSource::kSoname, "soname libcublasLt.so.13"},
      // cuSPARSE 12 ships with CUDA 13; its dependency tells.
      {"libcusparse.so.12", 13, CudaMajorSource::kDependency, "needs libnvJitLink.so.13"},
      {"libcusolver.so.12", 13, CudaMajorSource::kDependency, "needs libnvJitLink.so.13"},
      // cuFFT 12 needs no CUDA library (it reaches the driver by dlopen) and cuDNN's
      // sub-libraries need only cuDNN: nothing they link against names a CUDA major, and
      // their device code is no dependency.
      {"libcufft.so.12", std::nullopt, CudaMajorSource::kSoname, ""},
      {"libcudnn_ops.so.9", std::nullopt, CudaMajorSource::kSoname, ""},
      {"libcudnn.so.9", std::nullopt, CudaMajorSource::kSoname, ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file);
    if (!FileExists(dir + "/" + c.file)) continue;
    const std::optional<CudaMajor> m = Detect(dir + "/" + c.file);
    ASSERT_EQ(m.has_value(), c.major.has_value()) << (m ? m->evidence : "");
    if (!m) continue;
    EXPECT_EQ(m->major, *c.major);
    EXPECT_EQ(m->source, c.source);
    EXPECT_THAT(m->evidence, HasSubstr(c.evidence));
  }
}

TEST(LibraryFamilyTest, DeviceCodeIsOnlyWeakEvidence) {
  // cuFFT's registered device code was built by the CUDA 13 compiler: shown as weak
  // evidence, never as the library's major.
  const std::string cufft = std::string(kCudaLib) + "/libcufft.so.12";
  if (!FileExists(cufft)) GTEST_SKIP() << cufft << " not installed";
  absl::StatusOr<ElfImage> image = ElfImage::Open(cufft);
  ASSERT_TRUE(image.ok()) << image.status();
  EXPECT_EQ(DetectCudaMajor(*image), std::nullopt);
  const std::optional<CudaMajor> weak = DeviceCodeCudaRelease(ListFatbinEntries(*image));
  ASSERT_TRUE(weak.has_value());
  EXPECT_EQ(weak->major, 13);
  EXPECT_EQ(weak->source, CudaMajorSource::kDeviceCode);
  EXPECT_THAT(weak->evidence, HasSubstr("built by CUDA 13."));
}

TEST(LibraryFamilyTest, DetectCudaMajorIsEmptyForHostLibraries) {
  EXPECT_EQ(Detect(ELFTEST_PROVIDER), std::nullopt);
  if (FileExists(kLibStdcxx)) {
    EXPECT_EQ(Detect(kLibStdcxx), std::nullopt);
  }
}

TEST(LibraryFamilyTest, DetectCudaMajorOnNvccFixtures) {
  if (std::string(ELFTEST_FATBIN_MIX).empty()) GTEST_SKIP() << "nvcc not found";
  // -cudart shared: the library needs libcudart.so.<nvcc major>.
  std::optional<CudaMajor> m = Detect(ELFTEST_FATBIN_MIX);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->major, ELFTEST_NVCC_MAJOR);
  EXPECT_EQ(m->source, CudaMajorSource::kDependency);
  // A relocatable object needs nothing: no major. ptxas's note in its cubin names the
  // compiler, weak evidence only.
  EXPECT_EQ(Detect(ELFTEST_FATBIN_RDC), std::nullopt);
  absl::StatusOr<ElfImage> rdc = ElfImage::Open(ELFTEST_FATBIN_RDC);
  ASSERT_TRUE(rdc.ok());
  m = DeviceCodeCudaRelease(ListFatbinEntries(*rdc));
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->major, ELFTEST_NVCC_MAJOR);
  EXPECT_EQ(m->source, CudaMajorSource::kDeviceCode);
  EXPECT_THAT(m->evidence, HasSubstr("cubin sm_86 built by CUDA"));
}

}  // namespace
}  // namespace colabtrace::elf
