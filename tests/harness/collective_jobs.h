// Multi-rank jobs whose ranks meet in collectives, as rank_traces.h builds them: the
// shapes of tests/dist/test_torchrun_hang.py's real torchrun jobs, for dist.hang's and
// dist.collective-mismatch's golden tests (tests/findings/dist) and the job model's hang
// verdict (tests/dist/unit). A 3-rank torchrun job (pids 100 + rank) started by launcher
// pid 50 on host a; each rank starts at 10 s, steps at 11 s to 15 s, and returns from
// DDP's gradient all-reduce #10 (14.5 s) before step 5. Step 6's all-reduce, #11, begins
// at 16 s.
#pragma once

#include <vector>

#include "rank_traces.h"

namespace colabtrace::ranktest {

inline constexpr uint64_t kMs = 1'000'000;
inline constexpr const char* kStallFile = "/mnt/slow/x.bin";

// The shapes of HangJob.
enum class HangShape {
  // Rank 1 blocked in a read since 15.5 s; ranks 0 and 2 wait in #11 until gloo's
  // timeout raises (10 s), then exit 1 at 26.2 s and 26.3 s on a RuntimeError; the
  // launcher sends rank 1 SIGTERM at 27 s and exits 1 at 28 s.
  kTimedOut,
  // The same read; ranks 0 and 2 still in #11 (notes) at the end; everything SIGKILLed
  // with no sender: rank 1's last record is at 15.5 s, ranks 0 and 2's at 40 s and 40.2 s,
  // the launcher's at 40.3 s.
  kKilledInFlight,
  // The OOM killer: rank 1 SIGKILLed at 16.5 s, 100 ms into a read it began after ranks
  // 0 and 2 entered #11; they lose their peer (raised at 16.6 s) and exit 1 at 16.8 s and
  // 16.9 s, the launcher at 17 s.
  kOomKilled,
  // Rank 2 of 3 has no trace; ranks 0 and 1 wait in #11 as in kTimedOut (exit 1 at
  // 26.2 s and 26.3 s), the launcher exits 1 at 28 s.
  kMissingRank,
  // Rank 2 exits 0 at 15.5 s, before #11; ranks 0 and 1 as in kMissingRank.
  kExitedEarly,
  // Every rank returns from #11 and exits 0 at 20 s, the launcher at 21 s (JobCalling).
  kHealthy,
};

// Rank `rank` of a `world`-rank job: 5 steps, DDP's all-reduce #10, exit 0 at 20 s.
inline Proc CollectiveRank(int rank, int world = 3) {
  Proc p = Rank(rank, world);
  CollectiveCall c;
  c.ts = 14 * kSec + 500 * kMs;
  c.dur = 200 * kMs;
  c.seq = 10;
  p.collectives.push_back(c);
  return p;
}

// The launcher, pid 50, from 9 s to stop_ns.
inline Proc CollectiveLauncher(uint64_t stop_ns, int64_t code) {
  Proc p;
  p.pid = 50;
  p.start_ns = 9 * kSec;
  p.stop_ns = stop_ns;
  p.code = code;
  return p;
}

// DDP's gradient all-reduce #11 at 16 s: raised after dur, or in flight (dur 0).
inline CollectiveCall Step6AllReduce(uint64_t dur) {
  CollectiveCall c;
  c.ts = 16 * kSec;
  c.dur = dur;
  c.seq = 11;
  c.status = dur != 0 ? format::CollectiveStatus::kRaised : format::CollectiveStatus::kReturned;
  c.in_flight = dur == 0;
  return c;
}

// Rank `rank` waiting in #11 until it raised after `dur`, then exiting 1 on a
// RuntimeError at stop_ns.
inline Proc TimedOutRank(int rank, uint64_t dur, uint64_t stop_ns) {
  Proc p = CollectiveRank(rank);
  p.collectives.push_back(Step6AllReduce(dur));
  p.code = 1;
  p.exception = "RuntimeError";
  p.stop_ns = stop_ns;
  return p;
}

// A healthy job of calls.size() ranks: rank r makes the calls calls[r] after #10,
// numbered #11, #12... (their seq as set is ignored), from 16 s 100 ms apart, each
// returning after 50 ms; every rank exits 0 at 20 s, the launcher at 21 s.
inline std::vector<Proc> JobCalling(const std::vector<std::vector<CollectiveCall>>& calls) {
  std::vector<Proc> job{CollectiveLauncher(21 * kSec, 0)};
  for (size_t r = 0; r < calls.size(); ++r) {
    Proc p = CollectiveRank(static_cast<int>(r), static_cast<int>(calls.size()));
    for (size_t k = 0; k < calls[r].size(); ++k) {
      CollectiveCall c = calls[r][k];
      c.ts = 16 * kSec + k * 100 * kMs;
      c.dur = 50 * kMs;
      c.seq = 11 + k;
      p.collectives.push_back(c);
    }
    job.push_back(p);
  }
  return job;
}

inline std::vector<Proc> HangJob(HangShape shape) {
  const uint64_t stop0 = 26 * kSec + 200 * kMs, stop_other = 26 * kSec + 300 * kMs;
  Proc r1 = CollectiveRank(1);
  switch (shape) {
    case HangShape::kTimedOut: {
      Proc launcher = CollectiveLauncher(28 * kSec, 1);
      launcher.kills = {{101, 15}};
      r1.read_in_flight = ReadInFlight{15 * kSec + 500 * kMs, kStallFile};
      r1.end = End::kSignal;
      r1.signo = 15;
      r1.stop_ns = 27 * kSec;
      return {launcher, TimedOutRank(0, 10 * kSec, stop0), r1, TimedOutRank(2, 10 * kSec, stop_other)};
    }
    case HangShape::kKilledInFlight: {
      Proc launcher = CollectiveLauncher(40 * kSec + 300 * kMs, 0), r0 = CollectiveRank(0), r2 = CollectiveRank(2);
      launcher.end = End::kKilled;
      r1.read_in_flight = ReadInFlight{15 * kSec + 500 * kMs, kStallFile};
      r1.end = End::kKilled;
      r1.stop_ns = 15 * kSec + 500 * kMs;
      r0.collectives.push_back(Step6AllReduce(0));
      r2.collectives.push_back(Step6AllReduce(0));
      r0.end = r2.end = End::kKilled;
      r0.stop_ns = 40 * kSec;
      r2.stop_ns = 40 * kSec + 200 * kMs;
      return {launcher, r0, r1, r2};
    }
    case HangShape::kOomKilled:
      r1.read_in_flight = ReadInFlight{16 * kSec + 400 * kMs, kStallFile};
      r1.end = End::kKilled;
      r1.stop_ns = 16 * kSec + 500 * kMs;
      return {CollectiveLauncher(17 * kSec, 1), TimedOutRank(0, 600 * kMs, 16 * kSec + 800 * kMs), r1,
              TimedOutRank(2, 600 * kMs, 16 * kSec + 900 * kMs)};
    case HangShape::kMissingRank:
      return {CollectiveLauncher(28 * kSec, 1), TimedOutRank(0, 10 * kSec, stop0),
              TimedOutRank(1, 10 * kSec, stop_other)};
    case HangShape::kExitedEarly: {
      Proc r2 = CollectiveRank(2);
      r2.stop_ns = 15 * kSec + 500 * kMs;
      return {CollectiveLauncher(28 * kSec, 1), TimedOutRank(0, 10 * kSec, stop0),
              TimedOutRank(1, 10 * kSec, stop_other), r2};
    }
    case HangShape::kHealthy:
      break;
  }
  return JobCalling({{CollectiveCall{}}, {CollectiveCall{}}, {CollectiveCall{}}});
}

// tests/dist/test_torchrun_hang.py's metric job: rank 0 alone all-reduces a metric (1
// element at train.py:13) as #10, where ranks 1 and 2 run DDP's gradient all-reduce (9
// elements); all three then wait in #11 (16 s) until it raises 10 s later, and exit 1 on
// a RuntimeError at 26.2 s, 26.3 s and 26.4 s; the launcher exits 1 at 28 s.
inline std::vector<Proc> MetricJob() {
  std::vector<Proc> job{CollectiveLauncher(28 * kSec, 1)};
  for (int r = 0; r < 3; ++r) {
    Proc p = TimedOutRank(r, 10 * kSec, 26 * kSec + static_cast<uint64_t>(200 + 100 * r) * kMs);
    if (r == 0) {
      CollectiveCall& metric = p.collectives.front();
      metric.op = format::CollectiveOp::kAllReduce;
      metric.count = 1;
      metric.where = "train.py:13 in main";
    }
    job.push_back(p);
  }
  return job;
}

}  // namespace colabtrace::ranktest
