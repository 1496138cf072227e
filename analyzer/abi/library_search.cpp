#include "abi/library_search.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

namespace colabtrace::analyzer::abi {
namespace {

bool IsRegularFile(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool IsDirectory(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// Entries of a directory (names only), at most `max`.
std::vector<std::string> ListDir(const std::string& dir, size_t max = 20000) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    out.emplace_back(e->d_name);
    if (out.size() >= max) break;
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> SplitPath(std::string_view s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find_first_of(":;", start);
    if (end == std::string_view::npos) end = s.size();
    if (end > start) out.emplace_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

std::string Dirname(const std::string& p) {
  const size_t slash = p.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : p.substr(0, slash);
}

// "/x/lib/python3.11/site-packages" for any path inside it, or "".
std::string SitePackagesRoot(const std::string& p) {
  for (const char* marker : {"/site-packages/", "/dist-packages/"}) {
    const size_t at = p.find(marker);
    if (at != std::string::npos) return p.substr(0, at + std::strlen(marker) - 1);
  }
  return "";
}

}  // namespace

std::vector<std::pair<std::string, std::string>> ParseLdSoCache(std::string_view bytes) {
  std::vector<std::pair<std::string, std::string>> out;
  constexpr std::string_view kOld = "ld.so-1.7.0";
  constexpr std::string_view kNew = "glibc-ld.so.cache1.1";
  size_t start = 0;
  auto u32 = [&](size_t off, uint32_t* v) {
    if (off > bytes.size() || bytes.size() - off < 4) return false;
    std::memcpy(v, bytes.data() + off, 4);
    return true;
  };
  if (bytes.starts_with(kOld)) {
    uint32_t n = 0;
    if (!u32(12, &n) || n > bytes.size() / 12) return out;
    start = 16 + static_cast<size_t>(n) * 12;
    start = (start + 7) & ~size_t{7};
  }
  if (start > bytes.size() || bytes.substr(start).substr(0, kNew.size()) != kNew) return out;
  uint32_t nlibs = 0, len_strings = 0;
  if (!u32(start + 20, &nlibs) || !u32(start + 24, &len_strings)) return out;
  constexpr size_t kHeader = 48, kEntry = 24;
  const std::string_view cache = bytes.substr(start);
  if (nlibs > (cache.size() - std::min(cache.size(), kHeader)) / kEntry) return out;
  auto str = [&](uint32_t off) -> std::string_view {
    if (off >= cache.size()) return {};
    const std::string_view s = cache.substr(off);
    const size_t nul = s.find('\0');
    return nul == std::string_view::npos ? std::string_view() : s.substr(0, nul);
  };
  for (uint32_t i = 0; i < nlibs; ++i) {
    const size_t e = start + kHeader + static_cast<size_t>(i) * kEntry;
    uint32_t key = 0, value = 0;
    if (!u32(e + 4, &key) || !u32(e + 8, &value)) break;
    const std::string_view k = str(key), v = str(value);
    if (!k.empty() && !v.empty()) out.emplace_back(std::string(k), std::string(v));
  }
  return out;
}

std::vector<SearchDir> RunpathDirs(const std::string& object_path, const std::string& runpath,
                                   const std::string& rpath) {
  std::vector<SearchDir> out;
  const std::string& list = runpath.empty() ? rpath : runpath;
  const char* why = runpath.empty() ? "requester's RPATH" : "requester's RUNPATH";
  const std::string origin = Dirname(object_path);
  for (const std::string& raw : SplitPath(list)) {
    std::string d;
    for (size_t i = 0; i < raw.size();) {
      bool replaced = false;
      for (const auto& [token, value] :
           {std::pair<std::string_view, std::string_view>{"${ORIGIN}", origin}, {"$ORIGIN", origin},
            {"${LIB}", "lib64"}, {"$LIB", "lib64"}, {"${PLATFORM}", "x86_64"},
            {"$PLATFORM", "x86_64"}}) {
        if (std::string_view(raw).substr(i).starts_with(token)) {
          d += value;
          i += token.size();
          replaced = true;
          break;
        }
      }
      if (!replaced) d += raw[i++];
    }
    out.push_back({d, why});
  }
  return out;
}

LibrarySearch::LibrarySearch(const ProcessTrace& trace, const LibraryInventory& inventory) {
  // LD_LIBRARY_PATH: what the loader used (at start) and what was set later.
  for (const auto& e : trace.records.EnvVar) {
    if (trace.Str(e.name) != "LD_LIBRARY_PATH" || e.redacted) continue;
    const bool at_start = e.source == static_cast<uint64_t>(format::EnvSource::kStartup);
    for (std::string& d : SplitPath(trace.Str(e.value))) {
      Add(std::move(d), at_start ? "LD_LIBRARY_PATH" : "LD_LIBRARY_PATH set at run time");
    }
  }
  // ld.so.cache.
  {
    std::ifstream in("/etc/ld.so.cache", std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    cache_ = ParseLdSoCache(ss.str());
    std::set<std::string> cache_dirs;
    for (const auto& [name, path] : cache_) cache_dirs.insert(Dirname(path));
    for (const std::string& d : cache_dirs) Add(d, "ld.so.cache");
  }
  for (const char* d : {"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64",
                        "/usr/lib64", "/lib", "/usr/lib", "/usr/local/lib", "/usr/lib/wsl/lib"}) {
    Add(d, "default directory");
  }
  // CUDA toolkits.
  for (const std::string& name : ListDir("/usr/local", 200)) {
    if (!name.starts_with("cuda")) continue;
    const std::string root = "/usr/local/" + name;
    Add(root + "/lib64", "CUDA toolkit");
    Add(root + "/lib", "CUDA toolkit");
    Add(root + "/compat", "CUDA toolkit");
    for (const std::string& t : ListDir(root + "/targets", 20)) {
      Add(root + "/targets/" + t + "/lib", "CUDA toolkit");
    }
  }
  // site-packages roots the process used, and the interpreter's prefix.
  std::set<std::string> roots;
  for (const LoadedLibrary& o : inventory.objects) {
    const std::string r = SitePackagesRoot(o.path);
    if (!r.empty()) roots.insert(r);
  }
  std::string exe;
  if (!trace.records.ProcessStart.empty()) exe = std::string(trace.Str(trace.records.ProcessStart.back().exe));
  if (const size_t bin = exe.rfind("/bin/"); bin != std::string::npos) {
    const std::string prefix = exe.substr(0, bin);
    Add(prefix + "/lib", "interpreter prefix");
    for (const std::string& py : ListDir(prefix + "/lib", 2000)) {
      if (!py.starts_with("python")) continue;
      for (const char* sp : {"/site-packages", "/dist-packages"}) {
        const std::string r = prefix + "/lib/" + py + sp;
        if (IsDirectory(r)) roots.insert(r);
      }
    }
  }
  for (const std::string& r : roots) {
    for (const std::string& pkg : ListDir(r + "/nvidia", 200)) {
      Add(r + "/nvidia/" + pkg + "/lib", "site-packages");
      Add(r + "/nvidia/" + pkg + "/lib64", "site-packages");
    }
    Add(r + "/torch/lib", "site-packages");
    for (const std::string& e : ListDir(r, 5000)) {
      if (e.ends_with(".libs")) Add(r + "/" + e, "site-packages");
    }
  }
}

void LibrarySearch::Add(std::string path, std::string why) {
  if (dirs_.size() >= kMaxDirs || path.empty()) return;
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  for (const SearchDir& d : dirs_) {
    if (d.path == path) return;
  }
  if (!IsDirectory(path)) return;
  dirs_.push_back({std::move(path), std::move(why)});
}

void LibrarySearch::AddFirst(const std::vector<SearchDir>& dirs) {
  std::vector<SearchDir> old = std::move(dirs_);
  dirs_.clear();
  for (const SearchDir& d : dirs) Add(d.path, d.why);
  for (SearchDir& d : old) Add(std::move(d.path), std::move(d.why));
}

std::vector<FoundCopy> LibrarySearch::FindCopies(std::string_view file_name, size_t max) const {
  std::vector<FoundCopy> out;
  std::set<std::string> seen;  // real paths
  auto add = [&](const std::string& p, const std::string& why) {
    if (out.size() >= max || !IsRegularFile(p)) return;
    char real[4096];
    const std::string key = ::realpath(p.c_str(), real) != nullptr ? std::string(real) : p;
    if (!seen.insert(key).second) return;
    out.push_back({p, why});
  };
  if (file_name.empty() || file_name.find('/') != std::string_view::npos) return out;
  for (const SearchDir& d : dirs_) add(d.path + "/" + std::string(file_name), d.why);
  for (const auto& [name, path] : cache_) {
    if (name == file_name) add(path, "ld.so.cache");
  }
  return out;
}

std::vector<FoundCopy> LibrarySearch::FindOtherVersions(std::string_view file_name, size_t max) const {
  std::vector<FoundCopy> out;
  const std::string stem = LibraryStem(file_name);
  if (stem.empty()) return out;
  std::set<std::string> names;
  for (const SearchDir& d : dirs_) {
    for (const std::string& e : ListDir(d.path)) {
      if (out.size() >= max) return out;
      if (e == file_name || e.find(".so") == std::string::npos || LibraryStem(e) != stem) continue;
      if (!names.insert(e).second) continue;
      const std::string p = d.path + "/" + e;
      if (IsRegularFile(p)) out.push_back({p, d.why});
    }
  }
  return out;
}

}  // namespace colabtrace::analyzer::abi
