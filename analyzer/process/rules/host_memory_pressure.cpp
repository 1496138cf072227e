// host.memory-pressure (warning)
//
// Rule: the process tree's memory on one host, counted without double-counting shared
// pages, reached at least 90% of the cgroup limit (memory.max, when below MemTotal) or of
// MemTotal. The basis, best first:
// 1. PSS summed per round of `colabtrace run`'s samples (each process's latest PSS
//    carried forward: the sampler reads it as its cost allows);
// 2. with a cgroup limit, the cgroup's working set (memory.current less inactive page
//    cache), else memory.current capped at the processes' summed RSS;
// 3. the processes' own RSS samples summed over time, fork children that never exec'd
//    left out (their pages are mostly shared copy-on-write with the parent).
// A worker whose private memory (USS) keeps growing is named. The host's summary goes to
// "memory.hosts" whether or not the finding is raised.
#include <algorithm>
#include <map>

#include "model/pss_schedule.h"
#include "process/rules/rules.h"

namespace colabtrace::analyzer::rules {
namespace {

// A worker's private memory (USS) "keeps growing" when it rose by at least this much
// and in most of its samples.
constexpr uint64_t kGrowthBytes = 64ull << 20;
constexpr double kRisingShare = 0.7;
constexpr size_t kMinSamples = 5;
// USS is read as the sampler's cost budget allows (model/pss_schedule.h), not with every
// sample: a worker that grows for a second or two gets a few readings, its first at
// first sight.
constexpr size_t kMinUssReadings = 3;


// Workers (processes whose parent is sampled too) whose USS keeps growing.
// *names gets "pid (+growth), ..." for the summary.
Json GrowingWorkers(const std::map<uint32_t, std::vector<OutsideSample>>& samples,
                           std::string* names) {
  Json out = Json::MakeArray();
  for (const auto& [pid, v] : samples) {
    if (v.size() < kMinSamples || !samples.contains(v.back().ppid)) continue;
    std::vector<const OutsideSample*> known;
    for (const auto& s : v) {
      if (s.uss != UINT64_MAX) known.push_back(&s);
    }
    if (known.size() < kMinUssReadings) continue;
    const uint64_t first = known.front()->uss, last = known.back()->uss;
    if (last < first + kGrowthBytes) continue;
    size_t rising = 0;
    for (size_t k = 1; k < known.size(); ++k) rising += known[k]->uss >= known[k - 1]->uss;
    if (static_cast<double>(rising) < kRisingShare * static_cast<double>(known.size() - 1)) continue;
    const uint64_t span = known.back()->ts - known.front()->ts;
    Json w = Json::MakeObject();
    w["pid"] = pid;
    w["ppid"] = v.back().ppid;
    w["uss_first_bytes"] = first;
    w["uss_last_bytes"] = last;
    w["growth_bytes"] = last - first;
    *names += (names->empty() ? "" : ", ") + std::to_string(pid) + " (+" + FormatBytes(last - first) + ")";
    w["growth_bytes_per_s"] =
        span == 0 ? 0.0 : static_cast<double>(last - first) * 1e9 / static_cast<double>(span);
    out.Append(std::move(w));
  }
  return out;
}


}  // namespace

Json HostMemoryFigures(const RunModel& run, const HostMembers& h, std::optional<Finding>& pressure) {
  const std::string& host = h.host;
  const std::vector<const ProcessTrace*>& members = h.members;
  const LifecycleModel& model = run.lifecycle();
  const bool multi_host = h.multi_host;
  uint64_t cgroup_max = UINT64_MAX, mem_total = UINT64_MAX;
  for (const ProcessTrace* t : members) {
    const ProcessFacts& f = run.facts(*t);
    cgroup_max = std::min(cgroup_max, f.cgroup_max);
    mem_total = std::min(mem_total, f.mem_total);
  }
  const auto& cgroups = model.CgroupReadings(host);
  for (const CgroupReading& c : cgroups) cgroup_max = std::min(cgroup_max, c.max);
  const bool use_cgroup = cgroup_max != UINT64_MAX && cgroup_max < mem_total;
  const uint64_t limit = use_cgroup ? cgroup_max : mem_total;
  if (limit == UINT64_MAX || limit == 0) return Json();

  // 1. The tree's PSS, per round of colabtrace run's samples: shared pages counted once.
  //    The sampler reads a process's PSS as its cost budget allows (model/pss_schedule.h),
  //    not in every round, so each round sums each process's latest PSS (CarriedPss:
  //    capped at the RSS beside it); near the threshold the sampler reads every process
  //    as often as its lock budget allows, so those readings are recent where it matters.
  //    A process none of whose samples carries PSS yet (permissions, or too short-lived
  //    for the budget) counts its RSS: PSS is at most RSS, and a tree whose summed RSS
  //    stays below the threshold needs no PSS at all ("pss_needed": false).
  struct Round {
    uint64_t pss = 0, rss = 0;
    std::vector<std::pair<uint32_t, const OutsideSample*>> procs;
  };
  std::map<std::pair<uint32_t, uint64_t>, Round> rounds;  // (wrapper, ts)
  const auto& outside = model.OutsideSamples(host);
  for (const auto& [pid, v] : outside) {
    std::map<uint32_t, const OutsideSample*> last_pss;  // wrapper -> its latest sample with PSS
    for (const OutsideSample& s : v) {
      if (s.rss == UINT64_MAX && s.pss == UINT64_MAX) continue;
      if (s.pss != UINT64_MAX) last_pss[s.wrapper] = &s;
      const auto it = last_pss.find(s.wrapper);
      const uint64_t rss = s.rss != UINT64_MAX ? s.rss : s.pss;
      const uint64_t m = it == last_pss.end() ? rss : CarriedPss(it->second->pss, rss);
      Round& r = rounds[{s.wrapper, s.ts}];
      r.pss += m;
      r.rss += rss;
      r.procs.emplace_back(pid, &s);
    }
  }
  uint64_t peak = 0, peak_ts = 0, rss_sum_peak = 0;
  const Round* peak_round = nullptr;
  for (const auto& [key, r] : rounds) {
    if (r.pss > peak) peak = r.pss, peak_ts = key.second, peak_round = &r;
    rss_sum_peak = std::max(rss_sum_peak, r.rss);
  }
  std::string basis = "pss";
  // The processes' own RSS samples summed over time (each process counted from its
  // samples until its last event): the peak, when, and each process's RSS then. With
  // fork_children false, fork children that never exec'd are left out (their RSS is
  // mostly pages shared copy-on-write with the parent; counting them is how a healthy
  // DataLoader reads as 120%); with true, the sum is an upper bound of the tree's
  // mapped memory.
  struct RssPeak {
    uint64_t bytes = 0, ts = 0;
    std::vector<uint64_t> at_peak;  // per member
  };
  auto rss_peak = [&](bool fork_children) {
    struct Point {
      uint64_t ts;
      size_t proc;
      uint64_t rss;
    };
    std::vector<Point> points;
    for (size_t i = 0; i < members.size(); ++i) {
      const ProcessTrace& t = *members[i];
      if (IsRunWrapper(t)) continue;
      if (!fork_children) {
        const ProcessFacts& f = run.facts(t);
        const bool forked = f.start && f.start->origin == static_cast<uint64_t>(format::ProcessOrigin::kForkChild);
        if (forked && f.job == f.start) continue;
      }
      for (const auto& s : t.records.Sample) points.push_back({s.ts, i, s.rss_bytes});
      points.push_back({t.end_ns() + 1, i, 0});  // gone after its last event
    }
    std::stable_sort(points.begin(), points.end(),
                     [](const Point& a, const Point& b) { return a.ts < b.ts; });
    RssPeak r;
    std::vector<uint64_t> current(members.size(), 0);
    uint64_t sum = 0;
    for (const Point& pt : points) {
      sum = sum - current[pt.proc] + pt.rss;
      current[pt.proc] = pt.rss;
      if (sum > r.bytes) r.bytes = sum, r.ts = pt.ts, r.at_peak = current;
    }
    return r;
  };
  // 2. With a cgroup limit, the cgroup's charge is what the OOM killer compares, less
  //    the inactive page cache (a tree streaming a dataset fills its cgroup with cache
  //    the kernel drops on demand): colabtrace run reads memory.stat with every cgroup
  //    sample, the shim with its periodic samples. Where no reading has it (processes
  //    that lived less than one sampling period), memory.current is capped at the
  //    tree's summed RSS: memory.current alone counts the page cache, and the cache
  //    another job left in the cgroup, as the tree's memory.
  if (use_cgroup) {
    // The shim's samples as cgroup readings. A periodic sample's inactive_file may be a
    // real 0 (no inactive cache): its working set is memory.current then.
    std::vector<CgroupReading> shim;
    for (const ProcessTrace* t : members) {
      for (const auto& s : t->records.Sample) {
        CgroupReading c;
        c.ts = s.ts;
        c.current = s.cgroup_current;
        c.inactive_file = s.cgroup_inactive_file;
        shim.push_back(c);
      }
    }
    auto recorded = [](const CgroupReading& c) { return c.records_working_set(); };
    const bool have_working_set = std::any_of(cgroups.begin(), cgroups.end(), recorded) ||
                                  std::any_of(shim.begin(), shim.end(), recorded);
    uint64_t cur_peak = 0, cur_ts = 0;
    auto consider = [&](uint64_t v, uint64_t ts) {
      if (v != UINT64_MAX && v > cur_peak) cur_peak = v, cur_ts = ts;
    };
    for (const CgroupReading& c : cgroups) consider(c.working_set(), c.ts);
    for (const CgroupReading& c : shim) {
      // With working sets recorded, the start, fork, exec and exit samples (no memory.stat
      // reading) are left out; without any, memory.current is all there is.
      if (!have_working_set) {
        consider(c.current, c.ts);
      } else if (c.inactive_file != UINT64_MAX) {
        consider(c.working_set(), c.ts);
      }
    }
    if (cur_peak > 0) {
      peak = cur_peak, peak_ts = cur_ts, peak_round = nullptr;
      basis = have_working_set ? "cgroup working set" : "cgroup memory.current";
      if (!have_working_set && rounds.empty()) {
        const RssPeak cap = rss_peak(/*fork_children=*/true);
        if (cap.bytes < peak) {
          peak = cap.bytes, peak_ts = cap.ts;
          basis = "cgroup memory.current, capped at the processes' rss";
        }
      }
    }
  }
  // 3. Without outside samples or a cgroup: the processes' own RSS samples, fork
  //    children that never exec'd left out.
  std::vector<std::pair<uint32_t, uint64_t>> rss_at_peak;
  if (rounds.empty() && basis == "pss") {
    basis = "rss, fork children excluded";
    const RssPeak r = rss_peak(/*fork_children=*/false);
    if (r.bytes > peak) peak = r.bytes, peak_ts = r.ts;
    for (size_t i = 0; i < r.at_peak.size(); ++i) {
      if (r.at_peak[i] != 0) rss_at_peak.emplace_back(members[i]->pid(), r.at_peak[i]);
    }
  }
  const double percent = 100.0 * static_cast<double>(peak) / static_cast<double>(limit);
  Json summary = Json::MakeObject();
  summary["host"] = HostName(host);
  summary["basis"] = basis;
  summary["peak_bytes"] = peak;
  summary["limit_bytes"] = limit;
  summary["limit_source"] = use_cgroup ? "cgroup memory.max" : "MemTotal";
  summary["percent_of_limit"] = percent;
  if (peak_round != nullptr) {
    // What a sum of RSS would have said at the same moment (shared pages counted once
    // per process): the figure never to judge by.
    summary["rss_sum_at_peak_bytes"] = peak_round->rss;
    summary["processes_at_peak"] = static_cast<uint64_t>(peak_round->procs.size());
  }
  if (!rounds.empty()) {
    // The highest RSS sum of any round, and whether it ever reached the threshold: below
    // it the PSS sum (at most the RSS sum) cannot, and the verdict needed no PSS.
    summary["rss_sum_peak_bytes"] = rss_sum_peak;
    summary["pss_needed"] =
        static_cast<double>(rss_sum_peak) >= PssSchedule::kPressureShare * static_cast<double>(limit);
  }
  if (peak == 0 || percent < 100.0 * PssSchedule::kPressureShare) return summary;
  Finding finding = Finding::Of(FindingId::kHostMemoryPressure, 0);
  finding.evidence = summary;  // the figures, then what the finding adds
  Json& ev = finding.evidence;
  uint64_t first = UINT64_MAX;
  for (const ProcessTrace* t : members) first = std::min(first, t->start_ns());
  ev["at_ns_after_start"] = peak_ts >= first ? peak_ts - first : 0;
  Json procs = Json::MakeArray();
  if (peak_round != nullptr) {
    for (const auto& [pid, s] : peak_round->procs) {
      Json p = Json::MakeObject();
      p["pid"] = pid;
      p["pss_bytes"] = s->pss == UINT64_MAX ? Json() : Json(s->pss);
      p["rss_bytes"] = s->rss == UINT64_MAX ? Json() : Json(s->rss);
      p["uss_bytes"] = s->uss == UINT64_MAX ? Json() : Json(s->uss);
      procs.Append(std::move(p));
    }
  }
  for (const auto& [pid, rss] : rss_at_peak) {
    Json p = Json::MakeObject();
    p["pid"] = pid;
    p["rss_bytes"] = rss;
    procs.Append(std::move(p));
  }
  ev["processes"] = std::move(procs);
  std::string names;
  Json growing = GrowingWorkers(outside, &names);
  // Samples are untrusted: the ratio can exceed any int, and an out-of-range
  // double-to-int conversion is undefined.
  const std::string pct =
      std::to_string(percent < 1e15 ? static_cast<long long>(percent) : 999999999999999ll);
  const std::string what = basis == "pss" ? "the process tree's memory (PSS, shared pages counted once)"
                           : basis == "cgroup memory.current" ? "the cgroup's memory.current"
                           : basis == "cgroup working set"
                               ? "the cgroup's working set (memory.current less inactive page cache)"
                           : basis == "cgroup memory.current, capped at the processes' rss"
                               ? "the process tree's RSS, fork children included (the cgroup's memory.current "
                                 "was higher, page cache among it)"
                                                              : "the process tree's RSS (fork children left out)";
  finding.summary = what + " reached " + FormatBytes(peak) + ", " + pct + "% of the " +
                    (use_cgroup ? "cgroup limit " : "host's MemTotal ") + FormatBytes(limit);
  if (multi_host) finding.summary += " on " + EscapeForTerminal(HostName(host));
  if (!growing.array().empty()) {
    finding.summary += "; private memory keeps growing in worker" +
                       std::string(growing.array().size() == 1 ? " " : "s ") + names;
    finding.advice =
        "A worker's private memory (USS) keeps growing: it is touching, and so copying, "
        "the parent's pages (Python objects' reference counts defeat fork's copy-on-write). "
        "Keep the dataset in numpy arrays or tensors rather than lists and dicts of Python "
        "objects, or read samples lazily from disk; fewer workers limit the damage.";
  }  // else the catalogue's advice
  ev["growing_workers"] = std::move(growing);
  pressure = std::move(finding);
  return summary;
}

HostMemory HostMemory::Build(const RunModel& run) {
  HostMemory out;
  const Hosts& hosts = run.Get<Hosts>();
  for (const auto& [host, members] : hosts.by_host) {
    Host h;
    h.figures = HostMemoryFigures(run, hosts.Members(host), h.pressure);
    out.hosts.push_back(std::move(h));
  }
  return out;
}

namespace {

void HostMemoryPressureRule(RuleContext& ctx) {
  for (const HostMemory::Host& h : ctx.run().Get<HostMemory>().hosts) {
    if (h.pressure) ctx.Add(*h.pressure);
  }
}

const RuleRegistration kHostMemoryPressureRuleRegistration(HostMemoryPressureRule,
    {FindingId::kHostMemoryPressure});

}  // namespace

}  // namespace colabtrace::analyzer::rules
