// LibrarySearch: where else on this machine a library a process failed to load exists.
//
// A bounded, non-recursive look in the places libraries usually live: the process's
// LD_LIBRARY_PATH (at start, and any value it set later, which the loader ignores), the
// requesting object's RUNPATH/RPATH ($ORIGIN expanded), the entries of /etc/ld.so.cache,
// the default directories, /usr/local/cuda*/lib64 (and targets/*/lib), and the
// site-packages / dist-packages roots the trace shows (nvidia/*/lib, torch/lib,
// *.libs), plus the lib/ of the interpreter's prefix. At most kMaxDirs directories, each
// read once.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "abi/library_inventory.h"
#include "trace/process_trace.h"

namespace colabtrace::analyzer::abi {

struct SearchDir {
  std::string path;
  std::string why;  // "LD_LIBRARY_PATH", "LD_LIBRARY_PATH set at run time", "ld.so.cache", ...
};

struct FoundCopy {
  std::string path;
  std::string why;  // the SearchDir::why of its directory
};

class LibrarySearch {
 public:
  static constexpr size_t kMaxDirs = 512;

  // Collects the directories for one process.
  LibrarySearch(const ProcessTrace& trace, const LibraryInventory& inventory);

  // Adds directories (e.g. a requester's RUNPATH) searched before the others.
  void AddFirst(const std::vector<SearchDir>& dirs);

  // Regular files named exactly `file_name` (a bare soname) in the directories.
  std::vector<FoundCopy> FindCopies(std::string_view file_name, size_t max = 16) const;

  // Files with the same library stem but another name (libcudnn.so.9 for libcudnn.so.8).
  std::vector<FoundCopy> FindOtherVersions(std::string_view file_name, size_t max = 16) const;

  const std::vector<SearchDir>& dirs() const { return dirs_; }

 private:
  void Add(std::string path, std::string why);
  std::vector<SearchDir> dirs_;
  std::vector<std::pair<std::string, std::string>> cache_;  // ld.so.cache: name -> path
};

// Parses ld.so.cache bytes (the "glibc-ld.so.cache1.1" format, optionally after the old
// "ld.so-1.7.0" table) into (name, path) pairs. Untrusted: bounded, never throws.
std::vector<std::pair<std::string, std::string>> ParseLdSoCache(std::string_view bytes);

// RUNPATH (or, without it, RPATH) directories of an object, with $ORIGIN, $LIB and
// $PLATFORM expanded as glibc does on x86-64.
std::vector<SearchDir> RunpathDirs(const std::string& object_path, const std::string& runpath,
                                   const std::string& rpath);

}  // namespace colabtrace::analyzer::abi
