// What each thread is doing now, where a SIGKILL cannot lose it: the state chunks of the
// trace (format::StateChunk layout in colabtrace/format/wire.h).
//
// A hooked call that may block (a file open, read, write or stat, a CUDA synchronisation,
// dlopen, wait; the Python start-up hook's batch wait) notes itself in its thread's
// ThreadNotes before the real call and clears the note when it returns: on the hot path
// that is three stores before (api, since, object; then `call`, stored last) and one after,
// into memory mapped from the trace file. A process killed while blocked leaves the note
// in the file, and the reader turns it into an `in_flight` record. Notes nest once: a call
// noted while another is noted on the same level is not noted (the outer one is the
// wait). Level 1 (`wait`) is the program's own Python-level wait around those calls.
//
// The first state chunk of each exec image also carries the process's progress (its step
// count and last step), which `colabtrace run --hang-timeout` reads live, the GPU streams'
// synchronisation epochs, and the Python layout an outside reader needs. Ring chunks hold
// the GPU launch rings (gpu/launch_ring.h).
//
// Everything here is lock-free on the hot path and async-signal-safe; the first note of
// a thread claims its ThreadNotes (cold: one atomic add, or a chunk allocation).
#pragma once

#include <cstdint>

#include "colabtrace/format/records.h"
#include "colabtrace/format/wire.h"
#include "writer.h"

namespace colabtrace::shim {

// The calling thread's notes in this process's trace, claimed at its first note (nullptr
// when tracing has stopped: the thread then notes into a private scratch entry).
format::ThreadNotes* ClaimNotes(ThreadState& t);

// At the calling thread's exit (RetireThread): its notes are cleared and go to the next
// thread that claims notes.
void ReleaseNotes(ThreadState& t);

inline format::ThreadNotes* ThreadNotesOf(ThreadState& t) {
  if (__builtin_expect(t.notes_gen != g_generation, 0)) return ClaimNotes(t);
  return t.notes;
}

// The calling thread's note of `level`, when no call is noted there (else nullptr: a
// call inside a noted call is not noted; the outer one is what it waits in).
inline format::CallNote* FreeNote(format::CallNote format::ThreadNotes::*level) {
  format::CallNote* n = &(ThreadNotesOf(t_thread)->*level);
  return __builtin_expect(n->call != 0, 0) ? nullptr : n;
}

// Notes that the calling thread begins `call` on `level` (0 the call, 1 the Python-level
// wait). Returns the note to pass to EndNote, or nullptr when it was not noted (a note of
// that level is already open on this thread). Call only where Recording() said yes.
inline format::CallNote* BeginNote(format::CallNote format::ThreadNotes::*level, format::InFlightCall call,
                                   uint32_t api, uint64_t since, uint64_t object) {
  format::CallNote* n = FreeNote(level);
  if (n == nullptr) return nullptr;
  n->api = api;
  n->since = since;
  n->object = object;
  __atomic_store_n(&n->call, static_cast<uint32_t>(call), __ATOMIC_RELEASE);  // last
  return n;
}

// BeginNote with every field: a GPU sync's epoch and flags, a batch wait's asking line.
inline format::CallNote* BeginNoteFull(format::CallNote format::ThreadNotes::*level, format::InFlightCall call,
                                       uint32_t api, uint64_t since, uint64_t object, uint64_t epoch,
                                       uint32_t flags, uint64_t where) {
  format::CallNote* n = FreeNote(level);
  if (n == nullptr) return nullptr;
  n->epoch = epoch;
  n->flags = flags;
  n->where = where;
  n->api = api;
  n->since = since;
  n->object = object;
  __atomic_store_n(&n->call, static_cast<uint32_t>(call), __ATOMIC_RELEASE);  // last
  return n;
}

// The call returned.
inline void EndNote(format::CallNote* n) {
  if (n != nullptr) __atomic_store_n(&n->call, 0u, __ATOMIC_RELEASE);
}

// A note ended when its scope does (every return path of a hook).
class NoteScope {
 public:
  explicit NoteScope(format::CallNote* n) : n_(n) {}
  ~NoteScope() { EndNote(n_); }
  NoteScope(const NoteScope&) = delete;
  NoteScope& operator=(const NoteScope&) = delete;
  format::CallNote* note() const { return n_; }

 private:
  format::CallNote* n_;
};

// In a fork child, first of all: the lock that guards claiming notes and rings is free.
// The fork may have caught another thread of the parent holding it (claiming its notes,
// taking a launch ring); that thread does not exist in the child, which would otherwise
// spin forever at its first note.
void ResetStateLockInChild();

// Progress: a step record was written at `ticks` (shim/steps.cpp).
void NoteStep(uint64_t ticks);

// The synchronisation epochs of this image's GPU streams, in the first state chunk (in
// process memory when there is no trace): the device-wide completed epoch and
// format::kSyncedStreams stream entries.
struct SyncedTable {
  uint32_t* device;
  format::SyncedStream* streams;
};
SyncedTable SyncedTableOf(bool may_claim = true);

// A fresh launch ring in a ring chunk of this image's trace, or nullptr (no trace, or
// tracing stopped).
format::LaunchRing* AllocLaunchRing();

// This image's NCCL chunk (wire.h: its communicator table and call ring), taken at the first
// call; nullptr (no trace, or tracing stopped). The same chunk at every call in a process;
// a fork child gets its own.
uint8_t* NcclChunk();

// Process group `group`'s block of this image's collective chunks (wire.h: its counters
// and ring of latest collectives), its chunk taken at the group's first call; nullptr for a
// group past format::kCollGroups, or with no trace (tracing stopped). Lock-free once taken;
// a fork child gets its own.
format::CollGroupBlock* CollGroupBlockOf(uint64_t group);

// Records the calling Python thread's PyThreadState in its notes (for an outside reader
// of its stack) when it is not known yet. Cheap when known: one load.
void NotePythonThread(format::ThreadNotes* tn);

}  // namespace colabtrace::shim
