#include "abi/library_files.h"

#include "model/symbolize.h"

namespace colabtrace::analyzer::abi {
namespace {

bool BuildIdIs(const FileFacts* f, const std::string& build_id) {
  return f != nullptr && f->image && !build_id.empty() && f->image->build_id() == build_id;
}

constexpr size_t kExamples = 5;         // per skipped check
constexpr size_t kUnreadableSample = 10;

}  // namespace

uint64_t TimespecNs(const struct timespec& t) {
  return static_cast<uint64_t>(t.tv_sec) * 1000000000ull + static_cast<uint64_t>(t.tv_nsec);
}

bool SameIdentity(const LoadedLibrary& o, const FileFacts& f) {
  return f.st.st_dev == o.identity.dev && f.st.st_ino == o.identity.ino &&
         static_cast<uint64_t>(f.st.st_size) == o.identity.size && TimespecNs(f.st.st_mtim) == o.identity.mtime_ns;
}

bool SameAsLoaded(const LoadedLibrary& o, const FileFacts& f) {
  if (!f.exists) return false;
  if (!o.identity.known()) return true;  // nothing to compare with: assume so
  if (SameIdentity(o, f)) return true;
  return BuildIdIs(&f, o.build_id);
}

LibraryFiles::LibraryFiles(std::string sysroot) : sysroot_(NormalizeSysroot(std::move(sysroot))) {}

FileFacts* LibraryFiles::AtPath(const std::string& path) {
  FileFacts& f = cache_.Get(path);
  return f.exists ? &f : nullptr;
}

LibraryFile LibraryFiles::Loaded(const LoadedLibrary& o, const HostOrigin& host) {
  LibraryFile out;
  if (o.is_vdso || o.path.empty()) return out;
  if (!sysroot_.empty() && o.path.front() == '/') {
    if (FileFacts* f = AtPath(sysroot_ + o.path); BuildIdIs(f, o.build_id)) out = {f, FileMatch::kBuildId, true};
  }
  if (out.file == nullptr) {
    FileFacts* f = AtPath(o.path);
    if (f != nullptr && f->image && host.same_host && (!o.identity.known() || SameIdentity(o, *f))) {
      out = {f, FileMatch::kSameFile, false};
    } else if (BuildIdIs(f, o.build_id)) {
      out = {f, FileMatch::kBuildId, false};
    }
  }
  Recorded& r = recorded_[{o.path, o.build_id}];
  if (r.match == FileMatch::kNone) r = {out.match, out.from_sysroot};
  return out;
}

FileFacts* LibraryFiles::AtRecordedPath(const LoadedLibrary& o, const HostOrigin& host) {
  if (o.is_vdso || o.path.empty()) return nullptr;
  FileFacts* f = &cache_.Get(o.path);
  // On another host a path names some other file unless its build id is the loaded one.
  if (!host.same_host && !BuildIdIs(f, o.build_id)) return nullptr;
  return f;
}

FileFacts* LibraryFiles::Named(const std::string& path, const HostOrigin& host) {
  if (path.empty()) return nullptr;
  if (!sysroot_.empty() && path.front() == '/') {
    if (FileFacts* f = AtPath(sysroot_ + path); f != nullptr && f->image) return f;
  }
  return host.same_host ? AtPath(path) : nullptr;
}

void LibraryFiles::Skipped(std::string_view check, std::string_view why, std::string_view what) {
  skipped_[{std::string(check), std::string(why)}].emplace(what);
}

Json LibraryFiles::Summary() const {
  size_t readable = 0, same_file = 0, by_build_id = 0, from_sysroot = 0;
  Json unreadable = Json::MakeArray();
  for (const auto& [key, r] : recorded_) {
    readable += r.match != FileMatch::kNone;
    same_file += r.match == FileMatch::kSameFile;
    by_build_id += r.match == FileMatch::kBuildId;
    from_sysroot += r.from_sysroot;
    if (r.match == FileMatch::kNone && unreadable.array().size() < kUnreadableSample) unreadable.Append(key.first);
  }
  Json j = Json::MakeObject();
  j["sysroot"] = sysroot_.empty() ? Json() : Json(sysroot_);
  j["recorded"] = static_cast<uint64_t>(recorded_.size());
  j["readable"] = static_cast<uint64_t>(readable);
  j["same_file"] = static_cast<uint64_t>(same_file);
  j["matched_by_build_id"] = static_cast<uint64_t>(by_build_id);
  j["from_sysroot"] = static_cast<uint64_t>(from_sysroot);
  j["unreadable"] = static_cast<uint64_t>(recorded_.size() - readable);
  j["unreadable_sample"] = std::move(unreadable);
  Json skipped = Json::MakeArray();
  for (const auto& [key, whats] : skipped_) {
    Json s = Json::MakeObject();
    s["check"] = key.first;
    s["why"] = key.second;
    s["count"] = static_cast<uint64_t>(whats.size());
    Json examples = Json::MakeArray();
    for (const std::string& w : whats) {
      if (examples.array().size() >= kExamples) break;
      examples.Append(w);
    }
    s["examples"] = std::move(examples);
    skipped.Append(std::move(s));
  }
  j["skipped_checks"] = std::move(skipped);
  return j;
}

std::string LibraryFiles::SummaryText(const Json& j) {
  const std::string sysroot = j["sysroot"].is_string() ? j["sysroot"].str() : std::string();
  std::string text = "library files: " + std::to_string(j["readable"].as_int()) + " of " +
                     std::to_string(j["recorded"].as_int()) + " recorded libraries read (" +
                     std::to_string(j["same_file"].as_int()) + " the same file, " +
                     std::to_string(j["matched_by_build_id"].as_int()) + " by build id" +
                     (sysroot.empty() ? std::string()
                                      : ", " + std::to_string(j["from_sysroot"].as_int()) +
                                            " under --sysroot " + sysroot) +
                     ")\n";
  const Json& skipped = j["skipped_checks"];
  for (const Json& s : skipped.is_array() ? skipped.array() : Json::Array{}) {
    text += "  not checked: " + s["check"].str() + " for " + std::to_string(s["count"].as_int()) + ": " +
            s["why"].str() + (s["examples"].array().empty() ? "" : " (e.g. " + s["examples"].array()[0].str() + ")") +
            "\n";
  }
  return text;
}

}  // namespace colabtrace::analyzer::abi
