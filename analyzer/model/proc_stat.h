// One process's /proc/PID/stat line, parsed: shared by `colabtrace run`'s tree sampler and
// the analysis that tells a still-running process from a killed one.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

namespace colabtrace::analyzer {

struct ProcStat {
  pid_t pid = 0;
  std::string comm;
  char state = '?';          // R, S, D, Z (zombie), X (dead), ...
  pid_t ppid = 0;
  uint64_t threads = 0;
  uint64_t start_ticks = 0;  // clock ticks after boot (sysconf(_SC_CLK_TCK) per second)
  uint64_t rss_pages = 0;
  uint64_t utime_ticks = 0;  // CPU time in user and kernel mode, all threads (clock ticks)
  uint64_t stime_ticks = 0;
  uint64_t flags = 0;        // the kernel's PF_* flags of its main thread

  bool ended() const { return state == 'Z' || state == 'X' || state == 'x'; }
  // Inside do_exit (PF_EXITING): it has started to die and runs no more of its own code.
  bool exiting() const { return (flags & 0x4) != 0; }
};

// A small /proc or /sys file, whole ("" when unreadable).
std::string ReadSmall(const std::string& path);

// The stat line of pid, or nullopt when it is gone or unreadable. comm may hold blanks and
// parentheses, so the fields are counted from the last ')'.
std::optional<ProcStat> ReadProcStat(pid_t pid);

// Whether pid has a SIGKILL pending (/proc/PID/status, SigPnd or ShdPnd): kill() queues it
// at once, but a loaded machine may not run the process to its exit for a while. It will
// die; it runs no more of its own code.
bool SigkillPending(pid_t pid);

}  // namespace colabtrace::analyzer
