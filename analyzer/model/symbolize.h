// Offline symbolization of native stacks from a trace's module map.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <utility>
#include <string>
#include <string_view>
#include <vector>

#include "trace/process_trace.h"

namespace colabtrace::analyzer {

inline constexpr std::string_view kSignalFrame = "<signal handler called>";

// Turns return addresses into "function+0xoff (libfoo.so+0xoff)" lines using the
// trace's Module records and, where the file still exists, its ELF symbol tables.
// Frames outside every known module print as bare addresses.
// A frame where a signal handler returns to the interrupted code (the signal
// trampoline) reads "<signal handler called> (libc.so.6+0x...)", as in gdb: the frames
// before it ran inside a signal handler.
//
// It keeps each file's symbol table once read (by path and build id), so a run's many
// stacks read each library once: the run model owns one (RunModel::symbols()).
class SymbolCache {
 public:
  // sysroot: --sysroot DIR (RunOptions; "" for none). A library's symbols are read from
  // <sysroot><path> when that file has the recorded build id, else from <path>, as
  // abi::LibraryFiles picks library files (gdb's convention).
  explicit SymbolCache(std::string sysroot = {});
  ~SymbolCache();
  SymbolCache(const SymbolCache&) = delete;
  SymbolCache& operator=(const SymbolCache&) = delete;

  // One line per frame, in order: the shim's own frames as empty strings.
  std::vector<std::string> Frames(const ProcessTrace& trace, const std::vector<uint64_t>& frames);
  // Frames without the shim's own.
  std::vector<std::string> Stack(const ProcessTrace& trace, const std::vector<uint64_t>& frames);

 private:
  struct Table;
  std::string sysroot_;  // absolute, without a trailing '/'; "" for none
  std::map<std::pair<std::string, std::string>, std::unique_ptr<Table>> tables_;
};

// --sysroot DIR as every reader of recorded files uses it: absolute (relative to the
// working directory), no trailing '/', and "" for none or for "/" (this machine's root).
std::string NormalizeSysroot(std::string sysroot);

// A C++ symbol in source form ("_Z5scalePf" -> "scale(float*)"); anything that is not an
// Itanium-mangled name (a C function, an extern "C" kernel) unchanged.
std::string Demangle(const std::string& name);

}  // namespace colabtrace::analyzer
