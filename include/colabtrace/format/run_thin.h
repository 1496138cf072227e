// Format 1.5: `colabtrace run`'s own samples (ProcSample, CgroupSample) thinned with age
// by the tiers of sample_tiers.h, one set of tiers per process run sampled and per cgroup
// (analyzer/cli/run_tiers.h writes them), and the records an entry stands for, which the
// reader makes of the entries the window gave up, and run itself writes for a short
// process's set instead of its chunks. Header-only, like sample_tiers.h.
#pragma once

#include <cstdint>

#include "colabtrace/format/records.h"
#include "colabtrace/format/sample_tiers.h"

namespace colabtrace::format {

// CTRW chunks in run's trace,
// laid out as CTTS chunks are, ChunkHeader.image the set's number (from 1), seq the tier,
// tid the process (0 for a cgroup). The ThinEntry and ThinRunHalf fields hold a process's
// figures as rss -> rss, vm -> PSS, cgroup -> USS, inactive_file -> swap, oom_kill -> ppid
// (max_working_set meaningless), and a cgroup's as rss and cgroup -> memory.current,
// vm -> memory.max, inactive_file and oom_kill as themselves (threads unknown).
inline constexpr uint32_t kRunThinChunkMagic = 0x57525443;  // "CTRW"
inline constexpr uint64_t kRunThinProcess = 1, kRunThinCgroup = 2;
// What a CTRW set is of: ThinRun::reserved[0..4] of its tier 0 chunk, written before the
// chunk's magic (comm and shim rewritten word by word when an exec changes them).
struct RunThinIdentity {
  uint64_t kind;  // kRunThinProcess or kRunThinCgroup
  uint64_t pid;   // the process (0: a cgroup)
  uint64_t comm;  // its latest comm (String id)
  uint64_t path;  // its cgroup directory, or the cgroup's (String id; 0: none)
  uint64_t shim;  // 1: libcolabtrace.so was mapped in it
};
static_assert(sizeof(RunThinIdentity) <= sizeof(ThinRun::reserved));

// The records entry e of a set stands for: its maxima at the time RSS (memory.current)
// peaked, then its last values at its end (one record when the two times are one). The
// maxima record has no CPU time (0: unknown), no swap and no OOM count (u64 max).
template <class Proc, class Cgroup>
void RunThinRecords(const ThinEntry& e, const RunThinIdentity& id, Proc&& proc, Cgroup&& cgroup) {
  const bool two = e.peak_ticks != e.end_ticks;
  if (id.kind == kRunThinCgroup) {
    CgroupSample peak;
    peak.ts = e.peak_ticks;
    peak.path = id.path;
    peak.current = e.max_rss;
    peak.max = e.max_vm;
    peak.oom_kill = kThinUnknown;
    peak.inactive_file = e.max_working_set != kThinUnknown && e.max_cgroup != kThinUnknown &&
                                 e.max_cgroup >= e.max_working_set
                             ? e.max_cgroup - e.max_working_set
                             : kThinUnknown;
    CgroupSample last = peak;
    last.ts = e.end_ticks;
    last.current = e.last_rss;
    last.max = e.last_vm;
    last.oom_kill = e.last_oom_kill;
    last.inactive_file = e.last_inactive_file;
    if (two) cgroup(peak);
    cgroup(last);
    return;
  }
  ProcSample peak;
  peak.ts = e.peak_ticks;
  peak.pid = id.pid;
  peak.ppid = e.last_oom_kill;
  peak.rss_bytes = e.max_rss;
  peak.pss_bytes = e.max_vm;
  peak.uss_bytes = e.max_cgroup;
  peak.swap_bytes = kThinUnknown;
  peak.threads = e.max_threads;
  peak.cgroup = id.path;
  peak.comm = id.comm;
  peak.shim = id.shim;
  peak.utime_ns = 0;
  peak.stime_ns = 0;
  ProcSample last = peak;
  last.ts = e.end_ticks;
  last.rss_bytes = e.last_rss;
  last.pss_bytes = e.last_vm;
  last.uss_bytes = e.last_cgroup;
  last.swap_bytes = e.last_inactive_file;
  last.threads = e.last_threads;
  last.utime_ns = e.last_utime_ns;
  last.stime_ns = e.last_stime_ns;
  if (two) proc(peak);
  proc(last);
}

}  // namespace colabtrace::format
