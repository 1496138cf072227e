// dist.straggler (warning)
//
// Rule: one or a few ranks make every step slow; the others wait for them in their
// collectives. For each rank that stepped at least kMinSteps times after warm-up: its
// median step time (perf::StepModels) and its median time per step inside collectives
// (the Python start-up hook's Collective records that returned, on any thread,
// intersected with each step). A rank that waits for another spends longer in the same
// collective than the rank it waits for, which arrives last and leaves at once: so each
// rank's *excess* is its median collective time less the least of any rank's. The
// stragglers are the ranks with almost no excess (below kStragglerShare of their step)
// while at least half the ranks wait (an excess of at least kWaitShare of their step and
// kMinWaitNs), and there are at most a quarter of them (at least one). A healthy job's
// ranks all arrive together: no one's excess is large.
//
// Evidence: {rank (the lowest straggler), ranks, pid, host, job, steps_analysed, step_ns
// (its median step), split: {input_wait_ns, gpu_sync_ns, io_ns, other_ns,
// collective_ns} (its medians per step), io: [{mount, fs_type, slow, io_ns}] (its step
// loop's file time per step by mount, most first), waiting: {ranks, wait_ns (their
// median excess per step), wait_fraction (of their median step), collective, where}}.
#include <algorithm>
#include <cstdio>
#include <map>

#include "core/format.h"
#include "dist/rules/rules.h"
#include "perf/hang_model.h"
#include "perf/step_model.h"

namespace colabtrace::analyzer::dist {
namespace {

constexpr size_t kMinSteps = 5;           // steps after warm-up, every rank
constexpr double kStragglerShare = 0.10;  // a straggler's excess, at most, of its step
constexpr double kWaitShare = 0.25;       // a waiting rank's excess, at least, of its step
constexpr uint64_t kMinWaitNs = 20'000'000;

template <class T>
T Median(std::vector<T> v) {
  if (v.empty()) return T{};
  std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

struct RankFigures {
  size_t rank_index = 0;
  const perf::ProcessSteps* steps = nullptr;
  uint64_t step_ns = 0, collective_ns = 0, excess_ns = 0;
  std::string op, where;  // its most frequent collective
};

// The median time per step (after warm-up) that trace t spent in collectives that returned.
RankFigures Figures(const ProcessTrace& t, const perf::ProcessSteps& s) {
  RankFigures f;
  f.steps = &s;
  f.step_ns = s.median_ns;
  std::vector<uint64_t> per_step;
  std::map<std::pair<uint64_t, uint64_t>, size_t> sites;
  for (size_t i = 1; i < s.steps.size(); ++i) {
    const perf::StepTime& st = s.steps[i];
    uint64_t in = 0;
    for (const auto& c : t.records.Collective) {
      if (c.status != static_cast<uint64_t>(format::CollectiveStatus::kReturned)) continue;
      const uint64_t b = std::max<uint64_t>(c.ts, st.start_ns), e = std::min<uint64_t>(c.ts + c.dur, st.end_ns);
      if (e <= b) continue;
      in += e - b;
      ++sites[{c.op, c.where}];
    }
    per_step.push_back(in);
  }
  f.collective_ns = Median(per_step);
  size_t best = 0;
  for (const auto& [site, n] : sites) {
    if (n <= best) continue;
    best = n;
    const char* op = format::CollectiveOpName(site.first);
    f.op = op != nullptr ? op : "collective";
    f.where = site.second != 0 ? std::string(t.Str(site.second)) : "";
  }
  return f;
}

// Rank trace t's step-loop file time per step (after warm-up), by mount.
Json IoByMount(const RunModel& run, const ProcessTrace& t, const perf::ProcessSteps& s) {
  const size_t n = s.steps.size() > 1 ? s.steps.size() - 1 : 0;
  const uint64_t from = n > 0 ? s.steps[1].start_ns : 0, to = n > 0 ? s.steps.back().end_ns : 0;
  std::map<int64_t, std::string> fd_path;
  std::map<std::string, std::pair<perf::MountFacts, uint64_t>> by_mount;
  const auto add = [&](std::string_view path, uint64_t ts, uint64_t dur) {
    if (ts < from || ts >= to) return;
    perf::MountFacts m = perf::MountOf(run, t, path);
    auto& slot = by_mount[m.mountpoint];
    slot.first = std::move(m);
    slot.second += dur;
  };
  size_t r = 0;
  for (const auto& o : t.records.IoOpen) {
    // Reads before this open use the paths known so far.
    for (; r < t.records.IoRead.size() && t.records.IoRead[r].ts < o.ts; ++r) {
      const auto& rd = t.records.IoRead[r];
      if (rd.tid != s.tid) continue;
      if (auto p = fd_path.find(rd.fd); p != fd_path.end()) add(p->second, rd.ts, rd.dur);
    }
    if (o.tid != s.tid) continue;
    const std::string path(t.Str(o.path));
    if (o.fd >= 0) fd_path[o.fd] = path;
    add(path, o.ts, o.dur);
  }
  for (; r < t.records.IoRead.size(); ++r) {
    const auto& rd = t.records.IoRead[r];
    if (rd.tid != s.tid) continue;
    if (auto p = fd_path.find(rd.fd); p != fd_path.end()) add(p->second, rd.ts, rd.dur);
  }
  std::vector<std::pair<uint64_t, const std::pair<perf::MountFacts, uint64_t>*>> order;
  for (const auto& [mount, slot] : by_mount) order.emplace_back(slot.second, &slot);
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  Json out = Json::MakeArray();
  for (const auto& [ns, slot] : order) {
    Json one = Json::MakeObject();
    one["mount"] = slot->first.mountpoint.empty() ? Json() : Json(slot->first.mountpoint);
    one["fs_type"] = slot->first.fstype.empty() ? Json() : Json(slot->first.fstype);
    one["slow"] = slot->first.slow;
    one["io_ns"] = n > 0 ? ns / n : 0;
    out.Append(std::move(one));
  }
  return out;
}

std::string Ms(uint64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.0f ms", static_cast<double>(ns) / 1e6);
  return buf;
}

void StragglerRule(RuleContext& ctx) {
  const RunModel& run = ctx.run();
  const JobModel& jobs = run.Get<JobModel>();
  const perf::StepModels& steps = run.Get<perf::StepModels>();
  for (const Job& job : jobs.jobs) {
    if (job.ranks.size() < 2) continue;
    std::vector<RankFigures> figures;
    for (size_t i = 0; i < job.ranks.size(); ++i) {
      const perf::ProcessSteps* s = steps.Of(job.ranks[i].trace);
      if (s == nullptr || s->steps.size() < kMinSteps + 1 || s->median_ns == 0) break;
      RankFigures f = Figures(run.traces()[job.ranks[i].trace], *s);
      f.rank_index = i;
      figures.push_back(std::move(f));
    }
    if (figures.size() != job.ranks.size()) continue;  // a rank that did not step enough
    uint64_t least = UINT64_MAX;
    for (const RankFigures& f : figures) least = std::min(least, f.collective_ns);
    std::vector<const RankFigures*> low, high;
    for (RankFigures& f : figures) {
      f.excess_ns = f.collective_ns - least;
      const double share = static_cast<double>(f.excess_ns) / static_cast<double>(f.step_ns);
      if (share < kStragglerShare) low.push_back(&f);
      if (share >= kWaitShare && f.excess_ns >= kMinWaitNs) high.push_back(&f);
    }
    const size_t most = std::max<size_t>(1, figures.size() / 4);
    if (low.empty() || low.size() > most || high.size() * 2 < figures.size()) continue;

    const JobRank& c = job.ranks[low.front()->rank_index];
    const perf::ProcessSteps& cs = *low.front()->steps;
    Finding f = Finding::Of(FindingId::kDistStraggler, c.pid);
    Json& ev = f.evidence;
    std::vector<int64_t> ranks, waiting;
    for (const RankFigures* l : low) ranks.push_back(job.ranks[l->rank_index].rank);
    for (const RankFigures* h : high) waiting.push_back(job.ranks[h->rank_index].rank);
    ev["rank"] = c.rank;
    Json rank_list = Json::MakeArray();
    for (int64_t r : ranks) rank_list.Append(r);
    ev["ranks"] = std::move(rank_list);
    ev["pid"] = c.pid;
    ev["host"] = c.host;
    ev["job"] = job.job;
    ev["steps_analysed"] = static_cast<uint64_t>(cs.steps.size() - 1);
    ev["step_ns"] = cs.median_ns;
    std::vector<uint64_t> wait, gpu, io, other;
    for (size_t i = 1; i < cs.steps.size(); ++i) {
      wait.push_back(cs.steps[i].input_wait_ns);
      gpu.push_back(cs.steps[i].gpu_sync_ns);
      io.push_back(cs.steps[i].io_ns);
      other.push_back(cs.steps[i].other_ns);
    }
    Json split = Json::MakeObject();
    split["input_wait_ns"] = Median(wait);
    split["gpu_sync_ns"] = Median(gpu);
    split["io_ns"] = Median(io);
    split["other_ns"] = Median(other);
    split["collective_ns"] = low.front()->collective_ns;
    ev["split"] = std::move(split);
    Json io_json = IoByMount(run, run.traces()[c.trace], cs);
    ev["io"] = io_json;
    std::vector<uint64_t> excess;
    std::vector<double> shares;
    for (const RankFigures* h : high) {
      excess.push_back(h->excess_ns);
      shares.push_back(static_cast<double>(h->excess_ns) / static_cast<double>(h->step_ns));
    }
    Json w = Json::MakeObject();
    Json wr = Json::MakeArray();
    for (int64_t r : waiting) wr.Append(r);
    w["ranks"] = std::move(wr);
    w["wait_ns"] = Median(excess);
    w["wait_fraction"] = Median(shares);
    w["collective"] = high.front()->op;
    w["where"] = high.front()->where.empty() ? Json() : Json(high.front()->where);
    ev["waiting"] = std::move(w);

    // What its step went to, in words: the largest part.
    const uint64_t parts[] = {Median(wait), Median(gpu), Median(io), Median(other)};
    static constexpr const char* kParts[] = {"waiting for its next batch", "in GPU synchronisation", "in file I/O",
                                             "computing (CPU and Python)"};
    const size_t top = static_cast<size_t>(std::max_element(std::begin(parts), std::end(parts)) - std::begin(parts));
    std::string what = Ms(parts[top]) + " of them " + kParts[top];
    if (top == 2 && io_json.is_array() && !io_json.array().empty() && io_json.array()[0]["mount"].is_string()) {
      const Json& m = io_json.array()[0];
      what += " on " + m["mount"].str() + (m["fs_type"].is_string() ? " (" + m["fs_type"].str() + ")" : "");
    }
    char share[16];
    std::snprintf(share, sizeof(share), "%.0f%%", Median(shares) * 100.0);
    const std::string coll = high.front()->op == "ddp_all_reduce" ? "DDP's gradient all-reduce" : high.front()->op;
    f.summary = RankList(ranks) + " (host " + c.host + ", pid " + std::to_string(c.pid) + ") " +
                (ranks.size() == 1 ? "makes" : "make") + " every step slow: its steps take " + Ms(cs.median_ns) +
                ", " + what + "; " + RankList(waiting) + " spend " + share + " of each step (" +
                Ms(Median(excess)) + ") waiting for it in " + coll +
                (high.front()->where.empty() ? "" : " at " + high.front()->where);
    ctx.Add(std::move(f));
  }
}

const RuleRegistration kStragglerRuleRegistration(StragglerRule, {FindingId::kDistStraggler});

}  // namespace
}  // namespace colabtrace::analyzer::dist
