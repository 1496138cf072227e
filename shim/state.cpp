// The state chunks: claiming thread notes and launch rings, progress, stream epochs. See
// state.h.
#include "state.h"

#include "clock.h"
#include "python/python_stack.h"
#include "raw.h"

namespace colabtrace::shim {

namespace {

constexpr uint32_t kFreeNotes = 1024;  // more exiting at once than this are not reused

// This exec image's state chunks, for the process (generation) that took them: a fork
// child's first note finds another generation and starts its own, in its own trace.
struct ImageState {
  uint32_t generation = 0;
  uint8_t* first = nullptr;        // progress, synced streams, Python layout
  uint8_t* notes_chunk = nullptr;  // where notes are being claimed
  uint32_t notes_used = 0;         // entries claimed in notes_chunk
  uint32_t state_seq = 0;          // state chunks taken
  uint8_t* ring_chunk = nullptr;
  uint32_t rings_used = 0;
  uint32_t ring_seq = 0;
  uint8_t* nccl_chunk = nullptr;
  // Notes of threads that exited, cleared, for the next threads to claim (ReleaseNotes): a
  // process that makes a thread per task keeps as many notes as it has threads at once.
  format::ThreadNotes* free_notes[kFreeNotes] = {};
  uint32_t free_count = 0;
  uint8_t* coll_chunks[format::kCollChunks] = {};  // by seq: groups seq * kCollGroupsPerChunk on
};
ImageState g_image;
int g_lock = 0;

// Threads that found no room note here (written, never read).
format::ThreadNotes g_scratch_notes;
// Stream epochs while there is no state chunk (no trace, or a signal handler that may
// not allocate).
uint32_t g_fallback_device = 0;
format::SyncedStream g_fallback_streams[format::kSyncedStreams];

// The lock is taken by hooks only, never by a signal handler, with the shim marked busy
// on the thread (so a signal handler on it passes through every hook).
void Lock() {
  while (__atomic_exchange_n(&g_lock, 1, __ATOMIC_ACQUIRE) != 0) {
#if defined(__x86_64__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#endif
  }
}
void Unlock() { __atomic_store_n(&g_lock, 0, __ATOMIC_RELEASE); }

// Under the lock: the image state of this process (reset in a fork child).
ImageState& Image() {
  if (g_image.generation != g_generation) {
    g_image = ImageState{};
    g_image.generation = g_generation;
  }
  return g_image;
}

// Takes a chunk and stamps it with `magic` (stored last). Under the lock.
uint8_t* TakeChunk(uint32_t magic, uint32_t seq) {
  if (!g_recording || raw::Getpid() != g_pid) return nullptr;
  uint8_t* c = g_trace.AllocChunk(true);
  if (c == nullptr) return nullptr;
  auto* ch = reinterpret_cast<format::ChunkHeader*>(c);
  ch->tid = 0;
  ch->base_ticks = Ticks();
  ch->seq = seq;
  ch->flags = 0;
  ch->image = g_trace.image();
  __atomic_store_n(&ch->magic, magic, __ATOMIC_RELEASE);
  return c;
}

// Under the lock: the first state chunk, taken (with its Python layout) if need be.
uint8_t* FirstChunk(ImageState& s) {
  if (s.first == nullptr) {
    uint8_t* c = TakeChunk(format::kStateChunkMagic, s.state_seq);
    if (c == nullptr) return nullptr;
    ++s.state_seq;
    python::FillLayoutBlock(reinterpret_cast<format::PythonLayoutBlock*>(c + format::kPythonLayoutOffset));
    s.notes_chunk = c;
    s.notes_used = 0;
    __atomic_store_n(&s.first, c, __ATOMIC_RELEASE);
  }
  return s.first;
}

}  // namespace

void ResetStateLockInChild() { __atomic_store_n(&g_lock, 0, __ATOMIC_RELEASE); }

format::ThreadNotes* ClaimNotes(ThreadState& t) {
  const int busy = t.busy;
  t.busy = 1;  // a signal handler on this thread now passes through every hook
  format::ThreadNotes* tn = nullptr;
  Lock();
  ImageState& s = Image();
  if (s.free_count > 0) {
    tn = s.free_notes[--s.free_count];
  } else if (FirstChunk(s) != nullptr) {
    if (s.notes_used == format::kNotesPerChunk) {
      uint8_t* c = TakeChunk(format::kStateChunkMagic, s.state_seq);
      if (c != nullptr) {
        ++s.state_seq;
        s.notes_chunk = c;
        s.notes_used = 0;
      }
    }
    if (s.notes_used < format::kNotesPerChunk) {
      tn = reinterpret_cast<format::ThreadNotes*>(s.notes_chunk + format::kNotesOffset) + s.notes_used++;
    }
  }
  Unlock();
  if (tn != nullptr) {
    __atomic_store_n(&tn->tid, static_cast<uint32_t>(raw::Gettid()), __ATOMIC_RELEASE);
  } else {
    tn = &g_scratch_notes;
  }
  t.notes = tn;
  t.notes_gen = g_generation;
  t.busy = busy;
  return tn;
}

void ReleaseNotes(ThreadState& t) {
  format::ThreadNotes* tn = t.notes;
  if (t.notes_gen != g_generation || tn == nullptr || tn == &g_scratch_notes) return;
  t.notes = nullptr;
  t.notes_gen = 0;
  // Unused first (a reader skips it from here on), then cleared for its next thread.
  __atomic_store_n(&tn->tid, 0u, __ATOMIC_RELEASE);
  __atomic_store_n(&tn->call.call, 0u, __ATOMIC_RELEASE);
  __atomic_store_n(&tn->wait.call, 0u, __ATOMIC_RELEASE);
  __atomic_store_n(&tn->python_thread, uint64_t{0}, __ATOMIC_RELAXED);
  const int busy = t.busy;
  t.busy = 1;
  Lock();
  ImageState& s = Image();
  if (s.free_count < kFreeNotes) s.free_notes[s.free_count++] = tn;
  Unlock();
  t.busy = busy;
}

void NoteStep(uint64_t ticks) {
  // The step's own thread claims nothing: progress lives in the first state chunk, which
  // any thread's first note created (a stepping thread has usually noted something).
  uint8_t* first = __atomic_load_n(&g_image.first, __ATOMIC_ACQUIRE);
  if (first == nullptr || g_image.generation != g_generation) {
    ThreadNotesOf(t_thread);  // creates the first chunk
    first = __atomic_load_n(&g_image.first, __ATOMIC_ACQUIRE);
    if (first == nullptr || g_image.generation != g_generation) return;
  }
  auto* p = reinterpret_cast<format::ProgressBlock*>(first + format::kProgressOffset);
  __atomic_store_n(&p->last_step_ticks, ticks, __ATOMIC_RELAXED);
  __atomic_add_fetch(&p->steps, 1, __ATOMIC_RELEASE);
}

SyncedTable SyncedTableOf(bool may_claim) {
  uint8_t* first = __atomic_load_n(&g_image.first, __ATOMIC_ACQUIRE);
  if (first == nullptr || g_image.generation != g_generation) {
    if (may_claim && Recording()) {
      ThreadNotesOf(t_thread);
      first = __atomic_load_n(&g_image.first, __ATOMIC_ACQUIRE);
    }
    if (first == nullptr || g_image.generation != g_generation) {
      return SyncedTable{&g_fallback_device, g_fallback_streams};
    }
  }
  return SyncedTable{reinterpret_cast<uint32_t*>(first + format::kSyncedDeviceOffset),
                     reinterpret_cast<format::SyncedStream*>(first + format::kSyncedOffset)};
}

format::LaunchRing* AllocLaunchRing() {
  ThreadState& t = t_thread;
  const int busy = t.busy;
  t.busy = 1;
  format::LaunchRing* r = nullptr;
  Lock();
  ImageState& s = Image();
  if (s.ring_chunk == nullptr || s.rings_used == format::kRingsPerChunk) {
    uint8_t* c = TakeChunk(format::kRingChunkMagic, s.ring_seq);
    if (c != nullptr) {
      ++s.ring_seq;
      s.ring_chunk = c;
      s.rings_used = 0;
    }
  }
  if (s.ring_chunk != nullptr && s.rings_used < format::kRingsPerChunk) {
    r = reinterpret_cast<format::LaunchRing*>(s.ring_chunk + format::kRingsOffset) + s.rings_used++;
  }
  Unlock();
  t.busy = busy;
  return r;
}

uint8_t* NcclChunk() {
  ThreadState& t = t_thread;
  const int busy = t.busy;
  t.busy = 1;
  Lock();
  ImageState& s = Image();
  if (s.nccl_chunk == nullptr) s.nccl_chunk = TakeChunk(format::kNcclChunkMagic, 0);
  uint8_t* c = s.nccl_chunk;
  Unlock();
  t.busy = busy;
  return c;
}

format::CollGroupBlock* CollGroupBlockOf(uint64_t group) {
  if (group >= format::kCollGroups) return nullptr;
  const uint32_t k = static_cast<uint32_t>(group / format::kCollGroupsPerChunk);
  uint8_t* c = __atomic_load_n(&g_image.coll_chunks[k], __ATOMIC_ACQUIRE);
  if (c == nullptr || g_image.generation != g_generation) {
    ThreadState& t = t_thread;
    const int busy = t.busy;
    t.busy = 1;
    Lock();
    ImageState& s = Image();
    if (s.coll_chunks[k] == nullptr) {
      uint8_t* taken = TakeChunk(format::kCollChunkMagic, k);
      if (taken != nullptr) __atomic_store_n(&s.coll_chunks[k], taken, __ATOMIC_RELEASE);
    }
    c = s.coll_chunks[k];
    Unlock();
    t.busy = busy;
    if (c == nullptr) return nullptr;
  }
  return reinterpret_cast<format::CollGroupBlock*>(c + format::kCollGroupsOffset) + group % format::kCollGroupsPerChunk;
}

void NotePythonThread(format::ThreadNotes* tn) {
  if (__builtin_expect(tn->python_thread != 0, 1) || !python::PythonFramesOn()) return;
  const uintptr_t ts = python::ThisThreadStateIfRunning();
  if (ts != 0) __atomic_store_n(&tn->python_thread, static_cast<uint64_t>(ts), __ATOMIC_RELAXED);
}

}  // namespace colabtrace::shim
