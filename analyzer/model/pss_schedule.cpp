#include "model/pss_schedule.h"

#include <algorithm>
#include <set>
#include <tuple>

namespace colabtrace::analyzer {
namespace {

// The most the bucket holds (its first fill too): after a quiet spell the reads catch up
// by at most this much CPU at once.
constexpr int64_t kBucketCapNs = 20'000'000;
// Under the verdict, a reading stands while the RSS beside it moved less than this much
// (or this share of it).
constexpr uint64_t kMovedBytes = 64ull << 20;
constexpr double kMovedShare = 0.05;

}  // namespace

uint64_t CarriedPss(uint64_t pss_then, uint64_t rss_now) {
  if (pss_then == UINT64_MAX) return rss_now;
  if (rss_now == UINT64_MAX) return pss_then;
  return std::min(pss_then, rss_now);
}

uint64_t PssSchedule::PredictedCostNs(pid_t pid, uint64_t rss) const {
  const double model =
      static_cast<double>(kBaseCostNs) + static_cast<double>(rss) / static_cast<double>(1ull << 30) * kCostNsPerGiB;
  const auto it = procs_.find(pid);
  if (it == procs_.end() || !it->second.read || it->second.rss_at_read == 0 || it->second.pss == UINT64_MAX) {
    return static_cast<uint64_t>(model);
  }
  // The walk is over the pages it maps: the measured cost, scaled by the RSS since. A
  // read slowed by a busy machine says little of the next: the model bounds it.
  const Process& p = it->second;
  const double scaled = static_cast<double>(p.cpu_ns) * static_cast<double>(rss) / static_cast<double>(p.rss_at_read);
  return static_cast<uint64_t>(std::clamp(scaled, model / kModelSlack, model * kModelSlack));
}

uint64_t PssSchedule::LockIntervalNs(pid_t pid) const {
  const auto it = procs_.find(pid);
  if (it == procs_.end() || !it->second.read) return 0;
  const double held = std::min(static_cast<double>(it->second.wall_ns), kModelSlack * static_cast<double>(it->second.cpu_ns));
  return std::min(kFloorNs, static_cast<uint64_t>(std::max(held, 1.0) / kLockShare));
}

uint64_t PssSchedule::EstimatedTreePss(const std::vector<Candidate>& round) const {
  uint64_t sum = 0;
  for (const Candidate& c : round) {
    const auto it = procs_.find(c.pid);
    sum += it == procs_.end() ? c.rss : CarriedPss(it->second.pss, c.rss);
  }
  return sum;
}

bool PssSchedule::Moved(const Process& p, uint64_t rss) {
  const uint64_t d = rss > p.rss_at_read ? rss - p.rss_at_read : p.rss_at_read - rss;
  return d >= kMovedBytes || static_cast<double>(d) >= kMovedShare * static_cast<double>(p.rss_at_read);
}

void PssSchedule::Refill(uint64_t now_ns) {
  if (refilled_ns_ != 0 && now_ns > refilled_ns_) {
    const double add = static_cast<double>(now_ns - refilled_ns_) * kCpuShare;
    bucket_ns_ = std::min<int64_t>(kBucketCapNs, bucket_ns_ + static_cast<int64_t>(add));
  }
  refilled_ns_ = std::max(refilled_ns_, now_ns);
}

std::vector<pid_t> PssSchedule::Choose(uint64_t now_ns, const std::vector<Candidate>& round, uint64_t limit) {
  std::vector<pid_t> out;
  if (fixed_ns_ != 0) {
    for (const Candidate& c : round) {
      const auto it = procs_.find(c.pid);
      // Due an eighth of the period early: rounds of the same period are never quite
      // that far apart, and each should read.
      const uint64_t age = it == procs_.end() ? 0 : now_ns - std::min(now_ns, it->second.last_ns);
      if (it == procs_.end() || !it->second.read || age + fixed_ns_ / 8 >= fixed_ns_) {
        out.push_back(c.pid);
      }
    }
    return out;
  }
  Refill(now_ns);
  uint64_t rss_sum = 0;
  for (const Candidate& c : round) rss_sum += c.rss;
  const bool verdict_needs_pss =
      limit != UINT64_MAX && static_cast<double>(rss_sum) >= kPressureShare * static_cast<double>(limit);
  // Classes, best first: 0 never read, 1 wanted by the verdict, 2 moved since its reading
  // (a growing worker needs readings over time to be named), 3 past the floor, 4 the
  // rest; within a class by how overdue each is against its own lock interval. 0 and 1
  // go whatever the bucket holds.
  std::vector<std::tuple<int, double, pid_t, uint64_t>> ready;
  for (const Candidate& c : round) {
    const auto it = procs_.find(c.pid);
    if (it == procs_.end() || !it->second.read) {
      ready.emplace_back(0, -static_cast<double>(c.rss), c.pid, c.rss);  // biggest first
      continue;
    }
    const Process& p = it->second;
    const uint64_t age = now_ns - std::min(now_ns, p.last_ns);
    const uint64_t lock = LockIntervalNs(c.pid);
    if (age < lock) continue;  // the lock budget is never spent, not even for the verdict
    // A process whose smaps could not be read (permissions) is tried again at the floor.
    if (p.pss == UINT64_MAX && age < kFloorNs) continue;
    const double overdue = static_cast<double>(age) / static_cast<double>(std::max<uint64_t>(lock, 1));
    const bool moved = Moved(p, c.rss);
    if (verdict_needs_pss && (moved || age >= kVerdictRefreshNs)) {
      ready.emplace_back(1, -overdue, c.pid, c.rss);
    } else if (moved) {
      ready.emplace_back(2, -overdue, c.pid, c.rss);  // growing: a worker to name
    } else {
      ready.emplace_back(age >= kFloorNs ? 3 : 4, -overdue, c.pid, c.rss);
    }
  }
  std::sort(ready.begin(), ready.end());
  // In that order, while the bucket holds anything (the last read may take it into
  // debt, which the next rounds repay). An empty bucket ends the round, and the most
  // overdue go first in the next.
  for (const auto& [cls, overdue, pid, rss] : ready) {
    const auto cost = static_cast<int64_t>(PredictedCostNs(pid, rss));
    if (cls > 1 && bucket_ns_ <= 0) break;
    bucket_ns_ -= cost;  // Record settles it with what the read really took
    procs_[pid].charged_ns = cost;
    out.push_back(pid);
  }
  return out;
}

void PssSchedule::Record(pid_t pid, uint64_t now_ns, uint64_t wall_ns, uint64_t cpu_ns, uint64_t rss,
                         uint64_t pss) {
  Process& p = procs_[pid];
  bucket_ns_ += p.charged_ns - static_cast<int64_t>(cpu_ns);
  p.charged_ns = 0;
  p.read = true;
  p.last_ns = now_ns;
  p.wall_ns = wall_ns;
  p.cpu_ns = cpu_ns;
  p.rss_at_read = rss;
  p.pss = pss;
  spent_ns_ += cpu_ns;
}

void PssSchedule::Retain(const std::vector<pid_t>& alive) {
  const std::set<pid_t> keep(alive.begin(), alive.end());
  std::erase_if(procs_, [&](const auto& kv) { return !keep.contains(kv.first); });
}

}  // namespace colabtrace::analyzer
