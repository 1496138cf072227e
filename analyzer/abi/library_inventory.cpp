#include "abi/library_inventory.h"

#include "model/process_facts.h"

#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <unordered_map>

namespace colabtrace::analyzer::abi {
namespace {

using format::LibApi;

bool IsCall(uint64_t api) {
  return api == static_cast<uint64_t>(LibApi::kDlopen) ||
         api == static_cast<uint64_t>(LibApi::kDlmopen);
}

LibApi ApiOf(uint64_t api) {
  return api <= static_cast<uint64_t>(LibApi::kColabtrace) ? static_cast<LibApi>(api)
                                                           : LibApi::kDiscovered;
}

void FillFromRecord(const ProcessTrace& t, const Event<format::LibLoad>& r, LoadedLibrary& o) {
  o.path = std::string(t.Str(r.path));
  o.soname = std::string(t.Str(r.soname));
  o.requested = std::string(t.Str(r.requested));
  o.loaded_by = std::string(t.Str(r.requester));
  o.api = ApiOf(r.api);
  o.flags = r.flags;
  o.nsid = r.nsid;
  o.base = r.base;
  o.build_id = HexBytes(r.build_id);
  o.identity = {r.dev, r.ino, r.size, r.mtime_ns};
  o.loaded_ns = r.ts;
  o.caller = r.caller;
  o.stack = r.stack;
  o.is_vdso = o.path.find('/') == std::string::npos && o.path.starts_with("linux-");
}

// Takes the call's facts for an object another load wrote first (TakenByCall).
void AdoptCall(const ProcessTrace& t, const Event<format::LibLoad>& call, LoadedLibrary& o) {
  o.api = ApiOf(call.api);
  o.requested = std::string(t.Str(call.requested));
  o.loaded_by = std::string(t.Str(call.requester));
  o.flags = call.flags;
  o.caller = call.caller;
  o.stack = call.stack;
}

// An object another load wrote first (another thread's sync: "discovered"; colabtrace's
// own load) that a program's call names: the call says who loaded it and how. An
// RTLD_NOLOAD call that finds colabtrace's libcupti only asked whether it is there.
bool TakenByCall(LibApi api, const format::LibLoad& call) {
  return api == LibApi::kDiscovered || (api == LibApi::kColabtrace && (call.flags & RTLD_NOLOAD) == 0);
}

// Traces written before the shim marked its own loads (LibApi::kColabtrace): the libcupti
// the shim's CUPTI subscriber dlopen()ed appeared as a new object while it started, between
// InitializeInjection (CuptiState kInjected) and the state that ends the start (subscribed,
// backed off, failed), attributed by the loader to whichever DT_NEEDED named its soname
// (kDependency) or to nobody (kDiscovered). Such an object is the shim's.
void MarkLegacyCuptiLoads(const ProcessTrace& t, std::vector<LoadedLibrary>& objects) {
  for (const auto& r : t.records.LibLoad) {
    if (r.api == static_cast<uint64_t>(LibApi::kColabtrace)) return;  // the shim marked its own
  }
  std::optional<uint64_t> from, to;
  for (const auto& st : t.records.CuptiState) {
    const auto code = static_cast<format::CuptiStateCode>(st.state);
    if (code == format::CuptiStateCode::kInjected) {
      if (!from) from = st.ts;
    } else if (from && !to && code != format::CuptiStateCode::kFlushed) {
      to = st.ts;
    }
  }
  if (!from || !to) return;
  for (LoadedLibrary& o : objects) {
    if ((o.api == LibApi::kDependency || o.api == LibApi::kDiscovered) && o.loaded_ns >= *from &&
        o.loaded_ns <= *to && LibraryStem(o.soname.empty() ? o.path : o.soname) == "cupti") {
      o.api = LibApi::kColabtrace;
    }
  }
}

// Leaves out what colabtrace itself loaded (LibApi::kColabtrace objects, what their
// DT_NEEDED brought in while they were mapped, and loads they asked for that failed):
// none of it is the program's.
void DropColabtraceLoads(LibraryInventory& inv) {
  using Spans = std::vector<std::pair<uint64_t, uint64_t>>;  // [loaded, unloaded] of one path
  std::unordered_map<std::string_view, Spans> own_paths;
  auto requested_by_own = [&](const std::string& requester, uint64_t ts) {
    auto it = own_paths.find(requester);
    return it != own_paths.end() && std::any_of(it->second.begin(), it->second.end(), [&](const auto& span) {
             return ts >= span.first && ts <= span.second;
           });
  };
  std::vector<bool> own(inv.objects.size(), false);
  for (bool grew = true; grew;) {  // dependencies of dependencies, in any record order
    grew = false;
    for (size_t i = 0; i < inv.objects.size(); ++i) {
      const LoadedLibrary& o = inv.objects[i];
      if (own[i] || !(o.api == LibApi::kColabtrace ||
                      (o.api == LibApi::kDependency && requested_by_own(o.loaded_by, o.loaded_ns)))) {
        continue;
      }
      own[i] = grew = true;
      own_paths[o.path].emplace_back(o.loaded_ns, o.unloaded_ns.value_or(UINT64_MAX));
    }
  }
  if (own_paths.empty()) return;
  std::erase_if(inv.failures, [&](const FailedLoad& f) { return requested_by_own(f.requester, f.ts); });
  size_t w = 0;
  for (size_t i = 0; i < inv.objects.size(); ++i) {
    if (own[i]) continue;
    if (w != i) inv.objects[w] = std::move(inv.objects[i]);
    ++w;
  }
  inv.objects.resize(w);
}

}  // namespace

std::string HexBytes(const format::Bytes& b) {
  static const char kHex[] = "0123456789abcdef";
  std::string s;
  s.reserve(b.size * 2);
  for (uint32_t i = 0; i < b.size && b.data != nullptr; ++i) {
    s += kHex[b.data[i] >> 4];
    s += kHex[b.data[i] & 15];
  }
  return s;
}

std::string LibraryStem(std::string_view name) {
  if (const size_t slash = name.rfind('/'); slash != std::string_view::npos) {
    name = name.substr(slash + 1);
  }
  if (name.starts_with("lib")) name.remove_prefix(3);
  for (size_t at = name.find(".so"); at != std::string_view::npos; at = name.find(".so", at + 1)) {
    if (at + 3 == name.size() || name[at + 3] == '.') {
      name = name.substr(0, at);
      break;
    }
  }
  if (name.ends_with(".alt")) name.remove_suffix(4);
  if (name.size() > 9 && name[name.size() - 9] == '-' &&
      std::all_of(name.end() - 8, name.end(),
                  [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; })) {
    name.remove_suffix(9);
  }
  return std::string(name);
}

std::string DlopenFlagNames(int64_t flags) {
  std::string s;
  auto add = [&s](const char* n) {
    if (!s.empty()) s += '|';
    s += n;
  };
  switch (flags & RTLD_BINDING_MASK) {
    case RTLD_LAZY: add("RTLD_LAZY"); break;
    case RTLD_NOW: add("RTLD_NOW"); break;
    default: break;
  }
  if (flags & RTLD_GLOBAL) add("RTLD_GLOBAL");
  if (flags & RTLD_NOLOAD) add("RTLD_NOLOAD");
  if (flags & RTLD_NODELETE) add("RTLD_NODELETE");
  if (flags & RTLD_DEEPBIND) add("RTLD_DEEPBIND");
  return s.empty() ? std::string("0") : s;  // (not `s = "0"`: GCC 12's -Wrestrict false alarm)
}

std::string_view LibApiName(LibApi api) {
  switch (api) {
    case LibApi::kStartup: return "startup";
    case LibApi::kDlopen: return "dlopen";
    case LibApi::kDlmopen: return "dlmopen";
    case LibApi::kDependency: return "dependency";
    case LibApi::kDiscovered: return "discovered";
    case LibApi::kColabtrace: return "colabtrace";
  }
  return "discovered";
}

LibraryInventory LibraryInventory::Of(const ProcessTrace& t) {
  LibraryInventory inv;
  const auto& loads = t.records.LibLoad;
  const auto& unloads = t.records.LibUnload;
  const auto& checks = t.records.LibCheck;
  std::map<uint64_t, size_t> live;  // base -> objects index
  std::map<uint64_t, const Event<format::LibLoad>*> pending_calls;  // base -> call
  size_t li = 0, ui = 0, ci = 0;
  bool first_object = true;
  // Each exec starts a new image: everything the previous one had mapped is gone (a
  // wrapper's libraries are not the job's), and the new image's first object is its
  // program. The shim writes the image's process_start before its loads.
  std::vector<std::pair<uint64_t, uint64_t>> execs;  // (start ts, image) of images after the first
  for (const auto& s : t.records.ProcessStart) {
    if (s.image > 0) execs.emplace_back(s.ts, s.image);
  }
  std::sort(execs.begin(), execs.end());
  size_t next_exec = 0;
  uint64_t image = 0;
  // Three-way merge by time; at equal times loads come first, then checks, then unloads.
  while (li < loads.size() || ui < unloads.size() || ci < checks.size()) {
    const uint64_t tl = li < loads.size() ? loads[li].ts : UINT64_MAX;
    const uint64_t tu = ui < unloads.size() ? unloads[ui].ts : UINT64_MAX;
    const uint64_t tc = ci < checks.size() ? checks[ci].ts : UINT64_MAX;
    const uint64_t now = std::min({tl, tu, tc});
    while (next_exec < execs.size() && now >= execs[next_exec].first) {
      for (const auto& [base, idx] : live) inv.objects[idx].unloaded_ns = execs[next_exec].first;
      live.clear();
      pending_calls.clear();
      first_object = true;
      image = execs[next_exec++].second;
    }
    if (tl <= tu && tl <= tc && li < loads.size()) {
      const auto& r = loads[li++];
      if (IsCall(r.api) && r.ok == 0) {
        FailedLoad f;
        f.api = ApiOf(r.api);
        f.requested = std::string(t.Str(r.requested));
        f.requester = std::string(t.Str(r.requester));
        f.error = std::string(t.Str(r.error));
        f.flags = r.flags;
        f.nsid = r.nsid;
        f.ts = r.ts;
        f.stack = r.stack;
        inv.failures.push_back(std::move(f));
        continue;
      }
      if (r.fresh == 0) {
        // An object record is always fresh; colabtrace's own load of an object already
        // mapped (the program's libcupti) changes nothing.
        if (!IsCall(r.api)) continue;
        auto it = live.find(r.base);
        if (it == live.end()) {
          pending_calls[r.base] = &r;
        } else if (TakenByCall(inv.objects[it->second].api, r)) {
          AdoptCall(t, r, inv.objects[it->second]);
        }
        continue;
      }
      LoadedLibrary o;
      FillFromRecord(t, r, o);
      // The first object written at start is the executable.
      o.is_executable = first_object && o.api == LibApi::kStartup;
      o.image = image;
      first_object = false;
      if (auto pc = pending_calls.find(r.base); pc != pending_calls.end()) {
        if (TakenByCall(o.api, *pc->second)) AdoptCall(t, *pc->second, o);
        pending_calls.erase(pc);
      }
      live[r.base] = inv.objects.size();
      inv.objects.push_back(std::move(o));
    } else if (tc <= tu && ci < checks.size()) {
      const auto& c = checks[ci++];
      auto it = live.find(c.base);
      if (it == live.end()) continue;
      IdentityChange ch;
      ch.ts = c.ts;
      ch.now = {c.dev, c.ino, c.size, c.mtime_ns};
      ch.err = c.err;
      ch.when = c.when;
      inv.objects[it->second].changes.push_back(ch);
    } else {
      const auto& u = unloads[ui++];
      if (u.api == static_cast<uint64_t>(format::LibUnloadApi::kDlclose)) {
        ++inv.dlclose_calls;
        continue;
      }
      auto it = live.find(u.base);
      if (it == live.end()) continue;
      inv.objects[it->second].unloaded_ns = u.ts;
      live.erase(it);
    }
  }
  // An exec into a program the shim could not follow (static, secure exec, preload
  // dropped) ends the last traced image like any exec, and the program is the next
  // image's executable: ld.so mapped nothing else there that the trace could show.
  if (const auto* u = UntracedExecOf(t); u != nullptr) {
    for (const auto& [base, idx] : live) inv.objects[idx].unloaded_ns = u->ts;
    LoadedLibrary exe;
    exe.path = std::string(t.Str(u->exe));
    exe.api = LibApi::kStartup;
    exe.loaded_ns = u->ts;
    exe.is_executable = true;
    exe.image = u->image + 1;
    inv.objects.push_back(std::move(exe));
  }
  // RTLD_DEEPBIND reaches the dependencies a deep-bound load brought in with it (their
  // records may precede the call's: the shim writes the call last), and theirs in turn.
  // A breadth-first walk over "loaded_by" edges; each requester path's dependencies are
  // sorted by load time and consumed once, so the walk is O(n log n) on any trace.
  std::unordered_map<std::string_view, std::vector<size_t>> deps_of;  // requester path -> deps
  for (size_t i = 0; i < inv.objects.size(); ++i) {
    LoadedLibrary& o = inv.objects[i];
    o.deepbind = (o.flags & RTLD_DEEPBIND) != 0;
    if (o.api == LibApi::kDependency) deps_of[o.loaded_by].push_back(i);
  }
  for (auto& [path, deps] : deps_of) {
    std::stable_sort(deps.begin(), deps.end(), [&](size_t a, size_t b) {
      return inv.objects[a].loaded_ns < inv.objects[b].loaded_ns;
    });
  }
  std::unordered_map<std::string_view, size_t> consumed;  // requester path -> deps walked
  std::vector<size_t> queue;
  for (size_t i = 0; i < inv.objects.size(); ++i) {
    if (inv.objects[i].deepbind) queue.push_back(i);
  }
  while (!queue.empty()) {
    const LoadedLibrary& p = inv.objects[queue.back()];
    queue.pop_back();
    auto it = deps_of.find(p.path);
    if (it == deps_of.end()) continue;
    const uint64_t end = p.unloaded_ns.value_or(UINT64_MAX);
    size_t& next = consumed[p.path];
    while (next < it->second.size() && inv.objects[it->second[next]].loaded_ns <= end) {
      const size_t d = it->second[next++];
      if (!inv.objects[d].deepbind) {
        inv.objects[d].deepbind = true;
        queue.push_back(d);
      }
    }
  }
  MarkLegacyCuptiLoads(t, inv.objects);
  DropColabtraceLoads(inv);
  return inv;
}

LibraryInventories LibraryInventories::Build(const RunModel& run) {
  LibraryInventories all;
  all.of_trace.reserve(run.traces().size());
  for (const ProcessTrace& t : run.traces()) all.of_trace.push_back(LibraryInventory::Of(t));
  return all;
}

}  // namespace colabtrace::analyzer::abi
