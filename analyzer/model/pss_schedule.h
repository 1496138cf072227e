// When `colabtrace run` reads a process's PSS and USS: a cost budget for smaps_rollup.
//
// /proc/PID/smaps_rollup walks every page of the process while it holds the process's
// mmap lock: about 5-10 ms per GiB of RSS on the development VM, so that reading a 4 GiB
// process ten times a second stalls its mmap and munmap calls 40% of the time. RSS, CPU
// time and threads come from /proc/PID/stat at every round instead (about 10 us at any
// size); PSS only as this schedule allows:
//   - the lock: after a read that held a process's mmap lock C ns, the next waits at
//     least C / kLockShare (2 ms -> 100 ms, 40 ms -> 2 s), so reads hold it at most
//     kLockShare of the time. C is the read's wall time, but at most kModelSlack times
//     its CPU time: on a busy machine the sampler waits for a CPU in mid-walk, and one
//     such read would otherwise keep a growing worker unread for seconds;
//   - the sampler's CPU: a bucket fills at kCpuShare of one core (1%), the sampler's whole
//     budget. Each round's own work (/proc/PID/stat, the cgroup, the trace) is paid from
//     it (ChargeRound), and each read too (a predicted cost when it is chosen, settled
//     with the CPU it took): PSS gets what the rounds leave, most of it in a small job,
//     nothing in a job so big that its rounds alone use the budget;
//   - order: a process never read first (read at first sight, whatever the bucket holds:
//     its first reading anchors the verdict's sum and its growth), then one whose RSS
//     moved since its reading (a growing worker is named from readings over time), then
//     one past the floor (kFloorNs since its last reading), then the one most overdue
//     against its own lock interval, each in turn while the bucket holds anything (the
//     last read may take it into debt): small processes are read often and big ones
//     seldom. When the bucket cannot pay for every floor (many big processes) the floor
//     gives way, and the report says how often PSS was read;
//   - the pressure verdict: PSS is at most RSS, so while the tree's summed RSS stays
//     below kPressureShare of the limit the verdict needs no PSS. Above it the verdict
//     wins over the CPU budget (never over the lock's): a process whose RSS moved since
//     its reading, or whose reading is older than kVerdictRefreshNs, is read as soon as
//     its lock interval allows;
//   - COLABTRACE_PSS_MS: a fixed interval for every process instead (no budget at all).
// Pure logic, with the clock and the measured costs handed in: unit-tested without /proc.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <vector>

namespace colabtrace::analyzer {

// A process's PSS as host.memory-pressure sums it: its latest PSS reading, capped at its
// RSS now (PSS is at most RSS); its RSS when it was never read. A round's sum is so made
// of readings taken at different times. A reading can lag the process; it matters only
// where the tree's summed RSS reaches the threshold, and there the schedule reads every
// process that moved as often as the lock budget allows.
uint64_t CarriedPss(uint64_t pss_then, uint64_t rss_now);

class PssSchedule {
 public:
  static constexpr double kLockShare = 0.02;       // of one process's time, in smaps reads
  static constexpr double kCpuShare = 0.01;        // of one core: the sampler's rounds and reads
  static constexpr uint64_t kFloorNs = 30'000'000'000ull;
  static constexpr double kPressureShare = 0.9;    // host.memory-pressure's threshold
  static constexpr uint64_t kVerdictRefreshNs = 5'000'000'000ull;
  // What a read is expected to cost (CPU), before one was measured; a measured cost is
  // scaled by the RSS since and kept within a factor kModelSlack of this.
  static constexpr uint64_t kBaseCostNs = 50'000;
  static constexpr uint64_t kCostNsPerGiB = 10'000'000;
  static constexpr double kModelSlack = 4.0;

  // fixed_interval_ns: COLABTRACE_PSS_MS in ns (0: the budget above).
  explicit PssSchedule(uint64_t fixed_interval_ns = 0) : fixed_ns_(fixed_interval_ns) {}

  struct Candidate {
    pid_t pid = 0;
    uint64_t rss = 0;  // bytes, this round
  };
  // The processes to read this round, in the order to read them. limit: the bytes
  // host.memory-pressure compares against (UINT64_MAX: none known).
  std::vector<pid_t> Choose(uint64_t now_ns, const std::vector<Candidate>& round, uint64_t limit);
  // A read of pid, done at now_ns, held its lock wall_ns (the read's wall time), cost the
  // sampler cpu_ns and gave pss (UINT64_MAX: unreadable) at rss.
  void Record(pid_t pid, uint64_t now_ns, uint64_t wall_ns, uint64_t cpu_ns, uint64_t rss, uint64_t pss);
  // A round's own work (everything but the reads) took cpu_ns of the sampler's CPU.
  void ChargeRound(uint64_t cpu_ns) { bucket_ns_ -= static_cast<int64_t>(cpu_ns); }
  // Drops the processes not in `alive`.
  void Retain(const std::vector<pid_t>& alive);

  // The CPU a read of pid is expected to cost at this RSS, and how long its last read
  // makes the next wait (0: never read; at most the floor).
  uint64_t PredictedCostNs(pid_t pid, uint64_t rss) const;
  uint64_t LockIntervalNs(pid_t pid) const;
  // The tree's PSS this round as host.memory-pressure will sum it (CarriedPss each).
  uint64_t EstimatedTreePss(const std::vector<Candidate>& round) const;
  // The sampler's CPU time the reads have spent, and the bucket's balance (negative: in
  // debt).
  uint64_t spent_ns() const { return spent_ns_; }
  int64_t bucket_ns() const { return bucket_ns_; }

 private:
  struct Process {
    bool read = false;         // has a reading (PSS or a failed try)
    uint64_t last_ns = 0;      // when it was read last
    uint64_t wall_ns = 0;      // how long that read held the lock
    uint64_t cpu_ns = 0;       // and what it cost the sampler
    uint64_t rss_at_read = 0;  // its RSS then
    uint64_t pss = UINT64_MAX;
    int64_t charged_ns = 0;    // what Choose took from the bucket for the read to come
  };
  // Whether a process's RSS moved enough since its reading to want a new one.
  static bool Moved(const Process& p, uint64_t rss);
  void Refill(uint64_t now_ns);

  uint64_t fixed_ns_;
  std::map<pid_t, Process> procs_;
  int64_t bucket_ns_ = 20'000'000;  // full: the first rounds read the new tree
  uint64_t refilled_ns_ = 0;
  uint64_t spent_ns_ = 0;
};

}  // namespace colabtrace::analyzer
