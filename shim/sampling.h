// Resource samples (RSS, threads, cgroup memory, OOM kills) and the clock pairs the
// analyzer fits ticks to nanoseconds with.
//
// The shim has no thread of its own (a thread would make every traced process
// multi-threaded: fork warnings, failed unshare(CLONE_NEWUSER), a process that never
// ends when its last program thread exits). Samples are taken on the shim's own paths
// instead:
//   - at process start, fork, exec and exit (always);
//   - periodically, time-gated: Emit compares the record's timestamp with a due time
//     (one load and a compare), and the first record past it takes a sample, at most
//     once per COLABTRACE_SAMPLE_MS. A process that makes no traced call for a while
//     gets no samples meanwhile; `colabtrace run` samples every process from outside.
#pragma once

#include <cstdint>

#include "colabtrace/format/records.h"

namespace colabtrace::shim {

// Finds this process's memory cgroup (v2, or v1's memory controller). Call at start-up.
void FindCgroup();

// "v1", "v2" or "none".
const char* CgroupVersionName();

// Reads a number from a file of our cgroup (v2 name, v1 name); UINT64_MAX when missing
// or "max".
uint64_t ReadCgroupNumber(const char* v2_name, const char* v1_name);

// Emits a Clock record (ticks, CLOCK_MONOTONIC, CLOCK_REALTIME). Inside a ShimScope.
void EmitClock();

// A Clock record of now (not emitted).
format::Clock ReadClock();

// A Sample record of now (not emitted). Raw system calls only. A periodic sample also
// reads the cgroup's memory.stat for its inactive page cache (~11 us, too much for every
// process start and exit, where the sample goes without it).
enum class SampleKind { kEvent, kPeriodic };
format::Sample ReadSample(SampleKind kind);

// Emits a Sample record now (start, fork, exec, exit: a record chunk, never dropped) and
// the thread's Python position. Inside a ShimScope.
void TakeSample();

// Arms the periodic sample for this process (start-up, fork child, adopted exec).
void ArmPeriodicSamples();

// fn(ticks of the sample) runs at each periodic sample, after it, under its gate (one
// thread at a time) and inside its ShimScope: for a layer above that keeps a history by
// the samples (the GPU live set's). One function; a later call replaces it.
void AlsoAtPeriodicSamples(void (*fn)(uint64_t ticks));

// Stops periodic samples and forgets the thinned-sample tiers, until ArmPeriodicSamples:
// before a new trace is begun (a fork child's inherited tiers are its parent's).
void DisarmPeriodicSamples();

}  // namespace colabtrace::shim
