// LibraryInventory (see inventory.h).
#include "inventory.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/stat.h>

#include <cstdlib>
#include <cstring>

#include "config.h"
#include "elf_dynamic.h"
#include "lifecycle.h"
#include "raw.h"
#include "real.h"
#include "writer.h"


namespace colabtrace::shim::libs {
namespace {

using format::LibApi;

constexpr int kMaxKnown = 4096;        // objects tracked at once
constexpr int kMaxNewPerSync = 1024;   // new objects handled in one sync
constexpr size_t kArenaSize = 1 << 20; // strings of tracked objects (BSS; touched pages only)
constexpr uint64_t kRecheckEveryNs = 2000000000ull;

// ---- string arena ---------------------------------------------------------------------

char g_arena[kArenaSize];
size_t g_arena_used = 1;  // offset 0 means "none"

uint32_t ArenaAdd(const char* s, size_t n) {
  if (s == nullptr || g_arena_used + n + 1 > kArenaSize) return 0;
  const uint32_t off = static_cast<uint32_t>(g_arena_used);
  std::memcpy(g_arena + off, s, n);
  g_arena[off + n] = '\0';
  g_arena_used += n + 1;
  return off;
}
uint32_t ArenaAdd(const char* s) { return s == nullptr ? 0 : ArenaAdd(s, std::strlen(s)); }
const char* ArenaStr(uint32_t off) { return off == 0 ? "" : g_arena + off; }

// ---- what we know about each object ------------------------------------------------------

struct Identity {
  uint64_t dev = 0, ino = 0, size = 0, mtime_ns = 0;
  int err = 0;  // -errno of the stat, 0 when it worked
  bool operator==(const Identity& o) const {
    return dev == o.dev && ino == o.ino && size == o.size && mtime_ns == o.mtime_ns && err == o.err;
  }
};

struct Known {
  uint64_t base = 0;
  const void* phdr = nullptr;  // dlpi_phdr: with base, identifies the mapping
  uint32_t path = 0, soname = 0, requested = 0, requester = 0;  // arena offsets
  uint32_t build_id = 0, build_id_len = 0;
  uint8_t api = 0;
  bool has_file = false;  // path names a file we stat (not the vDSO)
  bool seen = false;      // mark for the current sync
  int32_t flags = 0;
  int32_t nsid = 0;
  Identity loaded;  // at load time
  Identity last;    // last reported
};

Known g_known[kMaxKnown];  // sorted by (base, phdr)
int g_known_count = 0;

bool KeyLess(uint64_t b1, const void* p1, uint64_t b2, const void* p2) {
  return b1 != b2 ? b1 < b2 : reinterpret_cast<uintptr_t>(p1) < reinterpret_cast<uintptr_t>(p2);
}

// Index of the first entry not less than (base, phdr).
int LowerBound(uint64_t base, const void* phdr) {
  int lo = 0, hi = g_known_count;
  while (lo < hi) {
    const int mid = (lo + hi) / 2;
    if (KeyLess(g_known[mid].base, g_known[mid].phdr, base, phdr)) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

Known* FindKnown(uint64_t base, const void* phdr) {
  const int i = LowerBound(base, phdr);
  if (i < g_known_count && g_known[i].base == base && g_known[i].phdr == phdr) return &g_known[i];
  return nullptr;
}

Known* FindKnownByBase(uint64_t base) {
  const int i = LowerBound(base, nullptr);
  return i < g_known_count && g_known[i].base == base ? &g_known[i] : nullptr;
}

Known* InsertKnown(const Known& k) {
  if (g_known_count == kMaxKnown) return nullptr;
  const int i = LowerBound(k.base, k.phdr);
  std::memmove(&g_known[i + 1], &g_known[i], sizeof(Known) * static_cast<size_t>(g_known_count - i));
  g_known[i] = k;
  ++g_known_count;
  return &g_known[i];
}

// ---- process facts -----------------------------------------------------------------------

char g_preload[4096];  // LD_PRELOAD at start
unsigned long long g_seen_adds = ~0ull, g_seen_subs = ~0ull;
uint64_t g_last_recheck_ns = 0;

void ReadPreload() {
  g_preload[0] = '\0';
  const char* p = getenv("LD_PRELOAD");
  if (p != nullptr) {
    std::strncpy(g_preload, p, sizeof(g_preload) - 1);
    g_preload[sizeof(g_preload) - 1] = '\0';
  }
}

// `name` as an absolute path: a loader name with a relative directory ("lib/libx.so",
// from a relative dlopen path or LD_LIBRARY_PATH entry) is joined to the current
// directory. Names without a '/' (the vDSO) and absolute ones are returned as they are.
const char* AbsolutePath(const char* name, char* buf, size_t cap) {
  if (name == nullptr || name[0] == '/' || std::strchr(name, '/') == nullptr) return name;
  const long n = raw::Syscall6(SYS_getcwd, reinterpret_cast<long>(buf), static_cast<long>(cap));
  if (n <= 0) return name;
  size_t len = std::strlen(buf);
  const char* rel = name;
  while (rel[0] == '.' && rel[1] == '/') rel += 2;
  const size_t rl = std::strlen(rel);
  if (len + 1 + rl + 1 > cap) return name;
  if (len > 1) buf[len++] = '/';
  std::memcpy(buf + len, rel, rl + 1);
  return buf;
}

const char* Basename(const char* path) {
  const char* s = std::strrchr(path, '/');
  return s != nullptr ? s + 1 : path;
}

// The LD_PRELOAD entry that names `path` (whole path, or file name for bare entries),
// copied into the arena; 0 if none.
uint32_t PreloadEntryFor(const char* path) {
  const char* base = Basename(path);
  for (const char* p = g_preload; *p != '\0';) {
    while (*p == ':' || *p == ' ') ++p;
    const char* e = p;
    while (*e != '\0' && *e != ':' && *e != ' ') ++e;
    const size_t n = static_cast<size_t>(e - p);
    if (n > 0) {
      const bool has_slash = std::memchr(p, '/', n) != nullptr;
      const char* target = has_slash ? path : base;
      if (std::strlen(target) == n && std::memcmp(target, p, n) == 0) return ArenaAdd(p, n);
    }
    p = e;
  }
  return 0;
}

Identity StatIdentity(const char* path) {
  Identity id;
  struct stat st;
  const long r = raw::Syscall6(SYS_newfstatat, AT_FDCWD, reinterpret_cast<long>(path),
                               reinterpret_cast<long>(&st), 0);
  if (r != 0) {
    id.err = static_cast<int>(r);
    return id;
  }
  id.dev = st.st_dev;
  id.ino = st.st_ino;
  id.size = static_cast<uint64_t>(st.st_size);
  id.mtime_ns = static_cast<uint64_t>(st.st_mtim.tv_sec) * 1000000000ull +
                static_cast<uint64_t>(st.st_mtim.tv_nsec);
  return id;
}

// ---- reading a loaded object ---------------------------------------------------------------

bool InLoadedSegment(const struct dl_phdr_info* info, uintptr_t a, size_t n) {
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    const uintptr_t lo = info->dlpi_addr + ph.p_vaddr, hi = lo + ph.p_filesz;
    if (a >= lo && a <= hi && n <= hi - a) return true;
  }
  return false;
}

// The dynamic section of a mapped object (elf_dynamic.h), its string table kept only
// when it lies whole inside a loaded segment: its soname and DT_NEEDED names are then
// read within bounds, whatever the section says.
ElfDynamic ReadDynamic(const struct dl_phdr_info* info) {
  ElfDynamic d = ReadElfDynamic(info);
  if (d.strtab != nullptr &&
      (d.strsz == 0 || !InLoadedSegment(info, reinterpret_cast<uintptr_t>(d.strtab), d.strsz))) {
    d.strtab = nullptr;
  }
  return d;
}

const char* Soname(const ElfDynamic& d) {
  return d.soname == UINT64_MAX ? nullptr : d.String(d.soname);
}

// NT_GNU_BUILD_ID of a mapped object, or an empty view.
format::Bytes BuildId(const struct dl_phdr_info* info) {
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    const uintptr_t start = info->dlpi_addr + ph.p_vaddr;
    if (!InLoadedSegment(info, start, ph.p_memsz)) continue;
    const uint8_t* p = reinterpret_cast<const uint8_t*>(start);
    const uint8_t* e = p + ph.p_memsz;
    while (p + 12 <= e) {
      uint32_t namesz, descsz, type;
      std::memcpy(&namesz, p, 4);
      std::memcpy(&descsz, p + 4, 4);
      std::memcpy(&type, p + 8, 4);
      const uint8_t* desc = p + 12 + ((namesz + 3) & ~3u);
      if (desc > e || descsz > static_cast<size_t>(e - desc)) break;
      if (type == NT_GNU_BUILD_ID && namesz == 4 && std::memcmp(p + 12, "GNU", 4) == 0 &&
          descsz <= 64) {
        return format::Bytes{desc, descsz};
      }
      p = desc + ((descsz + 3) & ~3u);
    }
  }
  return {};
}

// The dlmopen namespace of a mapped object: the head of its link_map list compared with
// each namespace's r_debug (glibc 2.35+). 0 when it cannot tell.
int32_t NamespaceOf(const struct dl_phdr_info* info) {
  const DlFindObjectFn find = RealDlFindObject();
  if (find == nullptr || info->dlpi_phnum == 0) return 0;
  uintptr_t inside = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    if (info->dlpi_phdr[i].p_type == PT_LOAD) {
      inside = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
      break;
    }
  }
  struct dl_find_object fo;
  if (inside == 0 || find(reinterpret_cast<void*>(inside), &fo) != 0 ||
      fo.dlfo_link_map == nullptr) {
    return 0;
  }
  const struct link_map* m = fo.dlfo_link_map;
  for (int guard = 0; m->l_prev != nullptr && guard < 100000; ++guard) m = m->l_prev;
  if (m == _r_debug.r_map) return 0;
  if (_r_debug.r_version >= 2) {
    int32_t ns = 0;
    for (auto* e = reinterpret_cast<const struct r_debug_extended*>(&_r_debug); e != nullptr && ns < 1024;
         e = e->r_next, ++ns) {
      if (e->base.r_map == m) return ns;
    }
  }
  return -1;
}

// ---- emitting ------------------------------------------------------------------------------

void FillIdentity(format::LibLoad& r, const Identity& id) {
  r.dev = id.dev;
  r.ino = id.ino;
  r.size = id.size;
  r.mtime_ns = id.mtime_ns;
}

void EmitObject(const Known& k, uint64_t ts) {
  format::LibLoad r;
  r.ts = ts;
  r.api = k.api;
  r.requested = InternCString(ArenaStr(k.requested));
  r.path = InternCString(ArenaStr(k.path));
  r.requester = InternCString(ArenaStr(k.requester));
  r.flags = k.flags;
  r.nsid = k.nsid;
  r.ok = 1;
  r.base = k.base;
  FillIdentity(r, k.loaded);
  r.build_id = format::Bytes{reinterpret_cast<const uint8_t*>(g_arena + k.build_id), k.build_id_len};
  if (k.build_id == 0) r.build_id = {};
  r.soname = InternCString(ArenaStr(k.soname));
  r.fresh = 1;
  Emit(r);
}

void EmitCheck(const Known& k, const Identity& now, format::LibCheckWhen when) {
  format::LibCheck c;
  c.ts = Ticks();
  c.path = InternCString(ArenaStr(k.path));
  c.base = k.base;
  c.dev = now.dev;
  c.ino = now.ino;
  c.size = now.size;
  c.mtime_ns = now.mtime_ns;
  c.err = now.err;
  c.when = static_cast<uint64_t>(when);
  Emit(c);
}

// Completes a call's record with what the inventory knows about its target.
void CompleteCallRecord(format::LibLoad& r, const Known& k, bool fresh) {
  FillIdentity(r, k.loaded);
  if (k.build_id != 0) {
    r.build_id = format::Bytes{reinterpret_cast<const uint8_t*>(g_arena + k.build_id), k.build_id_len};
  }
  r.soname = InternCString(ArenaStr(k.soname));
  r.path = InternCString(ArenaStr(k.path));
  r.nsid = k.nsid;
  r.fresh = fresh ? 1 : 0;
}

// ---- the sync ----------------------------------------------------------------------------

// What the current sync asks about the target of the call that triggered it.
struct Claim {
  uint64_t base = 0;
  const char* name = nullptr;  // the target's l_name pointer (dlpi_name is the same pointer)
  LibApi api = LibApi::kDlopen;
  int32_t flags = 0;
  const char* requested = nullptr;
  const char* requester = nullptr;
  format::LibLoad* record = nullptr;  // the call's record, completed and written by the sync
  bool claimed = false;               // out: this sync mapped the target (and wrote record)
};

struct NewObject {
  Known k;
  bool needer_is_new = false;
  bool has_needer = false;
  bool is_main = false;
  bool claimed = false;
};

NewObject g_new[kMaxNewPerSync];
int g_new_count = 0;
bool g_new_overflow = false;
bool g_at_start = false;

// A walk of the loader's list (dl_iterate_phdr) that finds what was mapped since the
// last sync: known objects are marked seen; new ones are collected into g_new with their
// path, soname, build-id and namespace, and the one the call asked for is claimed.
struct NewObjectScan {
  Claim* claim;
  bool first = true;  // the next object is the list's first (the main program)
};

int ScanLoadedObject(struct dl_phdr_info* info, size_t, void* data) {
  auto* scan = static_cast<NewObjectScan*>(data);
  const bool first = scan->first;
  scan->first = false;
  if (Known* k = FindKnown(info->dlpi_addr, info->dlpi_phdr)) {
    k->seen = true;
    return 0;
  }
  if (g_new_count == kMaxNewPerSync) {
    g_new_overflow = true;
    return 0;
  }
  NewObject& n = g_new[g_new_count++];
  n = NewObject{};
  Known& k = n.k;
  k.base = info->dlpi_addr;
  k.phdr = info->dlpi_phdr;
  const char* name = info->dlpi_name != nullptr ? info->dlpi_name : "";
  n.is_main = first && name[0] == '\0';
  char abs[4096];
  k.path = ArenaAdd(name[0] == '\0' && first ? SelfExePath() : AbsolutePath(name, abs, sizeof(abs)));
  k.has_file = std::strchr(ArenaStr(k.path), '/') != nullptr;
  const ElfDynamic dyn = ReadDynamic(info);
  k.soname = ArenaAdd(Soname(dyn));
  const format::Bytes bid = BuildId(info);
  if (bid.size != 0) {
    k.build_id = ArenaAdd(reinterpret_cast<const char*>(bid.data), bid.size);
    k.build_id_len = k.build_id != 0 ? bid.size : 0;
  }
  k.nsid = NamespaceOf(info);
  k.seen = true;
  Claim* c = scan->claim;
  if (c != nullptr && !c->claimed && c->name != nullptr && info->dlpi_name == c->name &&
      info->dlpi_addr == c->base) {
    c->claimed = true;
    n.claimed = true;
  }
  return 0;
}

// A second walk, once new objects were found: each loaded object's DT_NEEDED names are
// matched against the new objects, so each one learns which object needed it (its
// requester) and by what name (requested). A new object's need outranks an old one's.
int AttributeNeededObjects(struct dl_phdr_info* info, size_t, void*) {
  const ElfDynamic dyn = ReadDynamic(info);
  if (dyn.strtab == nullptr) return 0;
  // Is this needer one of the new objects? Which arena path names it?
  bool needer_new = false;
  uint32_t needer_path = 0;
  if (Known* k = FindKnown(info->dlpi_addr, info->dlpi_phdr)) {
    needer_path = k->path;
  } else {
    for (int i = 0; i < g_new_count; ++i) {
      if (g_new[i].k.base == info->dlpi_addr && g_new[i].k.phdr == info->dlpi_phdr) {
        needer_new = true;
        needer_path = g_new[i].k.path;
        break;
      }
    }
  }
  if (needer_path == 0) return 0;
  ForEachNeeded(dyn, [&](const char* needed) {
    for (int i = 0; i < g_new_count; ++i) {
      NewObject& n = g_new[i];
      if (n.k.base == info->dlpi_addr && n.k.phdr == info->dlpi_phdr) continue;  // itself
      if (n.has_needer && (n.needer_is_new || !needer_new)) continue;
      const char* soname = ArenaStr(n.k.soname);
      const char* base = Basename(ArenaStr(n.k.path));
      uint32_t requested = 0;
      if (n.k.soname != 0 && std::strcmp(soname, needed) == 0) {
        requested = n.k.soname;
      } else if (std::strcmp(base, needed) == 0) {
        requested = n.k.path + static_cast<uint32_t>(base - ArenaStr(n.k.path));
      } else if (std::strchr(needed, '/') != nullptr && std::strcmp(ArenaStr(n.k.path), needed) == 0) {
        requested = n.k.path;
      }
      if (requested == 0) continue;
      n.has_needer = true;
      n.needer_is_new = needer_new;
      n.k.requester = needer_path;
      n.k.requested = requested;
    }
  });
  return 0;
}

void RecheckFiles(format::LibCheckWhen when) {
  for (int i = 0; i < g_known_count; ++i) {
    Known& k = g_known[i];
    if (!k.has_file || k.loaded.err != 0) continue;
    const Identity now = StatIdentity(ArenaStr(k.path));
    if (now == k.last) continue;
    EmitCheck(k, now, when);
    k.last = now;
  }
}

// Brings the inventory in step with the loader. Call with the lock held, inside an
// entered ShimScope.
void Sync(Claim* claim, uint64_t ts) {
  unsigned long long adds, subs;
  ReadLoaderCounters(&adds, &subs);
  if (adds == g_seen_adds && subs == g_seen_subs) return;  // nothing mapped or unmapped
  SyncModuleMap();
  for (int i = 0; i < g_known_count; ++i) g_known[i].seen = false;
  g_new_count = 0;
  g_new_overflow = false;
  NewObjectScan scan{claim};
  dl_iterate_phdr(ScanLoadedObject, &scan);
  // Objects gone from the loader's list.
  int w = 0;
  for (int i = 0; i < g_known_count; ++i) {
    const Known& k = g_known[i];
    if (!k.seen) {
      format::LibUnload u;
      u.ts = ts;
      u.path = InternCString(ArenaStr(k.path));
      u.base = k.base;
      u.api = static_cast<uint64_t>(format::LibUnloadApi::kUnmapped);
      Emit(u);
      continue;
    }
    if (w != i) g_known[w] = g_known[i];
    ++w;
  }
  g_known_count = w;
  if (g_new_count > 0) dl_iterate_phdr(AttributeNeededObjects, nullptr);
  for (int i = 0; i < g_new_count; ++i) {
    NewObject& n = g_new[i];
    Known& k = n.k;
    if (n.claimed) {
      k.api = static_cast<uint8_t>(claim->api);
      k.flags = claim->flags;
      k.requested = ArenaAdd(claim->requested);
      k.requester = ArenaAdd(claim->requester);
    } else if (g_at_start) {
      k.api = static_cast<uint8_t>(LibApi::kStartup);
      if (!n.has_needer && !n.is_main && k.has_file) {
        if (const uint32_t pre = PreloadEntryFor(ArenaStr(k.path))) {
          k.requested = pre;
          k.requester = ArenaAdd("LD_PRELOAD");
        }
      }
    } else {
      k.api = static_cast<uint8_t>(n.has_needer ? LibApi::kDependency : LibApi::kDiscovered);
    }
    if (k.has_file) k.loaded = StatIdentity(ArenaStr(k.path));
    k.last = k.loaded;
    InsertKnown(k);
  }
  // The call's own record first, then what its target brought in.
  for (int i = 0; i < g_new_count; ++i) {
    if (g_new[i].claimed && claim->record != nullptr) {
      CompleteCallRecord(*claim->record, g_new[i].k, /*fresh=*/true);
      Emit(*claim->record);
    }
  }
  for (int i = 0; i < g_new_count; ++i) {
    if (!g_new[i].claimed) EmitObject(g_new[i].k, ts);
  }
  if (!g_new_overflow) {
    g_seen_adds = adds;
    g_seen_subs = subs;
  }
}

// ---- the try-lock ----------------------------------------------------------------------

int g_lock = 0;
uint32_t g_requests = 0;  // syncs asked for by threads that found the lock taken
uint32_t g_handled = 0;   // under the lock: requests covered by a sync

bool TryLock() { return __atomic_exchange_n(&g_lock, 1, __ATOMIC_ACQUIRE) == 0; }

// Takes the lock, waiting a little: only at start and exit, where no loader lock is held.
bool LockPatiently() {
  for (int i = 0; i < 2000; ++i) {
    if (TryLock()) return true;
    raw::Syscall6(SYS_sched_yield);
  }
  return false;
}

// Runs the syncs other threads asked for, then releases the lock.
void DrainAndUnlock() {
  for (;;) {
    for (uint32_t r = __atomic_load_n(&g_requests, __ATOMIC_ACQUIRE); r != g_handled;
         r = __atomic_load_n(&g_requests, __ATOMIC_ACQUIRE)) {
      g_handled = r;
      Sync(nullptr, Ticks());
    }
    __atomic_store_n(&g_lock, 0, __ATOMIC_RELEASE);
    if (__atomic_load_n(&g_requests, __ATOMIC_ACQUIRE) == g_handled || !TryLock()) return;
  }
}

// Syncs now, or leaves the sync to the thread holding the lock.
void SyncOrDefer() {
  __atomic_add_fetch(&g_requests, 1, __ATOMIC_ACQ_REL);
  if (TryLock()) DrainAndUnlock();
}

void MaybeRecheck() {
  const uint64_t now = MonotonicNs();
  if (now - g_last_recheck_ns < kRecheckEveryNs) return;
  g_last_recheck_ns = now;
  RecheckFiles(format::LibCheckWhen::kLaterLoad);
}

const char* RequesterName(const CallerObject& c, char* buf, size_t cap) {
  if (c.name == nullptr) return "";
  return c.name[0] == '\0' ? SelfExePath() : AbsolutePath(c.name, buf, cap);
}

}  // namespace

format::Bytes LoadedBuildId(const struct dl_phdr_info* info) { return BuildId(info); }

void RecordLoadCall(const LoadCall& c) {
  char requester[4096];
  const char* requester_name = RequesterName(c.caller, requester, sizeof(requester));
  format::LibLoad r;
  r.ts = c.t1;
  r.api = static_cast<uint64_t>(c.api);
  r.requested = InternCString(c.requested != nullptr ? c.requested : "");
  r.requester = InternCString(requester_name);
  r.flags = c.mode;
  r.nsid = c.api == LibApi::kDlmopen ? c.lmid : 0;
  r.ok = c.handle != nullptr ? 1 : 0;
  r.error = InternCString(c.error);
  r.handle = reinterpret_cast<uint64_t>(c.handle);
  r.dur = c.t1 - c.t0;
  r.caller = reinterpret_cast<uint64_t>(c.return_address);
  if (g_config.stack_depth > 0) {
    uint64_t frames[kMaxStackDepth];
    const size_t n = CaptureStack(frames, static_cast<size_t>(g_config.stack_depth), 0);
    size_t skip = 0;
    while (skip < n && IsShimCode(reinterpret_cast<const void*>(frames[skip]))) ++skip;
    r.stack = InternStack(frames + skip, n - skip);
  }
  Claim claim;
  if (c.handle != nullptr) {
    const auto* m = static_cast<const struct link_map*>(c.handle);
    claim.base = m->l_addr;
    claim.name = m->l_name;
    claim.api = c.api;
    claim.flags = c.mode;
    claim.requested = c.requested != nullptr ? c.requested : "";
    claim.requester = requester_name;
    r.base = m->l_addr;
    char abs[4096];
    r.path = InternCString(m->l_name != nullptr && m->l_name[0] != '\0'
                               ? AbsolutePath(m->l_name, abs, sizeof(abs))
                               : SelfExePath());
  }
  __atomic_add_fetch(&g_requests, 1, __ATOMIC_ACQ_REL);
  if (!TryLock()) {
    // Another thread is syncing and will pick up what this call mapped.
    Emit(r);
    return;
  }
  g_handled = __atomic_load_n(&g_requests, __ATOMIC_ACQUIRE);
  claim.record = &r;
  Sync(c.handle != nullptr ? &claim : nullptr, c.t1);
  if (!claim.claimed) {
    if (c.handle != nullptr) {
      if (const Known* k = FindKnownByBase(claim.base)) CompleteCallRecord(r, *k, /*fresh=*/false);
    }
    Emit(r);
  }
  MaybeRecheck();
  DrainAndUnlock();
}

void RecordCloseCall(void* handle, int rc, const char* error, uint64_t t0, uint64_t t1) {
  (void)t0;
  format::LibUnload u;
  u.ts = t1;
  u.handle = reinterpret_cast<uint64_t>(handle);
  u.api = static_cast<uint64_t>(format::LibUnloadApi::kDlclose);
  u.rc = rc;
  u.error = InternCString(error);
  Emit(u);
  SyncOrDefer();
}

void InventoryStart(StartKind kind) {
  if (kind == StartKind::kForkChild) {
    // One thread, inherited state: whoever held the lock is gone.
    g_lock = 0;
    g_requests = g_handled = 0;
    const uint64_t ts = Ticks();
    for (int i = 0; i < g_known_count; ++i) EmitObject(g_known[i], ts);
    if (TryLock()) {
      Sync(nullptr, ts);
      DrainAndUnlock();
    }
    return;
  }
  const bool locked = LockPatiently();
  ReadPreload();
  g_known_count = 0;
  g_arena_used = 1;
  g_seen_adds = g_seen_subs = ~0ull;
  g_at_start = true;
  Sync(nullptr, Ticks());
  g_at_start = false;
  g_last_recheck_ns = MonotonicNs();
  if (locked) DrainAndUnlock();
}

void InventoryFinish() {
  const bool locked = LockPatiently();
  Sync(nullptr, Ticks());
  RecheckFiles(format::LibCheckWhen::kExit);
  if (locked) DrainAndUnlock();
}

}  // namespace colabtrace::shim::libs
