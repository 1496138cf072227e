#include "io/file_stats.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <tuple>

#include "absl/container/flat_hash_set.h"
#include "model/process_facts.h"
#include "report/report.h"

namespace colabtrace::analyzer::io {

using format::IoApi;

// ---- size bins ----------------------------------------------------------------------------

namespace {
constexpr uint64_t kBinUpper[kSizeBins - 1] = {
    100, 1024, 10240, 102400, 1048576, 4194304, 10485760, 104857600, 1073741824};
constexpr std::string_view kBinNames[kSizeBins] = {
    "0-100", "100-1K", "1K-10K", "10K-100K", "100K-1M",
    "1M-4M", "4M-10M", "10M-100M", "100M-1G", "1G+"};
}  // namespace

std::string_view SizeBinName(int bin) {
  return bin >= 0 && bin < kSizeBins ? kBinNames[bin] : std::string_view("?");
}

int SizeBin(uint64_t bytes) {
  for (int i = 0; i < kSizeBins - 1; ++i) {
    if (bytes <= kBinUpper[i]) return i;
  }
  return kSizeBins - 1;
}

uint64_t SizeHistogram::total() const {
  uint64_t n = 0;
  for (uint64_t c : counts) n += c;
  return n;
}

uint64_t FileStats::BestSize() const {
  if (size) return std::max(*size, max_end);
  if (eof_at != 0) return eof_at;
  return max_end;
}

// ---- paths ----------------------------------------------------------------------------------

std::string NormalizePath(std::string_view p) {
  const bool absolute = !p.empty() && p[0] == '/';
  std::vector<std::string_view> parts;
  size_t i = 0;
  while (i < p.size()) {
    while (i < p.size() && p[i] == '/') ++i;
    size_t j = i;
    while (j < p.size() && p[j] != '/') ++j;
    const std::string_view part = p.substr(i, j - i);
    i = j;
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      if (!parts.empty() && parts.back() != "..") {
        parts.pop_back();
      } else if (!absolute) {
        parts.push_back(part);
      }
      continue;
    }
    parts.push_back(part);
  }
  std::string out = absolute ? "/" : "";
  for (size_t k = 0; k < parts.size(); ++k) {
    if (k > 0) out += '/';
    out += parts[k];
  }
  if (out.empty()) out = ".";
  return out;
}

std::string_view DirOf(std::string_view path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string_view::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

bool IsDataFile(const FileStats& f, const std::vector<MountRow>& mounts) {
  if (f.directory || f.code) return false;
  if (f.mount >= 0 && static_cast<size_t>(f.mount) < mounts.size() &&
      mounts[static_cast<size_t>(f.mount)].fs.cls == FsClass::kPseudo) {
    return false;
  }
  return true;
}

namespace {

bool EndsWith(std::string_view s, std::string_view suffix) { return s.ends_with(suffix); }

// A failed open followed, within this many opens of the same process, by a successful
// open of the same file name in another directory was a search-path step
// (FileStats::search_misses): a compiler tries each -I directory for <cstdlib>, the
// linker each -L directory for libfoo.a, before the one that has it. 32 covers ld's two
// names per directory over its default directories.
constexpr uint64_t kSearchWindow = 32;

// Python and native code, interpreter, compiler and tool configuration, version-control
// state, pseudo files. Programs probe for these all the time (a compiler tries each
// include directory in turn, CPython looks for pyvenv.cfg and ._pth files at every start,
// git for .gitignore in every directory and for optional files under .git/), so a failed
// open of one is a search, not a missing data file; and reading them is not dataset I/O.
bool LooksLikeCode(std::string_view p) {
  // /dev/shm holds regular files on tmpfs: data staged in memory, not device nodes.
  if (p.starts_with("/dev/shm/")) return false;
  static constexpr std::string_view kPrefixes[] = {
      "/proc/", "/sys/", "/dev/", "/etc/", "/run/", "/lib/", "/lib64/", "/usr/lib/",
      "/usr/lib64/", "/usr/local/lib/", "/usr/libexec/", "/usr/share/", "/usr/include/",
      "/usr/local/include/",
      // Program directories: CPython's start-up looks for /usr/bin/Modules/Setup.local
      // and /usr/bin/lib/python311.zip next to its executable; shells search PATH.
      "/bin/", "/sbin/", "/usr/bin/", "/usr/sbin/", "/usr/local/bin/", "/usr/local/sbin/"};
  for (std::string_view pre : kPrefixes) {
    // The system directory itself too ("/etc" as well as "/etc/..."): NSS's userdb
    // lookups open "/", "/etc", "/run" and "/usr" one component at a time.
    if (p.starts_with(pre) || p == pre.substr(0, pre.size() - 1)) return true;
  }
  // Their ancestors: "/", "/usr", "/usr/local" are no dataset's files.
  if (p == "/" || p == "/usr" || p == "/usr/local") return true;
  static constexpr std::string_view kParts[] = {
      "/site-packages/", "/dist-packages/", "/__pycache__/", "/.pyenv/", "/.cache/pip/",
      "/.local/lib/python", "/.triton/", "/.nv/", "/.git/", "/.config/", "/node_modules/",
      // Package metadata wherever it lies (pip builds it under /tmp/pip-*): readers such
      // as importlib.metadata try each optional file (requires.txt, entry_points.txt).
      ".dist-info/", ".egg-info/"};
  for (std::string_view part : kParts) {
    if (p.find(part) != std::string_view::npos) return true;
  }
  static constexpr std::string_view kSuffixes[] = {
      // Static archives too: the linker tries libfoo.a next to libfoo.so in every -L
      // directory (and ctypes.util.find_library runs it for libraries that may not exist).
      ".py", ".pyc", ".pyi", ".pth", ".so", ".a", ".egg-link", ".dist-info", ".ctrace",
      ".h", ".hh", ".hpp", ".hxx", "._pth", "/pyvenv.cfg", "/pybuilddir.txt",
      // Configuration files (openssl.cnf at a library's compiled-in default path,
      // Cargo.toml, setup.cfg, *.conf, *.ini): tools try them whether or not they exist.
      ".cnf", ".conf", ".cfg", ".ini", ".toml"};
  for (std::string_view suf : kSuffixes) {
    if (EndsWith(p, suf)) return true;
  }
  // Dotfiles (.gitignore, .pdbrc, .inputrc, .netrc...): per-user or per-directory
  // configuration.
  const size_t slash = p.rfind('/');
  if (slash != std::string_view::npos && slash + 1 < p.size() && p[slash + 1] == '.') return true;
  return p.find(".so.") != std::string_view::npos;
}

void AddError(FileStats& f, int err, std::string_view op) {
  for (auto& [e, n] : f.errors) {
    if (e == err) {
      ++n;
      return;
    }
  }
  f.errors.emplace_back(err, 1);
  if (f.error_ops.size() < 4) f.error_ops.push_back(std::string(op) + " " + ErrnoName(err));
}

void AddPid(FileStats& f, uint32_t pid) {
  if (std::find(f.pids.begin(), f.pids.end(), pid) == f.pids.end()) f.pids.push_back(pid);
}

}  // namespace

size_t IoModel::FileIndex(const std::string& normalized) {
  std::string key = multi_host ? host_ + '\0' + normalized : normalized;
  auto it = by_path_.find(key);
  if (it != by_path_.end()) return it->second;
  const size_t idx = files.size();
  files.emplace_back();
  files.back().path = normalized;
  if (multi_host) files.back().host = host_;
  files.back().code = LooksLikeCode(normalized);
  by_path_.emplace(std::move(key), idx);
  return idx;
}

int32_t IoModel::MountIndex(const format::Mount& m, std::string_view fstype, std::string_view mp,
                            std::string_view source) {
  std::string key = multi_host ? host_ + '\0' : std::string();
  key += std::to_string(m.id);
  key += '\0';
  key.append(mp);
  key += '\0';
  key.append(fstype);
  const auto [it, fresh] = mount_by_key_.emplace(std::move(key), static_cast<int32_t>(mounts.size()));
  if (!fresh) return it->second;
  MountRow r;
  r.id = m.id;
  r.dev = m.dev;
  r.fstype = std::string(fstype);
  r.mountpoint = std::string(mp);
  r.source = std::string(source);
  r.fs = ClassifyFilesystem(fstype, source);
  mounts.push_back(std::move(r));
  return static_cast<int32_t>(mounts.size() - 1);
}

// ---- replay of one process ---------------------------------------------------------------

class ProcessReplay {
 public:
  ProcessReplay(IoModel& model, const ProcessTrace& t, ProcessIo& proc)
      : m_(model), t_(t), p_(proc) {}

  void Run() {
    const auto& r = t_.records;
    for (const auto& mnt : r.Mount) {
      const int32_t idx = m_.MountIndex(mnt, t_.Str(mnt.fstype), t_.Str(mnt.mountpoint),
                                        t_.Str(mnt.source));
      mount_by_id_.emplace(mnt.id, idx);
      // The later of two mounts on one point wins (it hides the earlier one).
      mount_by_point_[m_.mounts[static_cast<size_t>(idx)].mountpoint] = idx;
    }
    if (IoFromAggregates(t_)) {
      FromAggregates();
    } else {
      FromEvents();
    }
    for (const auto& [path_id, idx] : file_by_str_) ResolveMount(idx);
    for (const auto& [fd, idx] : unknown_fd_files_) ResolveMount(idx);
    for (const auto& [path_id, idx] : tmpfile_files_) ResolveMount(idx);
    for (const auto& [path_id, idx] : summed_dirs_) ResolveMount(idx);
    p_.files = touched_.size();
    for (size_t idx : touched_) AddPid(m_.files[idx], p_.pid);
  }

 private:
  // What a file's row and its process's totals both sum from a slot.
  template <class Row> static void AddSlotSums(Row& row, const format::IoAggSums& s, uint64_t reads) {
    row.opens += s.opens;
    row.open_errors += s.open_errors;
    row.open_ns += s.open_ns;
    row.reads += reads;
    row.read_errors += s.read_errors;
    row.bytes_read += s.bytes_read;
    row.read_ns += s.read_ns;
    row.stats += s.stats;
    row.stat_ns += s.stat_ns;
    row.dir_scans += s.dir_scans;
  }

  // The rows from the trace's aggregate slots: each slot's sums, as the replay of the
  // same calls' events adds them (FromEvents). Not in the slots: writes, mappings,
  // directory entries, errno names, search misses and the read pattern (sequential,
  // consecutive, random, unplaced bytes), copies that moved no byte, bytes copied.
  void FromAggregates() {
    p_.from_aggregates = true;
    for (const IoAggregates::Image& im : t_.io_aggregates.images) {
      if (im.files_full_ns != 0 && (p_.per_directory_from_ns == 0 || im.files_full_ns < p_.per_directory_from_ns)) {
        p_.per_directory_from_ns = im.files_full_ns;
      }
    }
    for (const format::IoAggSums& s : t_.io_aggregates.slots) {
      size_t idx;
      if (s.kind == format::kIoAggDirectory && s.opens + s.open_errors + s.dir_scans + s.data_copies + s.read_errors +
                                                       s.zero_reads + s.stats + s.bytes_read ==
                                                   0) {
        continue;  // claimed, but every file since held a heavy-hitter entry: nothing summed
      }
      if (s.kind == format::kIoAggDirectory) {
        auto it = summed_dirs_.find(s.path);
        if (it == summed_dirs_.end()) {
          std::string_view raw = t_.Str(s.path);
          it = summed_dirs_.emplace(s.path, Row((raw.empty() ? std::string(".") : NormalizePath(raw)) + "/<more files>")).first;
        }
        idx = it->second;
        m_.files[idx].summed_files = true;
      } else {
        idx = FileOf(s.path);
      }
      FileStats& f = m_.files[idx];
      if (s.mount != 0 && f.mount < 0) {
        auto it = mount_by_id_.find(s.mount);
        if (it != mount_by_id_.end()) f.mount = it->second;
      }
      if (s.flags & format::kIoAggIsDirectory) f.directory = true;
      if (s.flags & format::kIoAggOutput) f.output = true;
      if (s.size != 0) f.size = std::max<uint64_t>(f.size.value_or(0), s.size - 1);
      uint64_t nonzero = 0;
      for (int b = 0; b < format::kIoAggSizeBins; ++b) {
        f.read_sizes.counts[static_cast<size_t>(b)] += s.read_sizes[b];
        nonzero += s.read_sizes[b];
      }
      const uint64_t reads = nonzero + s.zero_reads;
      AddSlotSums(f, s, reads);
      AddSlotSums(p_, s, reads);
      f.zero_reads += s.zero_reads;
      f.stat_errors += s.stat_errors;
      f.path_stats += s.path_stats;
      f.eof_at = std::max(f.eof_at, s.eof_at);
      f.max_end = std::max(f.max_end, s.max_end);
      f.passes += s.passes;
      f.small_reads += s.small_reads;
      f.stdio_reads += s.stdio_reads;
      f.copies += s.data_copies;  // those that moved bytes: zero_copies are not kept
      if (!f.code) p_.data_opens += s.opens, p_.data_reads += reads, p_.data_bytes_read += s.bytes_read;
      if (f.mount >= 0 && s.opens > 0) learned_dirs_.emplace(std::string(DirOf(f.path)), f.mount);
    }
    // Rows of heavy-hitter entries: from when they count (the earliest entry of the path,
    // should two threads have entered it at once) and the calls they may have had before.
    for (const IoAggregates::Heavy& h : t_.io_aggregates.heavy) {
      FileStats& f = m_.files[FileOf(h.path)];
      if (f.counted_from_ns == 0 || h.from_ns < f.counted_from_ns) {
        f.counted_from_ns = h.from_ns;
        f.counted_after_ns = h.from_ns > t_.start_ns() ? h.from_ns - t_.start_ns() : 0;
      }
      f.calls_before_max = std::max(f.calls_before_max, h.error);
    }
  }

  void FromEvents() {
    const auto& r = t_.records;
    // Descriptor events in time order. An open counts from when it returned, a close
    // from when it started, so a descriptor number reused across threads is never
    // confused. Every table is in time order already (the reader merges them), so the
    // replay merges the tables instead of sorting a copy of every event: on equal times
    // the kinds go in the order of Kind, and a kind's records in table order.
    // Opens are keyed by when they returned: their own order, by that key, comes first.
    // The other tables are read through cursors (the packed ones decode as they go).
    Streams streams{OpenStream(r.IoOpen),     Stream(r.IoClose), Stream(r.IoRead),
                    Stream(r.IoReadAt),       Stream(r.IoWrite), Stream(r.IoDup),
                    Stream(r.IoSeek),         Stream(r.IoStat),  Stream(r.IoMmap),
                    Stream(r.IoCopy),         Stream(r.IoDir)};
    for (;;) {
      // The earliest head of the non-empty kinds (the first kind on equal times); then
      // every record of that kind up to the next kind's head goes at once.
      int best = -1, second = -1;
      uint64_t best_key = 0, second_key = UINT64_MAX;
      for (int k = 0; k < kKinds; ++k) {
        uint64_t v = 0;
        if (!With(streams, k, [&](const auto& s) { return s.done() ? false : (v = s.key(), true); })) continue;
        if (best < 0 || v < best_key) {
          second = best, second_key = best_key;
          best = k, best_key = v;
        } else if (second < 0 || v < second_key) {
          second = k, second_key = v;
        }
      }
      if (best < 0) break;
      // Records of kind `best` before the runner-up's head (or at its time, when `best`
      // comes first among equal kinds).
      With(streams, best, [&](auto& s) {
        do {
          On(s.head());
          s.Next();
        } while (!s.done() && (second < 0 || s.key() < second_key ||
                               (s.key() == second_key && best < second)));
        return true;
      });
    }
  }

  // A cursor over one time-ordered table.
  template <class Table> struct Stream {
    explicit Stream(const Table& t) : it(t.begin()), end(t.end()) {}
    bool done() const { return it == end; }
    uint64_t key() const { return it->ts; }
    const auto& head() const { return *it; }
    void Next() { ++it; }
    typename Table::const_iterator it, end;
  };
  // IoOpen in the order of when each open returned (stable).
  struct OpenStream {
    explicit OpenStream(const std::vector<Event<format::IoOpen>>& t) : opens(&t), order(t.size()) {
      std::iota(order.begin(), order.end(), 0u);
      std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
        return t[a].ts + t[a].dur < t[b].ts + t[b].dur;
      });
    }
    bool done() const { return at == order.size(); }
    uint64_t key() const { return head().ts + head().dur; }
    const Event<format::IoOpen>& head() const { return (*opens)[order[at]]; }
    void Next() { ++at; }
    const std::vector<Event<format::IoOpen>>* opens;
    std::vector<uint32_t> order;
    size_t at = 0;
  };
  // On equal times the kinds go in this order (the order of the tuple).
  using Streams = std::tuple<OpenStream, Stream<TableOf<format::IoClose>>, Stream<TableOf<format::IoRead>>,
                             Stream<TableOf<format::IoReadAt>>, Stream<TableOf<format::IoWrite>>,
                             Stream<TableOf<format::IoDup>>, Stream<TableOf<format::IoSeek>>,
                             Stream<TableOf<format::IoStat>>, Stream<TableOf<format::IoMmap>>,
                             Stream<TableOf<format::IoCopy>>, Stream<TableOf<format::IoDir>>>;
  static constexpr int kKinds = std::tuple_size_v<Streams>;
  // f(stream k) for a kind k known only at run time.
  template <class F, size_t K = 0> static bool With(Streams& s, int k, F&& f) {
    if constexpr (K == kKinds) {
      return false;
    } else {
      return k == static_cast<int>(K) ? f(std::get<K>(s)) : With<F, K + 1>(s, k, std::forward<F>(f));
    }
  }

  void On(const Event<format::IoOpen>& e) { OnOpen(e); }
  void On(const Event<format::IoClose>& e) { fds_.erase(e.fd); }
  void On(const Event<format::IoRead>& e) { OnRead(e); }
  void On(const Event<format::IoReadAt>& e) { OnReadAt(e); }
  void On(const Event<format::IoWrite>& e) { OnWrite(e); }
  void On(const Event<format::IoDup>& e) { OnDup(e); }
  void On(const Event<format::IoSeek>& e) { OnSeek(e); }
  void On(const Event<format::IoStat>& e) { OnStat(e); }
  void On(const Event<format::IoMmap>& e) { OnMmap(e); }
  void On(const Event<format::IoCopy>& e) { OnCopy(e); }
  void On(const Event<format::IoDir>& e) { OnDir(e); }

  // An open file description: what a descriptor (and its dups) refers to.
  struct Desc {
    size_t file;
    uint64_t pos = 0;
    bool pos_known = true;
    uint64_t last_end = 0;
    bool has_last = false;
    bool read_any = false;
  };

  // The row named name, marked as touched by this process.
  size_t Row(const std::string& name) {
    const size_t idx = m_.FileIndex(name);
    touched_.insert(idx);
    return idx;
  }
  static std::string FileName(std::string_view raw) {
    return raw.empty() ? std::string("<unknown path>") : NormalizePath(raw);
  }

  size_t FileOf(uint64_t path_id) {
    auto it = file_by_str_.find(path_id);
    if (it != file_by_str_.end()) return it->second;
    const size_t idx = Row(FileName(t_.Str(path_id)));
    file_by_str_.emplace(path_id, idx);
    return idx;
  }

  // The unnamed regular files O_TMPFILE opens made in directory path_id (pytest's output
  // capture, tempfile.TemporaryFile): one row per directory, "<dir>/<O_TMPFILE>" (strace
  // shows "<dir>/#inode"), never the directory's own row.
  size_t TmpfileOf(uint64_t path_id) {
    auto it = tmpfile_files_.find(path_id);
    if (it != tmpfile_files_.end()) return it->second;
    std::string_view raw = t_.Str(path_id);
    const size_t idx = Row((raw.empty() ? std::string(".") : NormalizePath(raw)) + "/<O_TMPFILE>");
    tmpfile_files_.emplace(path_id, idx);
    return idx;
  }

  // A descriptor the process started with is named by its /proc/self/fd link, which
  // says "<path> (deleted)" once the file was unlinked (a temporary file handed to a
  // subprocess as its stdout): the row is the file's own, where its opener's I/O went.
  size_t InheritedFileOf(uint64_t path_id, bool tmpfile) {
    std::string_view raw = t_.Str(path_id);
    if (constexpr std::string_view kDeleted = " (deleted)"; raw.ends_with(kDeleted)) {
      raw.remove_suffix(kDeleted.size());
    }
    if (!tmpfile && raw.size() == t_.Str(path_id).size()) return FileOf(path_id);
    const std::string file = FileName(raw);
    return Row(tmpfile ? std::string(DirOf(file)) + "/<O_TMPFILE>" : file);
  }

  // A descriptor with no open in the trace (should not happen: the shim records every
  // descriptor it traces): charged to a per-descriptor placeholder.
  size_t UnknownFdFile(int64_t fd) {
    auto it = unknown_fd_files_.find(fd);
    if (it != unknown_fd_files_.end()) return it->second;
    const size_t idx = m_.FileIndex("<pid " + std::to_string(t_.pid()) + " fd " + std::to_string(fd) + ">");
    unknown_fd_files_.emplace(fd, idx);
    touched_.insert(idx);
    return idx;
  }

  Desc* DescOf(int64_t fd) {
    auto it = fds_.find(fd);
    if (it != fds_.end()) return &descs_[it->second];
    ++p_.unknown_fd_events;
    descs_.push_back(Desc{UnknownFdFile(fd)});
    descs_.back().pos_known = false;
    fds_[fd] = descs_.size() - 1;
    return &descs_.back();
  }

  void OnOpen(const Event<format::IoOpen>& o) {
    const auto api = static_cast<IoApi>(o.api);
    if (api == IoApi::kFdopen) {
      // A FILE on a descriptor already open: nothing new unless we missed the open. From
      // here on the stream may be positioned with fseek, which is not traced (numpy's
      // fromfile dups the descriptor, fdopens it and seeks to the Python file's
      // position), so the description's offset is no longer known.
      if (o.fd >= 0 && !fds_.contains(o.fd) && o.path != 0) {
        descs_.push_back(Desc{FileOf(o.path)});
        fds_[o.fd] = descs_.size() - 1;
      }
      if (o.fd >= 0) {
        if (auto it = fds_.find(o.fd); it != fds_.end()) descs_[it->second].pos_known = false;
      }
      return;
    }
    // O_TMPFILE holds O_DIRECTORY's bit: the path names a directory, the open makes a file.
    const bool tmpfile = (o.flags & O_TMPFILE) == O_TMPFILE;
    // An inherited one is named by /proc/self/fd: "<dir>/#<inode> (deleted)", the file,
    // not its directory (a subprocess writing into pytest's capture file).
    const size_t idx = api == IoApi::kInherited ? InheritedFileOf(o.path, tmpfile)
                       : tmpfile                   ? TmpfileOf(o.path)
                                                   : FileOf(o.path);
    FileStats& f = m_.files[idx];
    if (o.mount != 0 && f.mount < 0) {
      auto it = mount_by_id_.find(o.mount);
      if (it != mount_by_id_.end()) f.mount = it->second;
    }
    if (f.mount >= 0 && o.fd >= 0) learned_dirs_.emplace(std::string(DirOf(f.path)), f.mount);
    // Only an open that succeeded says it is a directory: cp probes its destination with
    // O_PATH|O_DIRECTORY, which fails (ENOENT, ENOTDIR) on the file it then writes.
    if ((o.flags & O_DIRECTORY) && !tmpfile && o.fd >= 0) f.directory = true;
    if ((o.flags & O_ACCMODE) != O_RDONLY || (o.flags & O_CREAT)) f.output = true;
    if (o.ftype != 0) {
      if (o.ftype == (S_IFDIR >> 12)) f.directory = true;
      if (o.ftype == (S_IFREG >> 12)) f.size = std::max<uint64_t>(f.size.value_or(0), o.size);
    }
    ++opens_seen_;
    if (o.fd < 0) {
      ++f.open_errors;
      ++p_.open_errors;
      f.open_ns += o.dur;
      AddError(f, ErrnoOfResult(o.fd), "open");
      std::erase_if(misses_, [&](const Miss& miss) { return opens_seen_ - miss.at >= kSearchWindow; });
      misses_.push_back(Miss{idx, opens_seen_});
      return;
    }
    if (!misses_.empty()) SearchFound(idx);
    if (api == IoApi::kInherited) {
      ++f.inherited;
    } else {
      ++f.opens;
      ++p_.opens;
      if (!f.code) ++p_.data_opens;
      f.open_ns += o.dur;
      p_.open_ns += o.dur;
    }
    Desc d{idx};
    d.pos_known = api != IoApi::kInherited && !(o.flags & O_APPEND);
    descs_.push_back(d);
    fds_[o.fd] = descs_.size() - 1;
  }

  // stdio: a FILE-level read (fread, fgets, getline...), not a system call of its own.
  void Read(Desc& d, int64_t result, uint64_t dur, std::optional<uint64_t> at, bool stdio = false) {
    FileStats& f = m_.files[d.file];
    if (result < 0) {
      ++f.read_errors;
      ++p_.read_errors;
      f.read_ns += dur;
      AddError(f, ErrnoOfResult(result), "read");
      return;
    }
    ++f.reads;
    ++p_.reads;
    f.read_ns += dur;
    p_.read_ns += dur;
    const uint64_t n = static_cast<uint64_t>(result);
    f.bytes_read += n;
    p_.bytes_read += n;
    if (!f.code) ++p_.data_reads, p_.data_bytes_read += n;
    const bool known = at.has_value() || d.pos_known;
    const uint64_t off = at ? *at : d.pos;
    if (n == 0) {
      ++f.zero_reads;
      if (known && off > f.eof_at) f.eof_at = off;
      return;
    }
    f.read_sizes.Add(n);
    if (stdio) {
      ++f.stdio_reads;
    } else if (n <= 4096) {
      ++f.small_reads;
    }
    if (!d.read_any) {
      d.read_any = true;
      ++f.passes;
    }
    if (known) {
      if (!d.has_last) {
        ++f.sequential_reads;
        if (off == 0) ++f.consecutive_reads;
      } else if (off >= d.last_end) {
        ++f.sequential_reads;
        if (off == d.last_end) ++f.consecutive_reads;
      } else {
        ++f.random_reads;
      }
      d.last_end = off + n;
      d.has_last = true;
      f.max_end = std::max(f.max_end, off + n);
    } else {
      ++f.sequential_reads;  // position unknown: assume it follows on
      f.unplaced_bytes += n;
    }
    if (!at) d.pos += n;
  }

  void OnRead(const Event<format::IoRead>& e) {
    const auto api = static_cast<IoApi>(e.api);
    const bool stdio = (api >= IoApi::kFread && api <= IoApi::kGetdelimInternal) ||
                       api == IoApi::kFgetsUnlocked || api == IoApi::kFgetsUnlockedChk ||
                       api == IoApi::kFreadUnlockedChk;
    Read(*DescOf(e.fd), e.result, e.dur, std::nullopt, stdio);
  }
  void OnReadAt(const Event<format::IoReadAt>& e) { Read(*DescOf(e.fd), e.result, e.dur, e.offset); }

  void OnWrite(const Event<format::IoWrite>& e) {
    Desc& d = *DescOf(e.fd);
    FileStats& f = m_.files[d.file];
    f.write_ns += e.dur;
    if (e.result < 0) {
      ++f.write_errors;
      AddError(f, ErrnoOfResult(e.result), "write");
      return;
    }
    ++f.writes;
    ++p_.writes;
    f.bytes_written += static_cast<uint64_t>(e.result);
    p_.bytes_written += static_cast<uint64_t>(e.result);
    const auto api = static_cast<IoApi>(e.api);
    const bool positional = api == IoApi::kPwrite || api == IoApi::kPwrite64 ||
                            api == IoApi::kPwritev || api == IoApi::kPwritev64 ||
                            ((api == IoApi::kPwritev2 || api == IoApi::kPwritev64v2) && e.offset != 0);
    if (!positional) d.pos += static_cast<uint64_t>(e.result);
  }

  void OnDup(const Event<format::IoDup>& e) {
    if (e.newfd < 0 || e.newfd == e.oldfd) return;
    auto it = fds_.find(e.oldfd);
    if (it == fds_.end()) {
      fds_.erase(e.newfd);
    } else {
      fds_[e.newfd] = it->second;
    }
  }

  void OnSeek(const Event<format::IoSeek>& e) {
    if (e.result < 0) return;
    Desc& d = *DescOf(e.fd);
    d.pos = static_cast<uint64_t>(e.result);
    d.pos_known = true;
  }

  void OnStat(const Event<format::IoStat>& e) {
    size_t idx;
    if (e.path != 0) {
      std::string_view raw = t_.Str(e.path);
      if (e.fd >= 0 && !raw.empty() && raw[0] != '/') {
        // Relative to a directory descriptor whose path the shim could not resolve.
        auto it = fds_.find(e.fd);
        idx = it == fds_.end() ? FileOf(e.path)
                               : m_.FileIndex(NormalizePath(m_.files[descs_[it->second].file].path + "/" + std::string(raw)));
        touched_.insert(idx);
      } else {
        idx = FileOf(e.path);
      }
    } else {
      idx = DescOf(e.fd)->file;
    }
    FileStats& f = m_.files[idx];
    ++f.stats;
    if (e.path != 0) ++f.path_stats;
    ++p_.stats;
    f.stat_ns += e.dur;
    p_.stat_ns += e.dur;
    if (e.result < 0) {
      ++f.stat_errors;
      return;
    }
    if (e.ftype == (S_IFDIR >> 12)) f.directory = true;
    if (e.ftype == (S_IFREG >> 12)) f.size = std::max<uint64_t>(f.size.value_or(0), e.size);
  }

  void OnMmap(const Event<format::IoMmap>& e) {
    if (e.result < 0) return;
    FileStats& f = m_.files[DescOf(e.fd)->file];
    ++f.mmaps;
    ++p_.mmaps;
    f.mapped_bytes += e.length;
  }

  void OnCopy(const Event<format::IoCopy>& e) {
    auto it = fds_.find(e.in_fd);
    if (it == fds_.end()) return;
    FileStats& f = m_.files[descs_[it->second].file];
    ++f.copies;
    ++p_.copies;
    if (e.result > 0) {
      f.bytes_copied += static_cast<uint64_t>(e.result);
    } else {
      ++f.zero_copies;
    }
  }

  void OnDir(const Event<format::IoDir>& e) {
    const auto api = static_cast<IoApi>(e.api);
    if (api == IoApi::kOpendir || api == IoApi::kScandir || api == IoApi::kScandir64) {
      if (e.path == 0) return;
      const size_t idx = FileOf(e.path);
      FileStats& f = m_.files[idx];
      ++f.dir_scans;
      ++p_.dir_scans;
      if (e.result < 0) {
        // Not a directory, or none at all (os.listdir on a file fails with ENOTDIR).
        AddError(f, ErrnoOfResult(e.result), "opendir");
        return;
      }
      f.directory = true;
      if (api != IoApi::kOpendir) f.dir_entries += static_cast<uint64_t>(e.result);
      if (api == IoApi::kOpendir && e.fd >= 0) {
        descs_.push_back(Desc{idx});
        fds_[e.fd] = descs_.size() - 1;
      }
    } else if (api == IoApi::kFdopendir) {
      if (e.result < 0) return;
      FileStats& f = m_.files[DescOf(e.fd)->file];
      f.directory = true;
      ++f.dir_scans;
      ++p_.dir_scans;
    } else if (api == IoApi::kReaddir || api == IoApi::kReaddir64) {
      FileStats& f = m_.files[DescOf(e.fd)->file];
      f.directory = true;
      if (e.result > 0) f.dir_entries += static_cast<uint64_t>(e.result);
    }
  }

  // Files with no mount from an open: a directory another open resolved, else the
  // longest mount point that prefixes the path in this process's mount table.
  void ResolveMount(size_t idx) {
    FileStats& f = m_.files[idx];
    if (f.mount >= 0) return;
    if (f.path.empty() || f.path[0] != '/') return;
    auto it = learned_dirs_.find(std::string(DirOf(f.path)));
    if (it != learned_dirs_.end()) {
      f.mount = it->second;
      return;
    }
    // The path itself, then each parent directory up to "/": one hash lookup each, so
    // files x mounts never multiply. Paths past PATH_MAX are not resolved.
    constexpr size_t kPathMax = 4096;
    if (f.path.size() > kPathMax) return;
    std::string_view prefix = f.path;
    for (;;) {
      if (auto m = mount_by_point_.find(absl::string_view(prefix.data(), prefix.size()));
          m != mount_by_point_.end()) {
        f.mount = m->second;
        return;
      }
      if (prefix.size() <= 1) return;
      const size_t slash = prefix.rfind('/');
      prefix = prefix.substr(0, slash == 0 ? 1 : slash);
    }
  }

  // A successful open of files[found]: the recent failed opens of the same name in other
  // directories were steps of the search that ended here.
  void SearchFound(size_t found) {
    const std::string_view path = m_.files[found].path;
    const std::string_view name = Basename(path), dir = DirOf(path);
    std::erase_if(misses_, [&](const Miss& miss) {
      if (opens_seen_ - miss.at > kSearchWindow) return true;
      FileStats& f = m_.files[miss.file];
      if (Basename(f.path) != name || DirOf(f.path) == dir) return false;
      ++f.search_misses;
      return true;
    });
  }

  struct Miss {
    size_t file;  // files[] index of the failed open
    uint64_t at;  // opens_seen_ when it failed
  };

  IoModel& m_;
  const ProcessTrace& t_;
  ProcessIo& p_;
  uint64_t opens_seen_ = 0;    // open attempts replayed so far (fdopen aside)
  std::vector<Miss> misses_;  // failed opens of the last kSearchWindow opens, oldest first
  std::vector<Desc> descs_;
  absl::flat_hash_map<int64_t, size_t> fds_;
  absl::flat_hash_map<uint64_t, size_t> file_by_str_;
  absl::flat_hash_map<int64_t, size_t> unknown_fd_files_;
  absl::flat_hash_map<uint64_t, size_t> tmpfile_files_;  // directory path id -> its O_TMPFILE row
  absl::flat_hash_map<uint64_t, size_t> summed_dirs_;    // directory path id -> its summed row
  absl::flat_hash_map<uint64_t, int32_t> mount_by_id_;
  absl::flat_hash_map<std::string, int32_t> learned_dirs_;
  absl::flat_hash_map<std::string, int32_t> mount_by_point_;  // this process's mount table
  absl::flat_hash_set<size_t> touched_;
};

bool IoFromAggregates(const ProcessTrace& t) {
  if (!t.io_aggregates.present) return false;
  // The window gave up some of the I/O events (or the cap kept some from being written):
  // only the sums still cover the whole run.
  if (t.window.events_in_full < t.window.events_total || t.window.capped || t.window.compacted) return true;
  const char* v = std::getenv("COLABTRACE_ANALYZER_IGNORE_IO_EVENTS");
  return v != nullptr && std::string_view(v) == "1";
}

IoModel IoModel::Build(const RunModel& run) {
  std::vector<const ProcessTrace*> all;
  all.reserve(run.traces().size());
  for (const ProcessTrace& t : run.traces()) all.push_back(&t);
  return Build(all, &run);
}

ProcessIoModels ProcessIoModels::Build(const RunModel& run) {
  ProcessIoModels m;
  m.of_trace.reserve(run.traces().size());
  for (const ProcessTrace& t : run.traces()) m.of_trace.push_back(IoModel::Build({&t}, &run));
  return m;
}

IoModel IoModel::Build(const std::vector<const ProcessTrace*>& traces, const RunModel* run) {
  IoModel m;
  m.processes.resize(traces.size());
  std::vector<std::string> hosts(traces.size());
  std::string first_host;
  for (size_t i = 0; i < traces.size(); ++i) {
    hosts[i] = HostIdentity(*traces[i]);
    if (hosts[i].empty()) continue;
    if (first_host.empty()) first_host = hosts[i];
    if (hosts[i] != first_host) m.multi_host = true;
  }
  const std::vector<int64_t> ppids = ParentPids(traces);
  for (size_t i = 0; i < traces.size(); ++i) {
    const ProcessTrace& t = *traces[i];
    ProcessIo& p = m.processes[i];
    m.host_ = hosts[i];
    p.pid = t.pid();
    const ProcessFacts own = run == nullptr ? ProcessFacts::Of(t) : ProcessFacts();
    const ProcessFacts& facts = run == nullptr ? own : run->facts(t);
    p.run_wrapper = facts.run_wrapper;
    if (facts.start) {
      p.ppid = ppids[i];
      p.forked = facts.start->origin == static_cast<uint64_t>(format::ProcessOrigin::kForkChild);
    }
    for (std::string_view a : facts.JobArgv(t)) {
      if (!p.command.empty()) p.command += ' ';
      p.command += std::string(a);
    }
    if (p.command.empty()) p.command = std::string(facts.JobExe(t));
    if (p.command.size() > 120) p.command = p.command.substr(0, 117) + "...";
    const auto& r = t.records;
    p.records = r.IoOpen.size() + r.IoRead.size() + r.IoReadAt.size() + r.IoWrite.size() +
                r.IoClose.size() + r.IoDup.size() + r.IoStat.size() + r.IoDir.size() +
                r.IoMmap.size() + r.IoCopy.size() + r.IoFsync.size() + r.IoSeek.size();
    m.io_records += p.records;
    ProcessReplay(m, t, p).Run();
  }
  // Mount activity.
  for (const FileStats& f : m.files) {
    if (f.mount < 0) continue;
    AddFileActivity(m.mounts[static_cast<size_t>(f.mount)], f);
  }
  return m;
}

}  // namespace colabtrace::analyzer::io
