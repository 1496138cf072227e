// The I/O aggregate table: see io_agg.h.
#include "io/io_agg.h"

#include <sys/mman.h>

#include <utility>

#include "clock.h"
#include "raw.h"
#include "spin_lock.h"
#include "writer.h"

namespace colabtrace::shim::io {

namespace {

using format::IoAggInfo;

// The index: open addressing on the path's hash, each entry a slot number + 1 (0: empty;
// kBusy: being claimed). 2^17 entries keep the
// 65,536 file slots and 16,384 directory slots under 5/8 full. High slots (AggCarry) are
// numbered from the same count and not indexed.
constexpr uint32_t kIndexBits = 17;
constexpr uint32_t kIndexEntries = 1u << kIndexBits;
constexpr uint32_t kBusy = UINT32_MAX;
constexpr uint32_t kSlots = format::kIoAggFileSlots + format::kIoAggDirSlots + format::kIoAggHighSlots;
constexpr uint32_t kMaxChunks = (kSlots + format::kIoAggSlotsPerChunk - 1) / format::kIoAggSlotsPerChunk;
// A directory slot's hash differs from the directory path's own file slot (a stat of it).
constexpr uint64_t kDirSalt = 0x5bd1e9955bd1e995ull;

uint32_t* g_index = nullptr;             // kIndexEntries, anonymous, touched as used
uint32_t g_epoch = 0;                    // bumped by ResetAgg: per-thread caches expire
uint8_t* g_chunks[kMaxChunks] = {};      // aggregate chunks, taken as slots are claimed
uint32_t g_next_slot = 0;                // slots claimed (atomic)
SpinLock g_chunk_lock;  // held while the slots' or the heavy-hitter table's chunks are taken

// The calling thread's last slot, by the String id of its path: an open right after a
// stat of the same path (the intern's own one-entry cache gives it the same id) skips
// the hash and the index. Used inside a RecordScope only, so no signal handler on this
// thread rewrites it meanwhile.
struct LastSlot {
  uint64_t path_id;
  uint32_t epoch;
  IoAggSlot* slot;
};
constinit thread_local LastSlot t_last __attribute__((tls_model("initial-exec"))) = {};

IoAggInfo* Info() {
  uint8_t* c = __atomic_load_n(&g_chunks[0], __ATOMIC_ACQUIRE);
  return c == nullptr ? nullptr : reinterpret_cast<IoAggInfo*>(c + format::kIoAggInfoOffset);
}

// A chunk of the trace for the table, kept mapped, its header written but for its magic
// (the caller stores it last, with release order): tid 0, seq, the exec image. Null when
// the trace gives none. Called under g_chunk_lock.
uint8_t* TakeChunk(uint32_t seq) {
  uint8_t* p = g_recording ? g_trace.AllocChunk(true) : nullptr;
  if (p == nullptr) return nullptr;
  g_trace.KeepsMapped(p);
  auto* ch = reinterpret_cast<format::ChunkHeader*>(p);
  ch->tid = 0;
  ch->base_ticks = Ticks();
  ch->seq = seq;
  ch->flags = 0;
  ch->image = g_trace.image();
  return p;
}

// The chunk holding slot n, taken (and stamped CTIA) if need be. Null when the trace
// gives no more chunks.
uint8_t* ChunkFor(uint32_t n) {
  const uint32_t c = n / format::kIoAggSlotsPerChunk;
  uint8_t* chunk = __atomic_load_n(&g_chunks[c], __ATOMIC_ACQUIRE);
  if (chunk != nullptr) return chunk;
  g_chunk_lock.Lock();
  // Chunks are taken in order: a slot's chunk and every one before it exist.
  for (uint32_t k = 0; k <= c; ++k) {
    if (g_chunks[k] != nullptr) continue;
    uint8_t* p = TakeChunk(k);
    if (p == nullptr) break;
    auto* ch = reinterpret_cast<format::ChunkHeader*>(p);
    if (k == 0) {
      auto* info = reinterpret_cast<IoAggInfo*>(p + format::kIoAggInfoOffset);
      info->file_slots = format::kIoAggFileSlots;
      info->dir_slots = format::kIoAggDirSlots;
    }
    __atomic_store_n(&ch->magic, format::kIoAggChunkMagic, __ATOMIC_RELEASE);
    __atomic_store_n(&g_chunks[k], p, __ATOMIC_RELEASE);
  }
  chunk = g_chunks[c];
  g_chunk_lock.Unlock();
  return chunk;
}

IoAggSlot* SlotAt(uint32_t n) {
  uint8_t* c = __atomic_load_n(&g_chunks[n / format::kIoAggSlotsPerChunk], __ATOMIC_ACQUIRE);
  return reinterpret_cast<IoAggSlot*>(c + format::kIoAggSlotsOffset) + n % format::kIoAggSlotsPerChunk;
}

// A fresh slot number below kSlots whose chunk exists; false when there is none.
bool NextSlot(uint32_t* n_out) {
  const uint32_t n = __atomic_fetch_add(&g_next_slot, 1u, __ATOMIC_RELAXED);
  if (n >= kSlots || ChunkFor(n) == nullptr) return false;
  *n_out = n;
  return true;
}

// Claims a slot of `kind` for hash h, numbered *n_out: null when that kind's slots are full
// (or no chunk can be had).
IoAggSlot* Claim(uint64_t h, uint64_t path_id, uint64_t mount, uint32_t kind, uint32_t* n_out) {
  if (ChunkFor(0) == nullptr) return nullptr;
  IoAggInfo* info = Info();
  uint64_t* used = kind == format::kIoAggFile ? &info->files : &info->directories;
  const uint64_t cap = kind == format::kIoAggFile ? format::kIoAggFileSlots : format::kIoAggDirSlots;
  if (__atomic_add_fetch(used, 1, __ATOMIC_RELAXED) > cap) {
    __atomic_sub_fetch(used, 1, __ATOMIC_RELAXED);
    return nullptr;
  }
  uint32_t n = 0;
  if (!NextSlot(&n)) return nullptr;
  *n_out = n;
  IoAggSlot* s = SlotAt(n);
  s->hash = h;
  s->path = path_id;
  s->mount = static_cast<uint32_t>(mount);
  __atomic_store_n(&s->kind, static_cast<uint16_t>(kind), __ATOMIC_RELEASE);
  return s;
}

enum class Find { kFound, kFull };

// The slot whose hash is h, or a new one of `kind` (*out null and kFull: none to be had);
// *number its number.
Find FindOrClaim(uint64_t h, uint64_t path_id, uint64_t mount, uint32_t kind, IoAggSlot** out, uint32_t* number) {
  *out = nullptr;
  for (uint32_t probe = 0; probe < kIndexEntries;) {
    uint32_t* e = &g_index[(h + probe) & (kIndexEntries - 1)];
    uint32_t v = __atomic_load_n(e, __ATOMIC_ACQUIRE);
    while (v == kBusy) {  // another thread is claiming this entry: a few stores away
      CpuRelax();
      v = __atomic_load_n(e, __ATOMIC_ACQUIRE);
    }
    if (v == 0) {
      uint32_t expected = 0;
      if (!__atomic_compare_exchange_n(e, &expected, kBusy, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
        continue;  // taken meanwhile: look at it again
      }
      uint32_t n = 0;
      IoAggSlot* s = Claim(h, path_id, mount, kind, &n);
      if (s == nullptr) {
        __atomic_store_n(e, 0u, __ATOMIC_RELEASE);  // free again: nothing was claimed
        return Find::kFull;
      }
      __atomic_store_n(e, n + 1, __ATOMIC_RELEASE);
      *out = s;
      *number = n;
      return Find::kFound;
    }
    if (SlotAt(v - 1)->hash == h) {
      *out = SlotAt(v - 1);
      *number = v - 1;
      return Find::kFound;
    }
    ++probe;
  }
  return Find::kFull;
}

// The directory part of p as the analyzer's DirOf gives it ("/" for "/x", "." for "x").
std::string_view DirOf(std::string_view p) {
  const size_t slash = p.rfind('/');
  if (slash == std::string_view::npos) return ".";
  return slash == 0 ? p.substr(0, 1) : p.substr(0, slash);
}

// The number of slot s (a slot of a chunk taken): its chunk's index among g_chunks.
uint32_t NumberOf(const IoAggSlot* s) {
  const auto* p = reinterpret_cast<const uint8_t*>(s);
  for (uint32_t c = 0; c < kMaxChunks; ++c) {
    const uint8_t* chunk = __atomic_load_n(&g_chunks[c], __ATOMIC_ACQUIRE);
    if (chunk == nullptr) break;
    if (p >= chunk + format::kIoAggSlotsOffset && p < chunk + format::kChunkSize) {
      return c * format::kIoAggSlotsPerChunk +
             static_cast<uint32_t>(s - reinterpret_cast<const IoAggSlot*>(chunk + format::kIoAggSlotsOffset));
    }
  }
  return kSlots;
}

// The high slot of s, claimed if it has none (its other wrapping threads wait for the
// claim); null when none can be had.
format::IoAggHighSlot* HighOf(IoAggSlot* s) {
  uint32_t h = __atomic_load_n(&s->high, __ATOMIC_ACQUIRE);
  if (h == 0) {
    uint32_t expected = 0;
    if (__atomic_compare_exchange_n(&s->high, &expected, kBusy, false, __ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE)) {
      IoAggInfo* info = Info();
      const uint32_t owner = NumberOf(s);
      uint32_t n = 0;
      h = 0;
      if (owner < kSlots) {
        if (__atomic_add_fetch(&info->high_slots, 1, __ATOMIC_RELAXED) <= format::kIoAggHighSlots && NextSlot(&n)) {
          auto* hs = reinterpret_cast<format::IoAggHighSlot*>(SlotAt(n));
          hs->owner = owner;
          __atomic_store_n(&hs->kind, static_cast<uint16_t>(format::kIoAggHigh), __ATOMIC_RELEASE);
          h = n + 1;
        } else {
          __atomic_sub_fetch(&info->high_slots, 1, __ATOMIC_RELAXED);
        }
      }
      __atomic_store_n(&s->high, h, __ATOMIC_RELEASE);  // 0 again when none was had
    } else {
      h = expected;
    }
  }
  while (h == kBusy) {  // another thread is claiming it: a few stores away
    CpuRelax();
    h = __atomic_load_n(&s->high, __ATOMIC_ACQUIRE);
  }
  return h == 0 ? nullptr : reinterpret_cast<format::IoAggHighSlot*>(SlotAt(h - 1));
}


// ---- the heavy-hitter table (format/io_heavy.h) -------------------------------------------

using format::IoHeavyEntry;
using format::IoHeavyInfo;

uint8_t* g_heavy_chunks[format::kIoHeavyChunks] = {};
int g_heavy_ready = 0;  // 0: not taken yet; 1: every chunk taken; 2: the trace gave none

IoHeavyEntry* HeavyAt(uint32_t n) {
  return reinterpret_cast<IoHeavyEntry*>(g_heavy_chunks[n / format::kIoHeavyPerChunk] + format::kIoHeavyEntriesOffset) +
         n % format::kIoHeavyPerChunk;
}
IoHeavyInfo* HeavyInfo() { return reinterpret_cast<IoHeavyInfo*>(g_heavy_chunks[0] + format::kIoAggInfoOffset); }

// Takes the table's chunks (CTIH, all at once: 264 KiB of file, touched as entries are
// taken) when the first file finds the file slots full. False when the trace has none.
bool HeavyReady() {
  const int ready = __atomic_load_n(&g_heavy_ready, __ATOMIC_ACQUIRE);
  if (ready != 0) return ready == 1;
  g_chunk_lock.Lock();
  if (g_heavy_ready == 0) {
    bool ok = true;
    for (uint32_t k = 0; k < format::kIoHeavyChunks && ok; ++k) {
      uint8_t* p = TakeChunk(k);
      if (p == nullptr) {
        ok = false;
        break;
      }
      auto* ch = reinterpret_cast<format::ChunkHeader*>(p);
      if (k == 0) {
        auto* info = reinterpret_cast<IoHeavyInfo*>(p + format::kIoAggInfoOffset);
        info->entries = format::kIoHeavyEntries;
        info->ways = format::kIoHeavyWays;
      }
      __atomic_store_n(&ch->magic, format::kIoHeavyChunkMagic, __ATOMIC_RELEASE);
      g_heavy_chunks[k] = p;
    }
    __atomic_store_n(&g_heavy_ready, ok ? 1 : 2, __ATOMIC_RELEASE);
  }
  g_chunk_lock.Unlock();
  return g_heavy_ready == 1;
}

// Count k of entry e, widened with its high word.
uint64_t HeavyCount(const IoHeavyEntry* e, uint32_t k) {
  return __atomic_load_n(&e->slot.counts[k], __ATOMIC_RELAXED) +
         (uint64_t{__atomic_load_n(&e->high[k], __ATOMIC_RELAXED)} << 16);
}

uint64_t HeavyWeightOf(const IoHeavyEntry* e) {
  uint64_t counts[format::kIoAggCounts];
  for (uint32_t k = 0; k < format::kIoAggCounts; ++k) counts[k] = HeavyCount(e, k);
  return format::IoHeavyWeight(counts, __atomic_load_n(&e->error, __ATOMIC_RELAXED));
}

// Adds entry e's sums to its directory's slot, one field at a time, `folded` counting the
// fields added (a reader adds the others to the directory's row itself). e is the
// caller's alone (state folding, no holder).
void Fold(IoHeavyEntry* e) {
  IoAggSlot* d = SlotAt(e->dir_slot - 1);
  uint32_t field = 0;
  auto done = [&] { __atomic_store_n(&e->folded, ++field, __ATOMIC_RELEASE); };
  for (uint32_t k = 0; k < format::kIoAggCounts; ++k) {
    AggCountN(d, static_cast<IoAggCount>(k), HeavyCount(e, k));
    done();
  }
  const IoAggSlot& s = e->slot;
  for (const auto& [to, from] : {std::pair{&d->open_ns, s.open_ns}, std::pair{&d->read_ns, s.read_ns},
                                 std::pair{&d->stat_ns, s.stat_ns}, std::pair{&d->bytes_read, s.bytes_read}}) {
    AggAdd(*to, from);
    done();
  }
  AggMax(d->size, s.size);
  AggMax(d->eof_at, s.eof_at);
  AggMax(d->max_end, s.max_end);
  if (s.flags != 0) AggFlags(d, s.flags);
}

// Gives entry e to the file of hash h, held once for the caller. e was claimed from
// `word`: to folding when it was held (its sums are folded into its directory's slot
// first), to clearing when it was free.
IoAggSlot* Enter(IoHeavyEntry* e, uint64_t word, uint64_t h, uint64_t path_id, uint64_t mount, uint32_t dir,
                 IoHeavyEntry* set_first) {
  IoHeavyInfo* info = HeavyInfo();
  if (format::IoHeavyStateOf(word) == format::kIoHeavyHeld) {
    const uint64_t gen = word >> 24 & 0xffffffffu;
    Fold(e);
    AggMax(set_first->set_floor, HeavyWeightOf(e));
    AggAdd(info->folds, 1);
    __atomic_store_n(&e->word, format::IoHeavyWord(format::kIoHeavyClearing, gen, 0), __ATOMIC_RELEASE);
  }
  IoAggSlot& s = e->slot;
  for (uint16_t& c : s.counts) __atomic_store_n(&c, uint16_t{0}, __ATOMIC_RELAXED);
  for (uint32_t& c : e->high) __atomic_store_n(&c, 0u, __ATOMIC_RELAXED);
  for (uint64_t* f : {&s.open_ns, &s.read_ns, &s.stat_ns, &s.bytes_read, &s.size, &s.eof_at, &s.max_end}) {
    __atomic_store_n(f, uint64_t{0}, __ATOMIC_RELAXED);
  }
  __atomic_store_n(&s.hash, h, __ATOMIC_RELAXED);  // read by other threads' set scans
  s.path = path_id;
  s.mount = static_cast<uint32_t>(mount);
  s.flags = 0;
  s.high = 0;
  __atomic_store_n(&s.kind, format::kIoAggHeavy, __ATOMIC_RELAXED);
  e->dir_slot = dir + 1;
  e->folded = 0;
  __atomic_store_n(&e->error, __atomic_load_n(&set_first->set_floor, __ATOMIC_RELAXED), __ATOMIC_RELAXED);
  e->from_ticks = Ticks();
  AggAdd(info->entered, 1);
  __atomic_store_n(&e->word, format::IoHeavyWord(format::kIoHeavyHeld, (word >> 24) + 1, 1), __ATOMIC_RELEASE);
  return &s;
}

// The heavy-hitter slot of the file of hash h (its directory's slot numbered dir), held
// for the caller: its entry, or the one of least weight that no call holds in its set
// (Space-Saving), folded into its own directory's slot first. Null when every entry of
// the set is held (counted: `missed`) or the table could not be had.
IoAggSlot* HeavySlotOf(uint64_t h, uint64_t path_id, uint64_t mount, uint32_t dir) {
  if (!HeavyReady()) return nullptr;
  const uint32_t first = format::IoHeavySetOf(h) * format::kIoHeavyWays;
  IoHeavyEntry* set_first = HeavyAt(first);
  for (int attempt = 0; attempt < 8; ++attempt) {
    IoHeavyEntry* victim = nullptr;
    uint64_t victim_word = 0, victim_weight = UINT64_MAX;
    bool changed = false;
    for (uint32_t w = 0; w < format::kIoHeavyWays && !changed; ++w) {
      IoHeavyEntry* e = HeavyAt(first + w);
      uint64_t word = __atomic_load_n(&e->word, __ATOMIC_ACQUIRE);
      const uint32_t state = format::IoHeavyStateOf(word);
      if (state == format::kIoHeavyHeld && __atomic_load_n(&e->slot.hash, __ATOMIC_RELAXED) == h) {
        // Its file's: held while the word keeps its state and generation (other holders
        // may come and go meanwhile).
        const uint64_t held = word & ~format::kIoHeavyHoldersMask;
        while ((word & ~format::kIoHeavyHoldersMask) == held) {
          if (__atomic_compare_exchange_n(&e->word, &word, word + 1, true, __ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE)) {
            if (mount != 0 && __atomic_load_n(&e->slot.mount, __ATOMIC_RELAXED) == 0) {
              __atomic_store_n(&e->slot.mount, static_cast<uint32_t>(mount), __ATOMIC_RELAXED);
            }
            return &e->slot;
          }
        }
        changed = true;  // it changed hands meanwhile: look at the set again
        break;
      }
      if (victim_weight == 0) continue;  // a free entry is taken first
      if (state == format::kIoHeavyFree) {
        victim = e, victim_word = word, victim_weight = 0;
      } else if (state == format::kIoHeavyHeld && (word & format::kIoHeavyHoldersMask) == 0) {
        const uint64_t weight = HeavyWeightOf(e);
        if (weight < victim_weight) victim = e, victim_word = word, victim_weight = weight;
      }
    }
    if (changed) continue;
    if (victim == nullptr) break;
    // Claimed in one step from free (to clearing) or held by no call (to folding: its sums
    // are still its file's until folded): no call holds it now, and none can take it.
    const bool held = format::IoHeavyStateOf(victim_word) == format::kIoHeavyHeld;
    const uint64_t claimed = format::IoHeavyWord(held ? format::kIoHeavyFolding : format::kIoHeavyClearing,
                                                 victim_word >> 24 & 0xffffffffu, 0);
    uint64_t expected = victim_word;
    if (__atomic_compare_exchange_n(&victim->word, &expected, claimed, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
      return Enter(victim, victim_word, h, path_id, mount, dir, set_first);
    }
  }
  AggAdd(HeavyInfo()->missed, 1);
  return nullptr;
}

}  // namespace

void AggCarry(IoAggSlot* s, IoAggCount k, uint64_t n) {
  if (AggHeld(s)) {
    __atomic_fetch_add(&HeavyEntryOf(s)->high[k], static_cast<uint32_t>(n), __ATOMIC_RELAXED);
  } else if (format::IoAggHighSlot* hs = HighOf(s)) {
    __atomic_fetch_add(&hs->high[k], static_cast<uint32_t>(n), __ATOMIC_RELAXED);
  } else if (IoAggInfo* info = Info()) {
    AggAdd(info->carries_lost, n);
  }
}

uint32_t AggEpoch() { return __atomic_load_n(&g_epoch, __ATOMIC_RELAXED); }

void ResetAgg() {
  constexpr size_t kIndexBytes = kIndexEntries * sizeof(uint32_t);
  if (g_index != nullptr) raw::Munmap(g_index, kIndexBytes);  // a fork child: the parent's
  void* p = raw::Mmap(nullptr, kIndexBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                      -1, 0);
  g_index = raw::MmapFailed(p) ? nullptr : static_cast<uint32_t*>(p);
  for (uint8_t*& c : g_chunks) c = nullptr;
  for (uint8_t*& c : g_heavy_chunks) c = nullptr;
  g_heavy_ready = 0;
  g_next_slot = 0;
  g_chunk_lock.Reset();
  ++g_epoch;
}

IoAggSlot* AggSlotOf(std::string_view p, uint64_t path_id, uint64_t mount) {
  if (g_index == nullptr || path_id == 0) return nullptr;
  LastSlot& last = t_last;
  IoAggSlot* s = nullptr;
  uint32_t number = 0;
  uint64_t h = 0;
  if (last.path_id == path_id && last.epoch == g_epoch) {
    s = last.slot;
  } else if (h = HashBytes(p.data(), p.size());
             FindOrClaim(h, path_id, mount, format::kIoAggFile, &s, &number) == Find::kFound) {
    last = {path_id, g_epoch, s};
  }
  if (s != nullptr) {
    if (mount != 0 && __atomic_load_n(&s->mount, __ATOMIC_RELAXED) == 0) {
      __atomic_store_n(&s->mount, static_cast<uint32_t>(mount), __ATOMIC_RELAXED);
    }
    return s;
  }
  // The file slots are full: this file's calls go to the heavy-hitter entry it holds or
  // takes, else to its directory's slot, with its directory's other new files. Neither is
  // kept in the thread's last slot: an entry may change hands between two calls.
  if (IoAggInfo* info = Info()) {
    uint64_t zero = 0;
    __atomic_compare_exchange_n(&info->files_full_ticks, &zero, Ticks(), false, __ATOMIC_RELAXED,
                                __ATOMIC_RELAXED);
  }
  const std::string_view dir = DirOf(p);
  const uint64_t dh = HashBytes(dir.data(), dir.size()) ^ kDirSalt;
  // The directory's name is interned once, when its slot is claimed; a lookup that finds
  // the slot compares hashes only.
  uint64_t dir_id = 0;
  for (uint32_t probe = 0; probe < 64; ++probe) {
    const uint32_t v = __atomic_load_n(&g_index[(dh + probe) & (kIndexEntries - 1)], __ATOMIC_ACQUIRE);
    if (v == 0) break;
    if (v != kBusy && SlotAt(v - 1)->hash == dh) {
      dir_id = SlotAt(v - 1)->path;
      break;
    }
  }
  if (dir_id == 0) dir_id = InternString(dir);
  if (FindOrClaim(dh, dir_id, mount, format::kIoAggDirectory, &s, &number) == Find::kFound && s != nullptr) {
    if (IoAggSlot* heavy = HeavySlotOf(h, path_id, mount, number)) return heavy;
    return s;
  }
  if (IoAggInfo* info = Info()) AggAdd(info->unplaced, 1);
  return nullptr;
}

}  // namespace colabtrace::shim::io
