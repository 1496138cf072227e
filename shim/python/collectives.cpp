// torch.distributed's collectives and process groups, as the Python start-up hook
// (python/colabtrace/_startup/sitecustomize.py) sees them, on any backend (gloo, NCCL,
// MPI). Entry points (python_hooks.def), called through ctypes where the hook cannot
// have them as built-in functions (entry_module.cpp, which calls the same logic:
// collectives.h). The per-collective ones take C ints only (ctypes converts a Python
// int to one fastest, about twice as fast as a typed 64-bit argument), so a 64-bit value
// comes in two 31-bit halves (lo, hi), and a string as the String id colabtrace_intern
// gave it (the hook keeps one per call site and dtype; a fork child's trace starts
// afresh, and the hook forgets them there):
//
//   int colabtrace_intern(const char* s)
//        the String id of s in this process's trace (0: not recording).
//   void colabtrace_collective_begin(int op_group, int seq_lo, int seq_hi, int count_lo,
//                                    int count_hi, int dtype, int where)
//        the calling thread enters a collective: op_group is op (CollectiveOp) | group
//        << 8; seq, count, dtype and where as the Collective record has them. It is
//        noted in flight (level 1 of the thread's notes, state.h) until its end, so that
//        a rank killed or stopped while it waits says in which collective, at which line.
//   void colabtrace_collective_enter(int op_group, int seq, int count, int dtype, int where)
//        the same, for a seq and count below 2^31 (the usual case: two arguments fewer).
//   void colabtrace_collective_end(int status, int seqs)
//        the call returned (status: CollectiveStatus) after issuing `seqs` collectives on
//        its group (0: unknown): one Collective record, ts the begin.
//   void colabtrace_dist_group(uint64_t group, int64_t rank, uint64_t world_size,
//                              const char* backend, uint64_t base_seq, uint64_t how)
//        a DistGroup record: a process group came to be (typed arguments: once per
//        group).
//
// The begin's fields live in the calling thread's ThreadState (collective), so the end
// writes the record from them; the note is the copy a SIGKILL cannot lose. A begin while
// the thread's level-1 note holds another wait (a batch wait around the collective) is
// recorded at its end all the same, but not noted: the outer wait is what the thread is
// in. A begin inside a begin takes the first one over (the hook never nests them). Like
// the step entry points (shim/steps.cpp): async-signal-safe, lock-free, errno preserved,
// nothing done while nothing is recorded or when reached from inside the shim.
#include "collectives.h"

#include <cstdint>

#include "clock.h"
#include "coll_table.h"
#include "state.h"
#include "writer.h"

namespace colabtrace::shim::python {

void BeginCollective(uint32_t op_group, uint64_t seq, uint64_t count, uint64_t dtype, uint64_t where) {
  if (!Recording()) return;
  ShimScope scope;
  if (!scope.entered()) return;
  ThreadState& t = t_thread;
  format::ThreadNotes* tn = ThreadNotesOf(t);
  if (t.collective.since != 0 && t.notes_gen == g_generation &&
      tn->wait.call == static_cast<uint32_t>(format::InFlightCall::kCollective)) {
    EndNote(&tn->wait);  // a begin inside a begin: the first one's note goes too
  }
  // Ticks() is never 0, so since == 0 can mean "in no collective".
  ThreadState::Collective& c = t.collective;
  c.since = Ticks();
  c.op = op_group & 0xff;
  c.group = op_group >> 8;
  c.seq = seq;
  c.count = count;
  c.dtype = dtype;
  c.where = where;
  format::CallNote* n = FreeNote(&format::ThreadNotes::wait);
  if (n == nullptr) return;  // a batch wait holds the level: it is what the thread is in
  n->epoch = count;
  n->synced = c.group;
  n->detail = dtype;
  n->flags = 0;
  n->where = where;
  n->api = static_cast<uint32_t>(c.op);
  n->since = c.since;
  n->object = seq;
  __atomic_store_n(&n->call, static_cast<uint32_t>(format::InFlightCall::kCollective), __ATOMIC_RELEASE);
  NotePythonThread(tn);
}

void EndCollective(uint32_t status, uint32_t seqs) {
  ThreadState& t = t_thread;
  ThreadState::Collective c = t.collective;
  if (c.since == 0) return;
  t.collective.since = 0;
  if (t.notes_gen == g_generation &&
      t.notes->wait.call == static_cast<uint32_t>(format::InFlightCall::kCollective) &&
      t.notes->wait.since == c.since) {
    EndNote(&t.notes->wait);
  }
  if (!Recording()) return;
  ShimScope scope;
  if (!scope.entered()) return;
  format::Collective r;
  const uint64_t now = Ticks();
  r.ts = c.since;
  r.dur = now > c.since ? now - c.since : 0;
  r.op = c.op;
  r.group = c.group;
  r.seq = c.seq;
  r.seqs = seqs;
  r.count = c.count;
  r.dtype = c.dtype;
  r.where = c.where;
  r.status = status;
  format::CollGroupBlock* b = CollGroupBlockOf(c.group);
  if (b == nullptr) {
    EmitKept(r);  // no block to keep it: a group past format::kCollGroups (or no trace)
    return;
  }
  Emit(r);
  format::CollSlot s = {};
  s.ts = r.ts;
  s.dur = r.dur;
  s.seq = r.seq;
  s.count = r.count;
  s.seqs = seqs;
  s.dtype = c.dtype <= UINT32_MAX ? static_cast<uint32_t>(c.dtype) : 0;
  s.where = c.where <= UINT32_MAX ? static_cast<uint32_t>(c.where) : 0;
  s.tid = static_cast<uint32_t>(t.tid);
  s.op = static_cast<uint8_t>(c.op);
  s.status = static_cast<uint8_t>(status);
  NoteCollectiveEnd(b, s);
}

bool InsideCollective() { return t_thread.collective.since != 0; }

int InternForHook(const char* s) {
  if (s == nullptr || !Recording()) return 0;
  ShimScope scope;
  if (!scope.entered()) return 0;
  const uint64_t id = InternCString(s);
  return id <= 0x7fffffff ? static_cast<int>(id) : 0;
}

}  // namespace colabtrace::shim::python

using namespace colabtrace::shim;  // NOLINT

#pragma GCC visibility push(default)
extern "C" {

int colabtrace_intern(const char* s) { return python::InternForHook(s); }

void colabtrace_collective_begin(int op_group, int seq_lo, int seq_hi, int count_lo, int count_hi, int dtype,
                                 int where) {
  const auto whole = [](int lo, int hi) {
    return static_cast<uint64_t>(static_cast<uint32_t>(lo)) | static_cast<uint64_t>(static_cast<uint32_t>(hi)) << 31;
  };
  python::BeginCollective(static_cast<uint32_t>(op_group), whole(seq_lo, seq_hi), whole(count_lo, count_hi),
                          static_cast<uint32_t>(dtype), static_cast<uint32_t>(where));
}

void colabtrace_collective_enter(int op_group, int seq, int count, int dtype, int where) {
  python::BeginCollective(static_cast<uint32_t>(op_group), static_cast<uint32_t>(seq),
                          static_cast<uint32_t>(count), static_cast<uint32_t>(dtype), static_cast<uint32_t>(where));
}

void colabtrace_collective_end(int status, int seqs) {
  python::EndCollective(static_cast<uint32_t>(status), static_cast<uint32_t>(seqs));
}

void colabtrace_dist_group(uint64_t group, int64_t rank, uint64_t world_size, const char* backend,
                           uint64_t base_seq, uint64_t how) {
  if (!Recording()) return;
  ShimScope scope;
  if (!scope.entered()) return;
  colabtrace::format::DistGroup r;
  r.ts = Ticks();
  r.group = group;
  r.rank = rank;
  r.world_size = world_size;
  r.backend = backend != nullptr ? InternCString(backend) : 0;
  r.base_seq = base_seq;
  r.how = how;
  Emit(r);
}

}  // extern "C"
#pragma GCC visibility pop
