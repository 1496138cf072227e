// The run model's SymbolCache: a library's symbols come from <sysroot><path> when that
// copy has the recorded build id (a trace read on another machine, with --sysroot), and
// a copy with another build id is never used; without one the frame stays an offset.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "../../harness/gpu_trace_builder.h"
#include "elf/elf_image.h"
#include "model/symbolize.h"

extern "C" __attribute__((noinline, used)) int ColabtraceSymbolizeProbe(int x) { return x * 3 + 1; }

namespace {

namespace fs = std::filesystem;
namespace ctf = colabtrace::format;
using colabtrace::analyzer::SymbolCache;

constexpr uint64_t kBase = 0x10000000;
const char* const kRecordedPath = "/colabtrace-test/not-here/libprobe.so";

std::vector<uint8_t> Unhex(const std::string& hex) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) out.push_back(static_cast<uint8_t>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}

class SymbolCacheSysroot : public ::testing::Test {
 protected:
  void SetUp() override {
    self_ = fs::read_symlink("/proc/self/exe").string();
    auto image = colabtrace::elf::ElfImage::Open(self_);
    ASSERT_TRUE(image.ok());
    build_id_ = image->build_id();
    ASSERT_FALSE(build_id_.empty()) << "the test binary has no build id";
    Dl_info info{};
    ASSERT_NE(dladdr(reinterpret_cast<void*>(&ColabtraceSymbolizeProbe), &info), 0);
    probe_offset_ = reinterpret_cast<uint64_t>(&ColabtraceSymbolizeProbe) - reinterpret_cast<uint64_t>(info.dli_fbase);
    root_ = fs::temp_directory_path() / ("ct-symbolize-" + std::to_string(getpid()));
    fs::create_directories(root_ / "sysroot/colabtrace-test/not-here");
    fs::copy_file(self_, root_ / "sysroot/colabtrace-test/not-here/libprobe.so");
  }
  void TearDown() override { fs::remove_all(root_); }

  // One frame at the probe, in a module recorded at kRecordedPath with `build_id`.
  std::vector<std::string> Symbolize(const std::string& sysroot, const std::string& build_id) {
    colabtrace::gputest::TraceBuilder b(4242);
    const std::vector<uint8_t> id = Unhex(build_id);
    ctf::Module m;
    m.path = b.Str(kRecordedPath);
    m.base = kBase;
    m.size = 0x10000000;
    m.build_id = ctf::Bytes{id.data(), static_cast<uint32_t>(id.size())};
    b.Add(m);
    const colabtrace::analyzer::ProcessTrace t = b.Finish();
    SymbolCache symbols(sysroot);
    return symbols.Stack(t, {kBase + probe_offset_});
  }

  std::string self_, build_id_;
  uint64_t probe_offset_ = 0;
  fs::path root_;
};

TEST_F(SymbolCacheSysroot, NamesTheFunctionFromTheSysrootCopyWithTheRecordedBuildId) {
  const std::vector<std::string> frames = Symbolize((root_ / "sysroot").string(), build_id_);
  ASSERT_EQ(frames.size(), 1u);
  char offset[32];
  std::snprintf(offset, sizeof(offset), "0x%llx", static_cast<unsigned long long>(probe_offset_));
  EXPECT_EQ(frames[0], "ColabtraceSymbolizeProbe+0x0 (libprobe.so+" + std::string(offset) + ")");
}

TEST_F(SymbolCacheSysroot, NeverUsesACopyWithAnotherBuildId) {
  std::string other = build_id_;
  other[0] = other[0] == '0' ? '1' : '0';
  const std::vector<std::string> frames = Symbolize((root_ / "sysroot").string(), other);
  ASSERT_EQ(frames.size(), 1u);
  char offset[32];
  std::snprintf(offset, sizeof(offset), "0x%llx", static_cast<unsigned long long>(probe_offset_));
  EXPECT_EQ(frames[0], "libprobe.so+" + std::string(offset));
}

TEST_F(SymbolCacheSysroot, WithoutASysrootTheMissingFileLeavesAnOffset) {
  const std::vector<std::string> frames = Symbolize("", build_id_);
  ASSERT_EQ(frames.size(), 1u);
  char offset[32];
  std::snprintf(offset, sizeof(offset), "0x%llx", static_cast<unsigned long long>(probe_offset_));
  EXPECT_EQ(frames[0], "libprobe.so+" + std::string(offset));
}

TEST(NormalizeSysroot, AbsoluteWithoutTrailingSlashAndRootIsNone) {
  using colabtrace::analyzer::NormalizeSysroot;
  EXPECT_EQ(NormalizeSysroot("/a/b/"), "/a/b");
  EXPECT_EQ(NormalizeSysroot("/"), "");
  EXPECT_EQ(NormalizeSysroot(""), "");
  EXPECT_EQ(NormalizeSysroot("rel/dir"), (fs::current_path() / "rel/dir").lexically_normal().string());
}

}  // namespace
