// The shim's record writer: per-thread chunks, lock-free, commit-last.
//
// Every hook ends in Emit(record). Emit encodes into the calling thread's current chunk
// of the mapped trace and then stores the record's type byte with release order: the
// record is complete or absent, and once the hooked call has returned its record is in
// the page cache, where a SIGKILL cannot take it away.
//
// ShimScope marks "the shim is working on this thread": hooks reached from inside the
// shim (or from a signal handler that interrupted it) pass straight through, and errno
// is restored on the way out.
#pragma once

#include <errno.h>

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "clock.h"
#include "colabtrace/format/codec.h"
#include "colabtrace/format/step_agg.h"
#include "trace_file.h"

#define CT_HIDDEN __attribute__((visibility("hidden")))
#define CT_TLS __attribute__((tls_model("initial-exec")))

namespace colabtrace::shim {

struct ThreadState {
  uint8_t* pos = nullptr;    // next free byte of the current chunk
  uint8_t* end = nullptr;    // end of the current chunk
  uint8_t* chunk = nullptr;  // start of the current chunk
  uint64_t last_ts = 0;      // ts of the last record in this chunk (the delta base)
  uint32_t generation = 0;   // == g_generation while pos belongs to this process's trace
  uint32_t tid = 0;
  uint32_t seq = 0;          // chunks this thread has taken
  int busy = 0;              // the shim is running on this thread
  int vfork_pending = 0;     // set by the vfork stub; see Recording()
  int runtime_depth = 0;     // GPU: a CUDA runtime hook is on this thread's stack
  bool signal_context = false;  // a fatal-signal handler's private writer
  // InternString's one-entry cache: the last string this thread interned (its copy in
  // the intern arena, so the pointer stays valid) and its id, valid while intern_gen ==
  // g_intern_epoch. An open right after a stat of the same path skips the table.
  uint32_t intern_gen = 0;
  uint32_t intern_len = 0;
  const uint8_t* intern_data = nullptr;
  uint64_t intern_id = 0;
  // The I/O module's last directory (a prefix of a path in the intern arena) and the
  // mount holding it, valid while dir_gen == g_intern_epoch: opens in one directory skip
  // the directory hash and the shared cache. dir_path_id: the String id of the last path
  // found in that directory (0: none), so reopening one file skips the compare too.
  uint32_t dir_gen = 0;
  uint32_t dir_len = 0;
  const uint8_t* dir_data = nullptr;
  uint64_t dir_mount = 0;
  uint64_t dir_path_id = 0;
  // The step loop's wait for its next batch (shim/steps.cpp): the tick at which this
  // thread began waiting, 0 while it is not waiting. colabtrace_batch_wait_begin and
  // _end each make one store here, so this one word says at any moment "this thread has
  // been waiting for a batch since T" (for the in-flight notes of hung processes).
  uint64_t batch_wait_since = 0;
  // This thread's call notes in the trace's state chunk (state.h), valid while
  // notes_gen == g_generation.
  format::ThreadNotes* notes = nullptr;
  uint32_t notes_gen = 0;
  // The torch.distributed collective this thread is in (shim/python/collectives.cpp), as
  // its begin said; since == 0: none.
  struct Collective {
    uint64_t since, op, group, seq, count, dtype, where;
  } collective = {};
  // The current chunk has a mapping of its own (taken over at the cap; TraceFile).
  bool own_map = false;
  // The thread's event chunk (wire.h, "event chunks"): where the records that may give
  // way go (format::kDroppable), with its own cursor and time base.
  struct EventCursor {
    uint8_t* pos = nullptr;
    uint8_t* end = nullptr;
    uint8_t* chunk = nullptr;
    uint64_t last_ts = 0;
    uint64_t offset = 0;  // the chunk's place in the file
    uint64_t before = 0;  // droppable records in this thread's earlier event chunks
    uint64_t count = 0;   // droppable records in this one
    bool own_map = false;
  } ev = {};
  // The step aggregates' running sums of this thread's time (step_agg.h), in ticks, as
  // format::StepPart numbers them (kStepTotal and kStepOther unused): recorded batch waits,
  // GPU syncs and file calls outside them, file calls inside them, and every file call's
  // count and time; wait_sync: GPU syncs inside batch waits. Only ever grow, so a step is
  // the difference of two copies: at the wait's begin (wait_snap) and at the thread's
  // first recorded batch wait (first_wait_snap, first_wait its start; 0: none yet).
  struct StepSums {
    uint64_t part[format::kStepParts];
    uint64_t wait_sync;
  } step = {}, wait_snap = {}, first_wait_snap = {};
  uint64_t first_wait = 0;
  // This thread's number in the trace (ChunkHeader::thread, from 1), taken when it joins:
  // a tid the kernel hands to a later thread then names another thread in the trace.
  uint32_t number = 0;
  // A record chunk lent to this thread for its records of no thread (kThreadless) while
  // it has no record chunk of its own: most often one an exited thread left partly used
  // (TraceFile's pool of record chunks). Its header names the thread that took it first.
  struct LentCursor {
    uint8_t* pos = nullptr;
    uint8_t* end = nullptr;
    uint8_t* chunk = nullptr;
    uint64_t last_ts = 0;
    bool own_map = false;
  } lent = {};
  // RetireThread ran for this thread (its exit): a lent chunk taken after it (a later key
  // destructor's string) is a new one, never one from the pool, which would then stay
  // with a thread that gives nothing back (and its mapping with it).
  bool retired = false;
};

// constinit: constant-initialised, so no TLS wrapper call on access. The vfork stub in
// vfork_x86_64.S stores to vfork_pending at a fixed offset (checked in writer.cpp).
extern constinit thread_local ThreadState t_thread CT_TLS;
extern TraceFile g_trace;
extern uint32_t g_generation;  // bumped in every fork child
extern int g_pid;              // this process's pid (updated in fork children)
extern bool g_recording;       // a trace is open and COLABTRACE_DISABLE is not set
extern uint32_t g_intern_epoch;  // bumped by ResetInterning: per-thread intern caches expire

// The periodic resource sample's gate (sampling.h): Emit calls g_sample_hook for the
// first record whose timestamp reaches g_sample_due_ticks. UINT64_MAX: none due.
extern uint64_t g_sample_due_ticks;
extern void (*g_sample_hook)(uint64_t now_ticks);
// Called by a vfork parent at its first hook after the vfork (RecordingSlow); set by the
// first vfork child that leaves its parent a note (fork_exec.cpp's FlushVforkNote).
extern void (*g_vfork_parent_hook)();

// Takes a new chunk for t that can hold `need` bytes; false once tracing has stopped.
bool OpenChunk(ThreadState& t, size_t need, uint64_t ts);
// The same for t's lent chunk (ThreadState::lent): a chunk from the pool of record chunks
// that exited threads left with room, else a new one.
bool OpenLentChunk(ThreadState& t, size_t need, uint64_t ts);
// The same for t's event chunk (droppable records); false once tracing has stopped, or
// while the cap leaves no room (the record is then only counted).
bool OpenEventChunk(ThreadState& t, size_t need, uint64_t ts);

// At process start (and in each exec'd image): asks libc to call RetireThread when a
// thread that recorded exits (a pthread key's destructor: pthread_exit or a return from
// its start routine, never a process's exit, which takes its threads with it). RetireThread
// then also calls `also` (the state chunks' ReleaseNotes: the writer knows no state chunks).
void WatchThreadExits(void (*also)(ThreadState&));
// The calling thread exits: its last event chunk is put up for rewriting with its events
// counted in the header (TraceFile::RetireEventChunk), its record chunk (and lent chunk)
// goes to the pool of record chunks for the next thread's records of no thread when it has
// room left, else is finished, and WatchThreadExits' `also` frees its notes. Records it
// writes after this go into new chunks, as at its start.
void RetireThread();

// True when the calling thread should record: tracing is on, the shim is not already
// running on this thread, and this is not a vfork child borrowing its parent's memory.
bool RecordingSlow(ThreadState& t);
// True in a vfork child that still runs on its parent's memory (before exec or _exit).
bool InVforkChild();

inline bool Recording() {
  ThreadState& t = t_thread;
  if (__builtin_expect(static_cast<int>(!g_recording) | t.busy | t.vfork_pending, 0)) return RecordingSlow(t);
  return true;
}

// Encodes rec at pos and commits it (its type byte stored last); advances pos and the
// chunk's time base.
template <class R> inline void AppendRecord(uint8_t*& pos, uint64_t& last_ts, const R& rec) {
  uint8_t* p = pos;
  const size_t n = format::EncodeRecordUncommitted(rec, last_ts, p);
  __atomic_store_n(p, format::CommittedType(rec, last_ts), __ATOMIC_RELEASE);
  pos = p + n;
  last_ts = rec.ts;
}

// Appends rec to t's event chunk; false when it had to give way (no chunk).
template <class R> inline bool AppendToEventChunk(ThreadState& t, const R& rec, size_t max) {
  ThreadState::EventCursor& e = t.ev;
  if (__builtin_expect(t.generation != g_generation ||
                           static_cast<size_t>(e.end - e.pos) <= max,
                       0)) {
    if (!OpenEventChunk(t, max + 1, rec.ts)) return false;
  }
  AppendRecord(e.pos, e.last_ts, rec);
  return true;
}

// Appends rec (rec.ts already set) to the calling thread's chunk. Call only inside a
// ShimScope that entered(). Records that may give way (format::kDroppable, known at
// compile time) go into the thread's event chunk, every other into its record chunk.
// The records the step model counts as the thread's file calls (ForEachFileCall in
// analyzer/perf/step_model.cpp): every file I/O record with a duration.
template <class R> inline constexpr bool kStepFileCall =
    R::kType == format::RecordType::IoOpen || R::kType == format::RecordType::IoRead ||
    R::kType == format::RecordType::IoReadAt || R::kType == format::RecordType::IoWrite ||
    R::kType == format::RecordType::IoStat || R::kType == format::RecordType::IoDir ||
    R::kType == format::RecordType::IoCopy || R::kType == format::RecordType::IoFsync;

// Adds a record's time to the thread's step sums (ThreadState::step): a few adds into
// thread-local words, no branch but the one on the open batch wait.
template <class R> inline void NoteStepTime(ThreadState& t, const R& rec) {
  if constexpr (kStepFileCall<R>) {
    ThreadState::StepSums& s = t.step;
    ++s.part[format::kStepIoCalls];
    s.part[format::kStepIoCallTicks] += rec.dur;
    s.part[t.batch_wait_since != 0 ? format::kStepWaitIo : format::kStepIo] += rec.dur;
  } else if constexpr (R::kType == format::RecordType::GpuSync) {
    if (t.batch_wait_since != 0) {
      t.step.wait_sync += rec.dur;
    } else {
      t.step.part[format::kStepGpuSync] += rec.dur;
    }
  }
}

// Appends rec to the thread's record chunk, opening one when it has no room; false when
// none could be had.
template <class R> inline bool AppendToRecordChunk(ThreadState& t, const R& rec, size_t max) {
  if (__builtin_expect(t.generation != g_generation ||
                           static_cast<size_t>(t.end - t.pos) <= max,
                       0)) {
    if (!OpenChunk(t, max + 1, rec.ts)) return false;
  }
  AppendRecord(t.pos, t.last_ts, rec);
  return true;
}

// Records that name no thread: the reader keeps only their id and bytes (String and Stack:
// IndexStrings in analyzer/trace/reader.cpp), never the thread of the chunk they lie in. So
// a thread without a record chunk of its own may write them into one another thread began
// (AppendThreadless): a thread per task that interns a new path then adds that string's
// bytes to the trace, not a 32 KiB chunk.
template <class R> inline constexpr bool kThreadless =
    R::kType == format::RecordType::String || R::kType == format::RecordType::Stack;

// Appends a record of no thread (kThreadless) to t's record chunk when it has one (as any
// record), else to its lent chunk, taking one when it has none or it is full. Its time is
// at least the lent chunk's last, so that chunk stays in time order (a String or Stack has
// no time of its own: EmitNew gives it its thread's last). Not a hot path: a thread writes
// one per string or stack the process had not seen.
template <class R> inline bool AppendThreadless(ThreadState& t, const R& rec, size_t max) {
  if (t.generation == g_generation && t.chunk != nullptr) return AppendToRecordChunk(t, rec, max);
  ThreadState::LentCursor& l = t.lent;
  if (t.generation != g_generation || static_cast<size_t>(l.end - l.pos) <= max) {
    if (!OpenLentChunk(t, max + 1, rec.ts)) return false;
  }
  R in_order = rec;
  if (in_order.ts < l.last_ts) in_order.ts = l.last_ts;
  AppendRecord(l.pos, l.last_ts, in_order);
  return true;
}

template <class R> inline void Emit(const R& rec) {
  ThreadState& t = t_thread;
  const size_t max = format::MaxEncodedSize(rec);
  NoteStepTime(t, rec);
  if constexpr (format::kDroppable<R>) {
    if (!AppendToEventChunk(t, rec, max)) return;
    ++t.ev.count;
  } else if constexpr (kThreadless<R>) {
    if (!AppendThreadless(t, rec, max)) return;
  } else {
    if (!AppendToRecordChunk(t, rec, max)) return;
  }
  if (__builtin_expect(rec.ts >= __atomic_load_n(&g_sample_due_ticks, __ATOMIC_RELAXED), 0)) {
    g_sample_hook(rec.ts);
  }
}

// Appends rec to the calling thread's event chunk whatever its type, uncounted (not one of
// format::kDroppable's, so not in events_total): the periodic resource samples, which the
// window may give up because the thinned-sample tiers (sampling.cpp) keep their summary.
// Never calls the sample hook. Call only inside a ShimScope that entered().
template <class R> inline void EmitIntoWindow(const R& rec) {
  AppendToEventChunk(t_thread, rec, format::MaxEncodedSize(rec));
}

// Appends rec to the calling thread's record chunk whatever its type (never dropped): a
// droppable record whose summary has no place elsewhere (a collective of a process group
// past the collective chunks', shim/python/collectives.cpp). Counted in `events_total` as
// the reader counts droppable records outside event chunks. No step sums, no sample hook.
// Call only inside a ShimScope that entered().
template <class R> inline void EmitKept(const R& rec) {
  AppendToRecordChunk(t_thread, rec, format::MaxEncodedSize(rec));
}

// Emit through a fully inlined copy of the codec, for the per-call records of hot hooks
// (file I/O, cudaMalloc/cudaFree): at -O2 the generic field visitor otherwise stays out of
// line and costs about three times as much (docs/benchmarks.md, "GPU memory").
template <class R> __attribute__((flatten)) void EmitHot(const R& rec) { Emit(rec); }

// EmitHot into the calling thread's event chunk, uncounted (like EmitIntoWindow): the
// successful GpuAlloc and GpuFree records whose allocation the GPU live set holds
// (shim/gpu/live_set.h), which keeps what the report needs of them.
template <class R> __attribute__((flatten)) void EmitHotIntoWindow(const R& rec) {
  if (!AppendToEventChunk(t_thread, rec, format::MaxEncodedSize(rec))) return;
  if (__builtin_expect(rec.ts >= __atomic_load_n(&g_sample_due_ticks, __ATOMIC_RELAXED), 0)) {
    g_sample_hook(rec.ts);
  }
}

// Like Emit, but into a chunk of its own (a record chunk, whatever the type): for
// fatal-signal handlers, which may have interrupted an Emit on this very thread.
template <class R> inline void EmitFromSignalHandler(ThreadState& local, const R& rec) {
  const size_t max = format::MaxEncodedSize(rec);
  if (local.generation != g_generation || static_cast<size_t>(local.end - local.pos) <= max) {
    if (!OpenChunk(local, max + 1, rec.ts)) return;
  }
  AppendRecord(local.pos, local.last_ts, rec);
}

class ShimScope {
 public:
  ShimScope() : t_(t_thread), saved_errno_(errno), entered_(t_.busy == 0) {
    if (entered_) t_.busy = 1;
  }
  ~ShimScope() {
    if (entered_) t_.busy = 0;
    errno = saved_errno_;
  }
  ShimScope(const ShimScope&) = delete;
  ShimScope& operator=(const ShimScope&) = delete;
  bool entered() const { return entered_; }

 private:
  ThreadState& t_;
  int saved_errno_;
  bool entered_;
};

// ---- interning ------------------------------------------------------------------------

// A fast 64-bit hash of n bytes (8 bytes per step), shared by the intern tables and the
// I/O module's path caches. Not cryptographic.
inline uint64_t HashBytes(const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint64_t h = 0x9E3779B97F4A7C15ull ^ (n * 0xff51afd7ed558ccdull);
  while (n >= 8) {
    uint64_t w;
    __builtin_memcpy(&w, p, 8);
    h = (h ^ w) * 0xff51afd7ed558ccdull;
    h ^= h >> 32;
    p += 8;
    n -= 8;
  }
  uint64_t tail = 0;
  __builtin_memcpy(&tail, p, n);
  h = (h ^ tail) * 0xc4ceb9fe1a85ec53ull;
  return h ^ (h >> 29);
}

// Copies and compares of the intern arena's bytes, a word at a time in the shim's own
// code. Not memcpy/memcmp: in a program built with ThreadSanitizer, the sanitizer runtime
// intercepts those calls and sees these reads and writes of memory shared between
// threads, but not the shim's (uninstrumented) atomics that order them, and reported a
// data race in a race-free program (which then exits 66).
inline bool SameBytes(const void* a, const void* b, size_t n) {
  const auto* x = static_cast<const uint8_t*>(a);
  const auto* y = static_cast<const uint8_t*>(b);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t u, v;
    __builtin_memcpy(&u, x + i, 8);
    __builtin_memcpy(&v, y + i, 8);
    if (u != v) return false;
  }
  for (; i < n; ++i) {
    if (x[i] != y[i]) return false;
  }
  return true;
}
// (GCC would turn the loop back into a memcpy call.)
__attribute__((optimize("no-tree-loop-distribute-patterns"))) inline void CopyBytes(void* dst, const void* src,
                                                                                   size_t n) {
  auto* d = static_cast<uint8_t*>(dst);
  const auto* s = static_cast<const uint8_t*>(src);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    __builtin_memcpy(&w, s + i, 8);
    __builtin_memcpy(d + i, &w, 8);
  }
  for (; i < n; ++i) d[i] = s[i];
}

// Returns the id of a String record holding s, emitting the record the first time this
// process sees s. Strings longer than kMaxInternedString are cut. Lock-free; when the
// table or its arena is full, the record is emitted again with a fresh id.
inline constexpr size_t kMaxInternedString = 4096;
uint64_t InternString(std::string_view s);
// The calling thread's last interned string, as stored in the intern arena (stable for
// the process's lifetime), if it equals s; else null.
// Rewrites one of the calling thread's caches (fill sets its fields). A signal handler
// that interrupts a reader on this thread may rewrite it too: the generation is cleared
// first and set last, so the interrupted reader sees a miss, never a mix.
template <class Fill> inline void RewriteThreadCache(uint32_t& gen, Fill&& fill) {
  gen = 0;
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  fill();
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  gen = g_intern_epoch;
}
// Reads one of the calling thread's caches (read copies its fields out): true when the
// copy is whole and of this interning epoch. A signal handler's rewrite in between clears
// or changes the generation, so the copy then reads as a miss, never a mix.
template <class Read> inline bool ReadThreadCache(const uint32_t& gen_field, Read&& read) {
  const uint32_t gen = gen_field;
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  read();
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  return gen != 0 && gen == g_intern_epoch && gen_field == gen;
}
// The calling thread's last interned string: its copy in the intern arena (stable for the
// process's lifetime) and its id.
struct LastString {
  const uint8_t* data = nullptr;
  uint32_t len = 0;
  uint64_t id = 0;
  bool Is(std::string_view s) const { return len == s.size() && SameBytes(data, s.data(), s.size()); }
};
inline bool ReadLastInterned(LastString* out) {
  ThreadState& t = t_thread;
  return ReadThreadCache(t.intern_gen, [&] {
           out->len = t.intern_len;
           out->data = t.intern_data;
           out->id = t.intern_id;
         }) && out->data != nullptr;
}
inline const uint8_t* LastInterned(std::string_view s, uint64_t* id = nullptr) {
  LastString last;
  if (!ReadLastInterned(&last) || !last.Is(s)) return nullptr;
  if (id != nullptr) *id = last.id;
  return last.data;
}
inline uint64_t InternCString(const char* s) {
  return s == nullptr ? 0 : InternString(std::string_view(s));
}

// Same for a native stack (return addresses, innermost first). Returns 0 for no frames.
uint64_t InternStack(const uint64_t* frames, size_t n);

// Forgets every interned id: a fork child starts a new trace.
void ResetInterning();

}  // namespace colabtrace::shim
