// Steps and what the step loop waits for: the records the analyzer cuts a run into steps
// with, and the entry points that write them.
//
//   void colabtrace_step(uint64_t n)       a program's own marker: a Step record, source
//                                          kMarker, n its own step number.
//   void colabtrace_step_auto(uint64_t n)  the Python start-up hook saw an iteration's
//                                          optimizer step end: a Step, source kOptimizer.
//   void colabtrace_batch_wait_begin(const char* where)
//                                          the calling thread starts waiting for its next
//                                          batch (the DataLoader iterator's __next__) at
//                                          `where` ("train.py:25 in main", may be NULL):
//                                          noted in flight (state.h) until the end.
//   void colabtrace_batch_wait_end(uint64_t kind, const char* where, uint64_t n)
//                                          the batch arrived: one BatchWait record {ts = the
//                                          begin, dur, kind, where, n}. kind 0 ends the wait
//                                          and records nothing (the iterator raised: the end
//                                          of the epoch, or an error).
//   void colabtrace_process_role(uint64_t role, uint64_t worker_id)
//                                          a ProcessRole record (a DataLoader worker says so).
//
// Programs call colabtrace_step through the weak reference in
// include/colabtrace/colabtrace.h (a no-op without the shim), Python through ctypes
// (python/colabtrace/__init__.py); the others are the start-up hook's
// (python/colabtrace/_startup/sitecustomize.py). All of them are async-signal-safe and
// lock-free, safe from any thread, preserve errno, and do nothing while nothing is
// recorded or when reached from inside the shim.
//
// The batch wait's start lives in the calling thread's ThreadState (batch_wait_since), and
// the wait in its level-1 call note in the trace (so a process killed while it waits
// says where it waited). A wait inside a wait on the same thread (an iterator drawing
// from another) takes the start over, and the outer end then finds none and records
// nothing: waits are never counted twice. Every step also moves the process's progress
// (state.h), which `colabtrace run --hang-timeout` watches, and every boundary (a step, a
// recorded batch wait's start) is summed into the step aggregates (step_agg.h), with the
// thread's time in waits, GPU syncs and file calls since the last one (ThreadState::step).
#include <cstdint>

#include "clock.h"
#include "state.h"
#include "step_agg.h"
#include "writer.h"

namespace colabtrace::shim {

namespace {

void EmitStep(uint64_t n, format::StepSource source) {
  if (!Recording()) return;
  ShimScope scope;
  if (!scope.entered()) return;
  format::Step r;
  r.ts = Ticks();
  r.n = n;
  r.source = static_cast<uint64_t>(source);
  Emit(r);
  StepAggBoundary(static_cast<uint32_t>(source), r.ts, t_thread.step);
  NoteStep(r.ts);
}

}  // namespace

#pragma GCC visibility push(default)
extern "C" {

void colabtrace_step(uint64_t n) { EmitStep(n, format::StepSource::kMarker); }

void colabtrace_step_auto(uint64_t n) { EmitStep(n, format::StepSource::kOptimizer); }

void colabtrace_batch_wait_begin(const char* where) {
  if (!Recording()) return;
  ShimScope scope;
  if (!scope.entered()) return;
  ThreadState& t = t_thread;
  // Ticks() is never 0 (a TSC or CLOCK_MONOTONIC of a running system), so 0 can mean
  // "not waiting". rdtsc and the vDSO clock leave errno alone.
  const uint64_t now = Ticks();
  t.batch_wait_since = now;
  t.wait_snap = t.step;  // the thread's sums at the wait's start: a step boundary if it is recorded
  format::ThreadNotes* tn = ThreadNotesOf(t);
  EndNote(&tn->wait);  // a wait inside a wait takes the note over too
  BeginNoteFull(&format::ThreadNotes::wait, format::InFlightCall::kBatchWait,
                static_cast<uint32_t>(format::BatchWaitKind::kDataLoader), now, 0, 0, 0,
                where != nullptr ? InternCString(where) : 0);
  NotePythonThread(tn);
}

void colabtrace_batch_wait_end(uint64_t kind, const char* where, uint64_t n) {
  ThreadState& t = t_thread;
  const uint64_t since = t.batch_wait_since;
  if (since == 0) return;
  t.batch_wait_since = 0;
  if (t.notes_gen == g_generation) EndNote(&t.notes->wait);
  if (kind == 0) {
    // No record, so no wait: what the thread did inside it counts as outside any wait.
    ThreadState::StepSums& s = t.step;
    s.part[format::kStepIo] += s.part[format::kStepWaitIo] - t.wait_snap.part[format::kStepWaitIo];
    s.part[format::kStepWaitIo] = t.wait_snap.part[format::kStepWaitIo];
    s.part[format::kStepGpuSync] += s.wait_sync - t.wait_snap.wait_sync;
    s.wait_sync = t.wait_snap.wait_sync;
  }
  if (kind == 0 || !Recording()) return;
  ShimScope scope;
  if (!scope.entered()) return;
  format::BatchWait r;
  const uint64_t now = Ticks();
  r.ts = since;
  r.dur = now > since ? now - since : 0;
  r.kind = kind;
  r.where = InternCString(where);
  r.n = n;
  Emit(r);
  StepAggBoundary(format::kStepAggBatchWaits, since, t.wait_snap);
  if (t.first_wait == 0) {
    t.first_wait = since;
    t.first_wait_snap = t.wait_snap;
  }
  t.step.part[format::kStepInputWait] += r.dur;
}

void colabtrace_process_role(uint64_t role, uint64_t worker_id) {
  if (!Recording()) return;
  ShimScope scope;
  if (!scope.entered()) return;
  format::ProcessRole r;
  r.ts = Ticks();
  r.role = role;
  r.worker_id = worker_id;
  Emit(r);
}

}  // extern "C"
#pragma GCC visibility pop

}  // namespace colabtrace::shim
