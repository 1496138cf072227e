// LibraryFiles: the one place where the analyzer decides which file on this machine to
// read for a library a trace recorded, and keeps count of what it could not read.
//
// A trace names libraries by the paths they had on the recording host. Checks that read
// their bytes (device code, CUDA majors, symbol versions, static runtimes) look each path
// up under --sysroot DIR first (gdb's convention), then at the path itself, and use a
// file only when it is provably the loaded one: its build id is the recorded one, or, on
// the recording host, it is the same file (dev, inode, size, mtime). Checks of the disk
// as it is now (a library replaced during the run) read the path itself, and only on the
// recording host (HostOrigin). Every check that wanted a file and got none says so
// (Skipped), and the report lists those (Summary): a trace read on a laptop never loses a
// check silently.
#pragma once

#include <cstdint>
#include <ctime>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include "abi/file_facts.h"
#include "abi/library_inventory.h"
#include "model/local_host.h"
#include "core/json.h"
#include "trace/process_trace.h"

namespace colabtrace::analyzer::abi {

// The recording host against this one (model/local_host.h), as the library checks use it.
using analyzer::HostOrigin;
using analyzer::HostOriginOf;
using analyzer::LocalHost;

// True when the file has the loaded object's recorded identity (dev, inode, size, mtime).
bool SameIdentity(const LoadedLibrary& o, const FileFacts& f);
// True when the file on disk is (still) the one the process loaded: the same identity,
// the same build id, or no identity recorded to compare with.
bool SameAsLoaded(const LoadedLibrary& o, const FileFacts& f);
// A struct timespec in nanoseconds.
uint64_t TimespecNs(const struct timespec& t);

// How the file of a loaded library was proved to be the loaded one.
enum class FileMatch {
  kNone,      // no file read
  kSameFile,  // the recorded path on the recording host, same dev/inode/size/mtime (or
              // no identity recorded to compare with)
  kBuildId,   // its build id is the recorded one (under the sysroot, or another host)
};

struct LibraryFile {
  FileFacts* file = nullptr;  // the loaded object's bytes; nullptr when none is readable
  FileMatch match = FileMatch::kNone;
  bool from_sysroot = false;
};

class LibraryFiles {
 public:
  // `sysroot`: --sysroot DIR, or "" for none.
  explicit LibraryFiles(std::string sysroot = {});

  const std::string& sysroot() const { return sysroot_; }
  // The parsed files (fatbin listings, CUDA majors), by the path read.
  FileFactsCache& cache() { return cache_; }

  // The file holding `o` as the process loaded it: <sysroot><path> (build id must match),
  // then <path> (build id must match; on the recording host the same file also does).
  // Counted for Summary() once per recorded (path, build id).
  LibraryFile Loaded(const LoadedLibrary& o, const HostOrigin& host);

  // The file now at o's recorded path, for its state on disk (libraries[].on_disk,
  // abi.stale-library): on the recording host whatever is there; elsewhere only a file
  // with o's build id. Never under the sysroot: a copy says nothing of the recording
  // host's disk.
  FileFacts* AtRecordedPath(const LoadedLibrary& o, const HostOrigin& host);

  // A file a trace names by path only, with no build id to check it by (the object a
  // dlerror names that was never loaded): <sysroot><path> when it exists, else the path
  // itself on the recording host; nullptr otherwise.
  FileFacts* Named(const std::string& path, const HostOrigin& host);

  // A check (a finding id) could not do its work for `what` (a path, a failed load)
  // because `why`. Listed by Summary(), each `what` counted once per (check, why).
  void Skipped(std::string_view check, std::string_view why, std::string_view what);

  // The report's libraries_files object: {sysroot, recorded, readable, same_file,
  // matched_by_build_id, from_sysroot, unreadable, unreadable_sample[],
  // skipped_checks[{check, why, count, examples[]}]}.
  Json Summary() const;
  // A Summary() object in lines, for the text report.
  static std::string SummaryText(const Json& summary);

 private:
  FileFacts* AtPath(const std::string& path);  // the cache's facts, or nullptr for no file

  std::string sysroot_;  // without a trailing '/'
  FileFactsCache cache_;
  struct Recorded {
    FileMatch match = FileMatch::kNone;
    bool from_sysroot = false;
  };
  std::map<std::pair<std::string, std::string>, Recorded> recorded_;  // (path, build id)
  std::map<std::pair<std::string, std::string>, std::set<std::string>> skipped_;  // (check, why)
};

}  // namespace colabtrace::analyzer::abi
