// Builds small traces of library loads in memory (LibLoad, LibUnload, GpuDevice, HostInfo,
// Exit records) for golden tests of the library / ABI analysis (tests/libs and
// tests/findings/abi), and finds the library fixtures tests/libs/CMakeLists.txt builds.
// Each record advances the clock by 1 us.
#pragma once

#include <dlfcn.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "colabtrace/format/codec.h"
#include "elf/elf_image.h"
#include "trace/process_trace.h"
#include "trace_builder.h"

namespace colabtrace::abitest {

namespace ctf = colabtrace::format;
using analyzer::ProcessTrace;

class TraceBuilder {
 public:
  explicit TraceBuilder(uint32_t pid, bool ended = true) : b_(pid, 1000, ended) {}
  void Tick() { now_ += 1000; }
  uint64_t Str(const std::string& s) { return s.empty() ? 0 : b_.AppendString(s, now_); }
  template <class R> void Add(R r) {
    r.ts = now_;
    b_.Append(r);
  }
  // An object record (fresh) or a call record.
  void Load(ctf::LibApi api, const std::string& path, uint64_t base, const std::string& requester,
            uint64_t fresh = 1, int64_t flags = 0, uint64_t ino = 0, bool ok = true,
            const std::string& error = "", const std::string& requested = "") {
    ctf::LibLoad r;
    r.api = static_cast<uint64_t>(api);
    r.path = Str(path);
    r.soname = Str(path.substr(path.rfind('/') + 1));
    r.requester = Str(requester);
    r.requested = Str(requested.empty() ? path : requested);
    r.error = Str(error);
    r.base = base;
    r.fresh = fresh;
    r.flags = flags;
    r.ok = ok ? 1 : 0;
    r.ino = ino;
    r.dev = ino != 0 ? 7 : 0;
    r.size = ino != 0 ? 100 : 0;
    Add(r);
    Tick();
  }
  // An object the program opened by its path, with the given soname ("" for none, as a
  // Python extension module has) and build id (hex).
  void LoadObject(ctf::LibApi api, const std::string& path, uint64_t base, const std::string& soname,
                  const std::string& build_id_hex = "", const std::string& requester = "/bin/prog") {
    std::vector<uint8_t> id;
    for (size_t i = 0; i + 1 < build_id_hex.size(); i += 2) {
      id.push_back(static_cast<uint8_t>(std::stoi(build_id_hex.substr(i, 2), nullptr, 16)));
    }
    ctf::LibLoad r;
    r.api = static_cast<uint64_t>(api);
    r.path = Str(path);
    r.soname = Str(soname);
    r.requester = Str(requester);
    r.requested = Str(path);
    r.base = base;
    r.fresh = 1;
    r.flags = RTLD_NOW;
    r.ok = 1;
    r.build_id = ctf::Bytes{id.data(), static_cast<uint32_t>(id.size())};
    Add(r);
    Tick();
  }
  void Device(uint64_t cc_major, uint64_t cc_minor) {
    ctf::GpuDevice d;
    d.name = Str("GPU");
    d.cc_major = cc_major;
    d.cc_minor = cc_minor;
    Add(d);
    Tick();
  }
  void Host(const std::string& key, const std::string& value) {
    ctf::HostInfo h;
    h.key = Str(key);
    h.value = Str(value);
    Add(h);
  }
  void Exit(int64_t code) {
    ctf::Exit e;
    e.code = code;
    Add(e);
    Tick();
  }
  void Unmap(uint64_t base) {
    ctf::LibUnload u;
    u.base = base;
    u.api = static_cast<uint64_t>(ctf::LibUnloadApi::kUnmapped);
    Add(u);
    Tick();
  }
  ProcessTrace Finish() { return b_.Parse(); }

 private:
  ::colabtrace::testing::TraceBytesBuilder b_;
  uint64_t now_ = 1000;
};

#ifdef CT_LIBS_DIR
// A fixture built by tests/libs/CMakeLists.txt (rel below its build folder), or "" when
// it was not built.
inline std::string Fixture(const std::string& rel) {
  const std::string path = std::string(CT_LIBS_DIR) + "/" + rel;
  std::ifstream f(path);
  return f ? path : "";
}
#endif

// The library's build id (hex), as the shim records it; "" when it has none.
inline std::string BuildIdOf(const std::string& path) {
  auto image = colabtrace::elf::ElfImage::Open(path);
  return image.ok() ? image->build_id() : "";
}

}  // namespace colabtrace::abitest
