#include "writer.h"

#include <pthread.h>
#include <sys/mman.h>

#include <cstddef>
#include <cstring>

#include "raw.h"

namespace colabtrace::shim {

constinit thread_local ThreadState t_thread CT_TLS;
static_assert(offsetof(ThreadState, vfork_pending) == 48, "update vfork_x86_64.S");
TraceFile g_trace;
uint32_t g_generation = 1;
int g_pid = 0;
bool g_recording = false;
uint32_t g_intern_epoch = 1;
uint64_t g_sample_due_ticks = UINT64_MAX;
void (*g_sample_hook)(uint64_t) = nullptr;
void (*g_vfork_parent_hook)() = nullptr;

bool RecordingSlow(ThreadState& t) {
  if (!g_recording || t.busy) return false;
  if (t.vfork_pending) {
    // A vfork child shares this thread's memory, TLS included, with its parent: it must
    // not write into the parent's chunk. The parent clears the flag once it resumes.
    if (raw::Getpid() != g_pid) return false;
    t.vfork_pending = 0;
    if (g_vfork_parent_hook != nullptr) g_vfork_parent_hook();
  }
  return true;
}

bool InVforkChild() {
  return t_thread.vfork_pending != 0 && raw::Getpid() != g_pid;
}

namespace {
uint32_t g_thread_numbers = 0;  // threads that joined a trace of this process (atomic)

// The key whose destructor tells the shim that a thread exits (WatchThreadExits).
pthread_key_t g_exit_key;
int g_exit_key_state = 0;  // 0 none, 1 being created, 2 ready, 3 failed (atomic)
void (*g_exit_also)(ThreadState&) = nullptr;  // WatchThreadExits' `also` (atomic)

void OnThreadExit(void*) { RetireThread(); }

// The calling thread's key value, so that its exit runs OnThreadExit: set once per thread
// (at its first chunk), a store into the thread's own slot.
void WatchThisThread() {
  if (__atomic_load_n(&g_exit_key_state, __ATOMIC_ACQUIRE) == 2) {
    pthread_setspecific(g_exit_key, reinterpret_cast<void*>(1));
  }
}

// First record of this thread in this process's trace: its chunks are the parent's (a
// fork child) or none. A chunk the parent had mapped on its own is unmapped here (the
// parent's trace file stays as the parent left it).
void JoinTrace(ThreadState& t) {
  if (!t.signal_context) {
    if (t.chunk != nullptr && t.own_map) g_trace.ReleaseChunk(t.chunk, /*own_map=*/true);
    if (t.ev.chunk != nullptr && t.ev.own_map) g_trace.ReleaseChunk(t.ev.chunk, /*own_map=*/true);
    if (t.lent.chunk != nullptr && t.lent.own_map) g_trace.ReleaseChunk(t.lent.chunk, /*own_map=*/true);
  }
  t.tid = static_cast<uint32_t>(raw::Gettid());
  t.number = __atomic_add_fetch(&g_thread_numbers, 1, __ATOMIC_RELAXED);
  t.seq = 0;
  t.generation = g_generation;
  t.chunk = t.pos = t.end = nullptr;
  t.own_map = false;
  if (!t.signal_context) {
    t.ev = ThreadState::EventCursor{};
    t.lent = ThreadState::LentCursor{};
    t.retired = false;
    WatchThisThread();
  }
}

// A record chunk that t leaves with records in it (at its exit, or a lent chunk t no
// longer needs): into the pool for a later thread's records of no thread while a record of
// kMinPooledRoom fits, else finished.
constexpr size_t kMinPooledRoom = 1024;
void LeaveRecordChunk(uint8_t* chunk, const uint8_t* pos, uint64_t last_ts, bool own_map) {
  const auto used = static_cast<uint32_t>(pos - chunk);
  if (format::kChunkSize - used < kMinPooledRoom || !g_trace.PoolRecordChunk({chunk, used, last_ts, own_map})) {
    g_trace.ReleaseChunk(chunk, own_map);
  }
}

// t's lent chunk, if it has one, goes back to the pool (or is finished).
void GiveBackLentChunk(ThreadState& t) {
  ThreadState::LentCursor& l = t.lent;
  if (l.chunk != nullptr) LeaveRecordChunk(l.chunk, l.pos, l.last_ts, l.own_map);
  l = ThreadState::LentCursor{};
}

// A new record chunk for t from the file (its header stamped, magic last); nullptr once
// tracing has stopped.
uint8_t* NewRecordChunk(ThreadState& t, uint64_t ts, bool* own_map) {
  uint8_t* c = g_trace.AllocChunk(!t.signal_context, t.signal_context ? nullptr : own_map);
  if (c == nullptr) return nullptr;
  auto* ch = reinterpret_cast<format::ChunkHeader*>(c);
  ch->tid = t.tid;
  ch->base_ticks = ts;
  ch->seq = t.seq++;
  ch->flags = t.signal_context ? uint32_t{format::kChunkFromSignalHandler} : 0u;
  ch->image = g_trace.image();
  ch->thread = t.number;
  __atomic_store_n(&ch->magic, format::kChunkMagic, __ATOMIC_RELEASE);
  return c;
}
}  // namespace

void WatchThreadExits(void (*also)(ThreadState&)) {
  __atomic_store_n(&g_exit_also, also, __ATOMIC_RELEASE);
  int state = 0;
  if (!__atomic_compare_exchange_n(&g_exit_key_state, &state, 1, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) return;
  // A key past the first block (32 keys in glibc) would make each thread's value an
  // allocation in libc: without a key of the first block, exits are not watched (and the
  // key stays unused: pthread_key_delete is not among the calls the shim may bind to on
  // every glibc, shim/glibc_floor.cpp).
  const bool first_block = pthread_key_create(&g_exit_key, OnThreadExit) == 0 && g_exit_key < 32;
  __atomic_store_n(&g_exit_key_state, first_block ? 2 : 3, __ATOMIC_RELEASE);
}

void RetireThread() {
  ThreadState& t = t_thread;
  if (t.generation != g_generation || t.signal_context || raw::Getpid() != g_pid) return;
  ShimScope scope;
  if (!scope.entered()) return;
  ThreadState::EventCursor& e = t.ev;
  if (e.chunk != nullptr) {
    __atomic_store_n(&reinterpret_cast<format::EventChunkHeader*>(e.chunk)->end_ticks, e.last_ts,
                     __ATOMIC_RELAXED);
    const uint64_t total = e.before + e.count;
    const bool counted = g_trace.RetireEventChunk(e.chunk, e.own_map, e.offset, e.last_ts, total);
    e = ThreadState::EventCursor{};
    e.before = counted ? 0 : total;  // in the header, a later chunk counts from 0
  }
  if (t.chunk != nullptr) {
    LeaveRecordChunk(t.chunk, t.pos, t.last_ts, t.own_map);
    t.chunk = t.pos = t.end = nullptr;
    t.own_map = false;
  }
  GiveBackLentChunk(t);
  t.retired = true;
  if (void (*also)(ThreadState&) = __atomic_load_n(&g_exit_also, __ATOMIC_ACQUIRE)) also(t);
}

bool OpenChunk(ThreadState& t, size_t need, uint64_t ts) {
  if (need > format::kChunkSize - sizeof(format::ChunkHeader)) return false;
  // A child made by a raw clone() system call (no fork hook saw it) still maps its
  // parent's trace: it takes no chunk of it. (Once per chunk: a syscall is cheap here.)
  if (raw::Getpid() != g_pid) return false;
  if (t.generation == g_generation) {
    if (t.chunk != nullptr && !t.signal_context) g_trace.ReleaseChunk(t.chunk, t.own_map);
  } else {
    JoinTrace(t);
  }
  // With a record chunk of its own, the thread's records of no thread go there too.
  if (!t.signal_context) GiveBackLentChunk(t);
  t.chunk = t.pos = t.end = nullptr;
  uint8_t* c = NewRecordChunk(t, ts, &t.own_map);
  if (c == nullptr) return false;
  t.chunk = c;
  t.pos = c + sizeof(format::ChunkHeader);
  t.end = c + format::kChunkSize;
  t.last_ts = ts;
  return true;
}

bool OpenLentChunk(ThreadState& t, size_t need, uint64_t ts) {
  if (need > format::kChunkSize - sizeof(format::ChunkHeader)) return false;
  if (raw::Getpid() != g_pid) return false;  // see OpenChunk
  if (t.generation != g_generation) JoinTrace(t);
  ThreadState::LentCursor& l = t.lent;
  if (l.chunk != nullptr) g_trace.ReleaseChunk(l.chunk, l.own_map);  // no room for this record
  l = ThreadState::LentCursor{};
  TraceFile::LeftRecordChunk left;
  if (!t.retired && g_trace.TakePooledRecordChunk(need, &left)) {
    l.chunk = left.chunk;
    l.pos = left.chunk + left.used;
    l.last_ts = left.last_ts;
    l.own_map = left.own_map;
  } else {
    l.chunk = NewRecordChunk(t, ts, &l.own_map);
    if (l.chunk == nullptr) return false;
    l.pos = l.chunk + sizeof(format::ChunkHeader);
    l.last_ts = ts;
  }
  l.end = l.chunk + format::kChunkSize;
  return true;
}

bool OpenEventChunk(ThreadState& t, size_t need, uint64_t ts) {
  constexpr size_t kHeader = sizeof(format::EventChunkHeader);
  if (need > format::kChunkSize - kHeader) return false;
  if (raw::Getpid() != g_pid) return false;  // see OpenChunk
  if (t.generation != g_generation) JoinTrace(t);
  ThreadState::EventCursor& e = t.ev;
  // The thread's current event chunk stays its own until the next one is committed: the
  // latest event chunk of each thread is never rewritten, so its events_before plus its
  // records count every droppable record the thread wrote, whatever a kill interrupts.
  bool own_map = false;
  uint64_t offset = 0;
  uint8_t* c = g_trace.AllocEventChunk(ts, &own_map, &offset);
  if (c == nullptr) return false;
  auto* eh = reinterpret_cast<format::EventChunkHeader*>(c);
  eh->chunk.tid = t.tid;
  eh->chunk.base_ticks = ts;
  eh->chunk.seq = t.seq++;
  eh->chunk.flags = own_map ? uint32_t{format::kChunkRecycled} : 0u;
  eh->chunk.image = g_trace.image();
  eh->chunk.thread = t.number;
  eh->events_before = e.before + e.count;
  eh->order = g_trace.NextEventOrder();
  eh->end_ticks = 0;
  __atomic_store_n(&eh->chunk.magic, format::kEventChunkMagic, __ATOMIC_RELEASE);
  if (e.chunk != nullptr) {
    __atomic_store_n(&reinterpret_cast<format::EventChunkHeader*>(e.chunk)->end_ticks, e.last_ts,
                     __ATOMIC_RELAXED);
    g_trace.ReleaseEventChunk(e.chunk, e.own_map, e.offset, e.last_ts);
  }
  e.before += e.count;
  e.count = 0;
  e.chunk = c;
  e.pos = c + kHeader;
  e.end = c + format::kChunkSize;
  e.last_ts = ts;
  e.offset = offset;
  e.own_map = own_map;
  return true;
}

// ---- interning --------------------------------------------------------------------------
namespace {


struct InternSlot {
  uint64_t hash;  // 0: empty. Claimed by CAS.
  uint64_t id;    // 0: not yet published; kPoisoned: unusable (arena was full)
  const uint8_t* data;
  uint64_t len;
};
constexpr uint64_t kPoisoned = ~0ull;
constexpr size_t kSlots = 1u << 16;
constexpr size_t kMaxProbes = 32;
constexpr size_t kArenaBytes = 8u << 20;

static_assert(sizeof(InternSlot) * kSlots == (2u << 20), "one huge page");

// Maps `bytes` (a multiple of 2 MiB) aligned to 2 MiB and asks for transparent huge
// pages: the slot table is touched at random hash positions, so with 4 KiB pages every
// new string faulted in a page of its own (~800 faults for 2,000 paths, about 10% of a
// small-file loop). With THP it is one fault; without, it behaves as before.
void* MapHugeAligned(size_t bytes) {
  constexpr size_t kHuge = 2u << 20;
  void* raw_map = raw::Mmap(nullptr, bytes + kHuge, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw::MmapFailed(raw_map)) return raw_map;
  const uintptr_t start = reinterpret_cast<uintptr_t>(raw_map);
  const uintptr_t aligned = (start + kHuge - 1) & ~(kHuge - 1);
  if (aligned > start) raw::Munmap(raw_map, aligned - start);
  const uintptr_t tail = start + bytes + kHuge - (aligned + bytes);
  if (tail > 0) raw::Munmap(reinterpret_cast<void*>(aligned + bytes), tail);
  raw::Syscall6(SYS_madvise, static_cast<long>(aligned), static_cast<long>(bytes), MADV_HUGEPAGE);
  return reinterpret_cast<void*>(aligned);
}

// One level of an intern table: open addressing, slots claimed by CAS on the hash and
// published by storing the id.
struct InternLevel {
  InternSlot* slots = nullptr;
  size_t mask = 0;
  uint32_t capacity = 0;  // inserts stop once this many slots are claimed
  uint32_t used = 0;      // slots claimed (atomic)
};

// Level 0 is small (64 KiB of 4 KiB pages, touched as they fill) and holds the first
// strings; level 1, the 2 MiB huge-page table, is mapped only once level 0 is half full.
// A short process (python3 -c pass interns ~130 strings) never zeroes the huge page,
// which cost 0.1-3 ms per process on the development VM (first-touch of host memory).
constexpr size_t kLevel0Slots = 1u << 11;
constexpr uint32_t kLevel0Capacity = kLevel0Slots / 2;

// Each copy in the arena follows a header holding its id (stored last, so a header with
// id 0 is a copy still being written) and its length; copies lie in the order they were
// interned, 8-byte aligned.
struct ArenaEntry {
  uint64_t id;
  uint64_t len;
};
inline size_t ArenaEntryBytes(size_t len) { return sizeof(ArenaEntry) + ((len + 7) & ~size_t{7}); }

// An intern table plus an arena holding copies of the interned bytes. All anonymous
// mappings: pages are touched (and count as RSS) only as they fill.
class InternTable {
 public:
  uint64_t Intern(const uint8_t* data, size_t len, bool is_stack);
  // If s is the copy interned right after prev (a copy in this arena, prev_len bytes), its
  // id; else 0. A program that walks the same files in the same order again (a dataset
  // epoch, a sorted listing) finds each path next to the previous one, in a cache line
  // just touched, instead of at a random slot of the table (a cache and TLB miss that cost
  // ~0.3 us per path in the small-file loop).
  uint64_t NextAfter(const uint8_t* prev, size_t prev_len, std::string_view s) const;
  void Reset() {
    if (l0_.slots != nullptr) raw::Munmap(l0_.slots, kLevel0Slots * sizeof(InternSlot));
    if (l1_.slots != nullptr) raw::Munmap(l1_.slots, kSlots * sizeof(InternSlot));
    if (arena_ != nullptr) raw::Munmap(arena_, kArenaBytes);
    l0_ = InternLevel{};
    l1_ = InternLevel{};
    arena_ = nullptr;
    arena_used_ = 0;
    init_ = 0;
    l1_init_ = 0;
  }

 private:
  bool EnsureInit();
  bool EnsureLevel1();
  // Finds or adds s in lv: true with *id set; false when s is not in lv and lv takes no
  // more strings (full, or its probe window is).
  bool ProbeLevel(InternLevel& lv, uint64_t hash, const uint8_t* data, size_t len, bool is_stack,
                  uint64_t* id);
  uint64_t EmitNew(const uint8_t* data, size_t len, bool is_stack);

  InternLevel l0_;
  InternLevel l1_;
  uint8_t* arena_ = nullptr;
  uint64_t arena_used_ = 0;
  int init_ = 0;     // 0 none, 1 in progress, 2 ready, 3 failed
  int l1_init_ = 0;  // same, for level 1
};

// Claims a one-time initialisation: true for the caller that must do it.
bool ClaimInit(int* state) {
  int s = 0;
  return __atomic_compare_exchange_n(state, &s, 1, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

bool InternTable::EnsureInit() {
  if (__atomic_load_n(&init_, __ATOMIC_ACQUIRE) == 2) return true;
  if (!ClaimInit(&init_)) return false;  // another thread is initialising, or it failed
  // Populated at once: a probe reads a slot before it claims it, so each page touched
  // lazily faulted twice (the shared zero page on the read, a copy on the CAS), about
  // 30 faults and 40 us in every process's start (perf, a tiny C program).
  void* s = raw::Mmap(nullptr, kLevel0Slots * sizeof(InternSlot), PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_POPULATE, -1, 0);
  void* a = raw::Mmap(nullptr, kArenaBytes, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw::MmapFailed(s) || raw::MmapFailed(a)) {
    __atomic_store_n(&init_, 3, __ATOMIC_RELEASE);
    return false;
  }
  l0_.slots = static_cast<InternSlot*>(s);
  l0_.mask = kLevel0Slots - 1;
  l0_.capacity = kLevel0Capacity;
  arena_ = static_cast<uint8_t*>(a);
  __atomic_store_n(&init_, 2, __ATOMIC_RELEASE);
  return true;
}

bool InternTable::EnsureLevel1() {
  if (__atomic_load_n(&l1_init_, __ATOMIC_ACQUIRE) == 2) return true;
  if (!ClaimInit(&l1_init_)) return false;
  void* s = MapHugeAligned(kSlots * sizeof(InternSlot));
  if (raw::MmapFailed(s)) {
    __atomic_store_n(&l1_init_, 3, __ATOMIC_RELEASE);
    return false;
  }
  l1_.slots = static_cast<InternSlot*>(s);
  l1_.mask = kSlots - 1;
  l1_.capacity = kSlots;
  __atomic_store_n(&l1_init_, 2, __ATOMIC_RELEASE);
  return true;
}

uint64_t InternTable::EmitNew(const uint8_t* data, size_t len, bool is_stack) {
  format::FileHeader* h = g_trace.header();
  if (h == nullptr) return 0;
  uint64_t* counter = is_stack ? &h->next_stack_id : &h->next_string_id;
  const uint64_t id = __atomic_fetch_add(counter, 1, __ATOMIC_RELAXED);
  const format::Bytes bytes{data, static_cast<uint32_t>(len)};
  // Strings and stacks have no time of their own: they reuse the thread's last
  // timestamp, so interning inside a hook never pushes the time base past the start of
  // the call being recorded (which would clamp that record's ts forward).
  const uint64_t ts = t_thread.last_ts != 0 && t_thread.generation == g_generation
                          ? t_thread.last_ts
                          : Ticks();
  if (is_stack) {
    format::Stack rec;
    rec.ts = ts;
    rec.id = id;
    rec.frames = bytes;
    Emit(rec);
  } else {
    format::String rec;
    rec.ts = ts;
    rec.id = id;
    rec.text = bytes;
    Emit(rec);
  }
  return id;
}

// Remembers a string this thread interned (see ThreadState::intern_gen).
void RememberInterned(const uint8_t* stored, size_t len, uint64_t id) {
  ThreadState& t = t_thread;
  RewriteThreadCache(t.intern_gen, [&] {
    t.intern_len = static_cast<uint32_t>(len);
    t.intern_data = stored;
    t.intern_id = id;
  });
}

bool InternTable::ProbeLevel(InternLevel& lv, uint64_t hash, const uint8_t* data, size_t len,
                             bool is_stack, uint64_t* out) {
  for (size_t probe = 0; probe < kMaxProbes; ++probe) {
    InternSlot& slot = lv.slots[(hash + probe) & lv.mask];
    uint64_t seen = __atomic_load_n(&slot.hash, __ATOMIC_ACQUIRE);
    if (seen == 0) {
      // Linear probing never empties a slot: s is in no later slot of this level.
      if (__atomic_load_n(&lv.used, __ATOMIC_RELAXED) >= lv.capacity) return false;
      if (!__atomic_compare_exchange_n(&slot.hash, &seen, hash, false, __ATOMIC_ACQ_REL,
                                       __ATOMIC_ACQUIRE)) {
        if (seen != hash) continue;  // lost the slot to another string
      } else {
        __atomic_fetch_add(&lv.used, 1, __ATOMIC_RELAXED);
        const size_t bytes = ArenaEntryBytes(len);
        const uint64_t off = __atomic_fetch_add(&arena_used_, bytes, __ATOMIC_RELAXED);
        if (off + bytes > kArenaBytes) {
          __atomic_store_n(&slot.id, kPoisoned, __ATOMIC_RELEASE);
          *out = EmitNew(data, len, is_stack);
          return true;
        }
        auto* entry = reinterpret_cast<ArenaEntry*>(arena_ + off);
        entry->len = len;
        CopyBytes(entry + 1, data, len);
        slot.data = reinterpret_cast<const uint8_t*>(entry + 1);
        slot.len = len;
        const uint64_t id = EmitNew(data, len, is_stack);
        __atomic_store_n(&slot.id, id, __ATOMIC_RELEASE);
        __atomic_store_n(&entry->id, id, __ATOMIC_RELEASE);
        if (!is_stack) RememberInterned(slot.data, len, id);
        *out = id;
        return true;
      }
    }
    if (seen != hash) continue;
    uint64_t id = 0;
    for (int spin = 0; spin < 4096 && (id = __atomic_load_n(&slot.id, __ATOMIC_ACQUIRE)) == 0;
         ++spin) {
#if defined(__x86_64__)
      __builtin_ia32_pause();
#endif
    }
    if (id == 0) {  // the publisher is stuck (e.g. we interrupted it): don't wait
      *out = EmitNew(data, len, is_stack);
      return true;
    }
    if (id != kPoisoned && slot.len == len && SameBytes(slot.data, data, len)) {
      if (!is_stack) RememberInterned(slot.data, len, id);
      *out = id;
      return true;
    }
  }
  return false;
}

uint64_t InternTable::NextAfter(const uint8_t* prev, size_t prev_len, std::string_view s) const {
  const uint8_t* const arena = __atomic_load_n(&arena_, __ATOMIC_ACQUIRE);
  if (arena == nullptr || prev < arena + sizeof(ArenaEntry) || prev >= arena + kArenaBytes) return 0;
  const uint64_t next = static_cast<uint64_t>(prev - arena) - sizeof(ArenaEntry) + ArenaEntryBytes(prev_len);
  const uint64_t used = __atomic_load_n(&arena_used_, __ATOMIC_RELAXED);
  if (next + ArenaEntryBytes(s.size()) > (used < kArenaBytes ? used : kArenaBytes)) return 0;
  const auto* entry = reinterpret_cast<const ArenaEntry*>(arena + next);
  const uint64_t id = __atomic_load_n(&entry->id, __ATOMIC_ACQUIRE);  // 0: still being written
  if (id == 0 || entry->len != s.size() || !SameBytes(entry + 1, s.data(), s.size())) return 0;
  RememberInterned(reinterpret_cast<const uint8_t*>(entry + 1), s.size(), id);
  return id;
}

uint64_t InternTable::Intern(const uint8_t* data, size_t len, bool is_stack) {
  if (!EnsureInit()) return EmitNew(data, len, is_stack);
  const uint64_t hash = HashBytes(data, len) | 1;  // 0 marks an empty slot
  uint64_t id = 0;
  if (ProbeLevel(l0_, hash, data, len, is_stack, &id)) return id;
  if (EnsureLevel1() && ProbeLevel(l1_, hash, data, len, is_stack, &id)) return id;
  return EmitNew(data, len, is_stack);
}

InternTable g_strings;
InternTable g_stacks;

}  // namespace

uint64_t InternString(std::string_view s) {
  if (s.size() > kMaxInternedString) s = s.substr(0, kMaxInternedString);
  // The thread's last string again, or the string interned right after it (one read of
  // the thread's cache for both).
  if (LastString last; ReadLastInterned(&last)) {
    if (last.Is(s)) return last.id;
    if (const uint64_t id = g_strings.NextAfter(last.data, last.len, s); id != 0) return id;
  }
  return g_strings.Intern(reinterpret_cast<const uint8_t*>(s.data()), s.size(), false);
}

uint64_t InternStack(const uint64_t* frames, size_t n) {
  if (n == 0) return 0;
  return g_stacks.Intern(reinterpret_cast<const uint8_t*>(frames), n * sizeof(uint64_t), true);
}

void ResetInterning() {
  __atomic_add_fetch(&g_intern_epoch, 1, __ATOMIC_ACQ_REL);
  g_strings.Reset();
  g_stacks.Reset();
}

}  // namespace colabtrace::shim
