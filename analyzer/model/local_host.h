// The analyzing machine against the one that recorded a trace: whether checks of files
// on disk as they are now (a library replaced during the run, a process still running)
// may read this machine, and the label a skipped check gets when they may not.
#pragma once

#include <string>

#include "trace/process_trace.h"

namespace colabtrace::analyzer {

// Whether the analyzing machine is the one (and the boot) that recorded a trace.
struct HostOrigin {
  bool same_host = true;
  std::string why;  // "boot_id", "machine_id" or "hostname": what differed; "" when same
  // The label for disk-based evidence: "" on the same host, else
  // "skipped: trace from another host (boot_id differs)".
  std::string DiskChecksLabel() const;
};

// This machine's identity, for comparing with a trace's HostInfo (boot_id, machine_id,
// hostname). COLABTRACE_ANALYZER_HOST_ID (test-only, documented in docs/DEVELOPING.md)
// replaces this machine's boot_id and machine_id with its value.
struct LocalHost {
  std::string boot_id, machine_id, hostname;
  static const LocalHost& Get();
};

// Compares the trace's recorded identity with this machine's: boot_id first, then
// machine_id, then (for traces that recorded neither) the hostname.
HostOrigin HostOriginOf(const ProcessTrace& t, const LocalHost& local = LocalHost::Get());

// Whether the process that wrote t is alive on this machine now: the same boot, its pid
// present and not a zombie, and started no later than its trace (a reused pid started
// after the traced process ended). A report made while a run crawls reads such a trace,
// which has no exit record yet. Reads this machine's /proc: the only rule input that does.
bool StillRunningHere(const ProcessTrace& t, const LocalHost& local = LocalHost::Get());

}  // namespace colabtrace::analyzer
