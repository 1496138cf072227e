// abi.stale-library (warning)
//
// Rule: a loaded file whose identity (dev, inode, size, mtime) changed while the process
// ran: seen by the shim's re-checks at later loads and at exit (LibCheck), or found now
// with a change time (ctime) before the trace's end. Not reported when the file now on
// disk has the loaded build id (an identical reinstall). For a trace from another host
// (see HostOrigin) only the shim's re-checks count: the analyzing machine's files are
// other files. A file that was only removed (DiskState "removed during the run") is not
// reported: nothing newer can mix with the loaded copy. A program that builds an
// extension in a temporary directory, loads it and deletes the directory (a JIT-compiled
// extension, a test's tmp_path) does that on every healthy run. One finding per file and
// loaded build for the whole job.
#include <cstring>

#include "abi/rules/rules.h"

namespace colabtrace::analyzer::abi {

namespace {

void StaleLibraryOf(const ProcessLibraries& p, JobContext& ctx) {
  for (size_t i = 0; i < p.inv.objects.size(); ++i) {
    const LoadedLibrary& o = p.inv.objects[i];
    // On another host the file now on disk says nothing (p.on_disk[i] is null unless its
    // build id is the loaded one); the shim's own re-checks (o.changes) still count.
    FileFacts* fi = p.on_disk[i];
    if (o.identity.known() && fi == nullptr && !p.host.same_host) {
      ctx.files.Skipped(FindingName(FindingId::kAbiStaleLibrary),
                        "trace from another host: the file on disk not compared (the shim's own re-checks still count)",
                        o.path);
    }
    if (!o.identity.known() || (fi == nullptr && o.changes.empty())) continue;
    const std::string state = DiskState(o, fi, p.end_realtime_ns);
    if (state != "changed during the run") continue;
    if (fi != nullptr && !o.build_id.empty() && fi->image && fi->image->build_id() == o.build_id) continue;
    Finding f = Finding::Of(FindingId::kAbiStaleLibrary, p.trace->pid());
    Json& ev = f.evidence;
    ev["path"] = o.path;
    ev["loaded_build_id"] = o.build_id.empty() ? Json() : Json(o.build_id);
    Json loaded = Json::MakeObject();
    loaded["dev"] = o.identity.dev;
    loaded["inode"] = o.identity.ino;
    loaded["size"] = o.identity.size;
    loaded["mtime_ns"] = o.identity.mtime_ns;
    ev["loaded_file"] = std::move(loaded);
    Json changes = Json::MakeArray();
    for (const abi::IdentityChange& c : o.changes) {
      Json j = Json::MakeObject();
      j["at_ns_after_start"] = c.ts >= p.trace->start_ns() ? c.ts - p.trace->start_ns() : 0;
      j["seen_at"] = c.when == static_cast<uint64_t>(format::LibCheckWhen::kExit) ? "exit" : "later load";
      if (c.err != 0) {
        j["error"] = std::string(std::strerror(ErrnoOfResult(c.err)));
      } else {
        j["inode"] = c.now.ino;
        j["size"] = c.now.size;
        j["mtime_ns"] = c.now.mtime_ns;
      }
      changes.Append(std::move(j));
    }
    ev["changes"] = std::move(changes);
    if (!p.host.same_host) ev["disk_checks"] = p.host.DiskChecksLabel();
    if (fi != nullptr && fi->exists) {
      Json now = Json::MakeObject();
      now["inode"] = static_cast<uint64_t>(fi->st.st_ino);
      now["size"] = static_cast<uint64_t>(fi->st.st_size);
      now["build_id"] = fi->image && !fi->image->build_id().empty() ? Json(fi->image->build_id()) : Json();
      ev["on_disk_now"] = std::move(now);
    } else {
      ev["on_disk_now"] = Json();
    }
    f.summary = o.path + " was replaced on disk while the process had it loaded";
    ctx.findings.Add(std::move(f), o.path + '\0' + o.build_id);
  }
}

void StaleLibraryRule(RuleContext& rule) { ForEachProcessLibraries(rule, StaleLibraryOf); }

const RuleRegistration kStaleLibraryRuleRegistration(StaleLibraryRule,
    {FindingId::kAbiStaleLibrary});

}  // namespace

}  // namespace colabtrace::analyzer::abi
