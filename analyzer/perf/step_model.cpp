// StepModels::Build: step boundaries per process, the split of each step's time, and the
// workers behind the stepping processes (step_model.h).
#include "perf/step_model.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <utility>

#include "io/file_stats.h"
#include "io/filesystems.h"
#include "trace/parallel_for.h"

namespace colabtrace::analyzer::perf {
namespace {

// Sorts v, which is mostly a few time-ordered runs one after another (a table per record
// type, each in time order; a set's intervals and another's): merges neighbouring runs, so
// a sorted v costs one pass and r runs n log r. std::sort took n log n whatever the order,
// most of a 1,024-rank report's time (issue 38). Many runs (no such order): std::sort.
void SortRuns(std::vector<std::pair<uint64_t, uint64_t>>& v) {
  std::vector<size_t> bounds{0};
  for (size_t i = 1; i < v.size(); ++i) {
    if (v[i] < v[i - 1]) bounds.push_back(i);
  }
  if (bounds.size() > 64) {
    std::sort(v.begin(), v.end());
    return;
  }
  bounds.push_back(v.size());
  while (bounds.size() > 2) {  // bounds: the runs' starts, then v's end
    std::vector<size_t> merged{0};
    for (size_t k = 2; k < bounds.size(); k += 2) {
      std::inplace_merge(v.begin() + static_cast<std::ptrdiff_t>(bounds[k - 2]),
                         v.begin() + static_cast<std::ptrdiff_t>(bounds[k - 1]),
                         v.begin() + static_cast<std::ptrdiff_t>(bounds[k]));
      merged.push_back(bounds[k]);
    }
    if (bounds.size() % 2 == 0) merged.push_back(bounds.back());  // an odd run out
    bounds = std::move(merged);
  }
}

// A union of time intervals, sorted and disjoint once built, with prefix sums so that the
// time it covers inside any window is two binary searches.
class IntervalSet {
 public:
  void Add(uint64_t a, uint64_t b) {
    if (b > a) raw_.emplace_back(a, b);
  }
  // Sorts and merges what was added; call once, before the queries.
  void Build() {
    SortRuns(raw_);
    size_t n = 0;  // raw_[0, n): merged, disjoint
    for (const auto& [a, b] : raw_) {
      if (n > 0 && a <= raw_[n - 1].second) {
        raw_[n - 1].second = std::max(raw_[n - 1].second, b);
      } else {
        raw_[n++] = {a, b};
      }
    }
    raw_.resize(n);
    iv_ = std::move(raw_);
    raw_ = {};
    prefix_.assign(iv_.size() + 1, 0);
    for (size_t i = 0; i < iv_.size(); ++i) prefix_[i + 1] = prefix_[i] + (iv_[i].second - iv_[i].first);
  }
  // The parts of this set outside `o` (both built).
  IntervalSet Minus(const IntervalSet& o) const {
    IntervalSet out;
    out.raw_.reserve(iv_.size() + o.iv_.size());
    size_t j = 0;
    for (auto [a, b] : iv_) {
      while (j < o.iv_.size() && o.iv_[j].second <= a) ++j;
      size_t k = j;
      uint64_t at = a;
      while (k < o.iv_.size() && o.iv_[k].first < b) {
        if (o.iv_[k].first > at) out.raw_.emplace_back(at, o.iv_[k].first);
        at = std::max(at, o.iv_[k].second);
        ++k;
      }
      if (at < b) out.raw_.emplace_back(at, b);
    }
    out.Build();
    return out;
  }
  IntervalSet Union(const IntervalSet& o) const {
    IntervalSet out;
    out.raw_.reserve(iv_.size() + o.iv_.size());
    out.raw_.insert(out.raw_.end(), iv_.begin(), iv_.end());
    out.raw_.insert(out.raw_.end(), o.iv_.begin(), o.iv_.end());
    out.Build();
    return out;
  }
  // The time the set covers inside [a, b).
  uint64_t MeasureIn(uint64_t a, uint64_t b) const { return b > a ? CoveredBefore(b) - CoveredBefore(a) : 0; }

 private:
  uint64_t CoveredBefore(uint64_t x) const {
    // k: the intervals that start before x; all but the last of them end before it.
    const auto it = std::lower_bound(iv_.begin(), iv_.end(), x,
                                     [](const std::pair<uint64_t, uint64_t>& iv, uint64_t v) { return iv.first < v; });
    const size_t k = static_cast<size_t>(it - iv_.begin());
    if (k == 0) return 0;
    const auto& last = iv_[k - 1];
    return prefix_[k - 1] + (std::min(x, last.second) - last.first);
  }
  std::vector<std::pair<uint64_t, uint64_t>> raw_, iv_;
  std::vector<uint64_t> prefix_;
};

// Calls every file-call record of t (every I/O record with a duration) as fn(event).
template <class Fn>
void ForEachFileCall(const ProcessTrace& t, Fn&& fn) {
  for (const auto& e : t.records.IoOpen) fn(e.ts, e.dur, e.tid);
  for (const auto& e : t.records.IoRead) fn(e.ts, e.dur, e.tid);
  for (const auto& e : t.records.IoReadAt) fn(e.ts, e.dur, e.tid);
  for (const auto& e : t.records.IoWrite) fn(e.ts, e.dur, e.tid);
  for (const auto& e : t.records.IoStat) fn(e.ts, e.dur, e.tid);
  for (const auto& e : t.records.IoDir) fn(e.ts, e.dur, e.tid);
  for (const auto& e : t.records.IoCopy) fn(e.ts, e.dur, e.tid);
  for (const auto& e : t.records.IoFsync) fn(e.ts, e.dur, e.tid);
}

// The thread that wrote most of these events (the lowest tid on a tie).
template <class Table>
uint32_t BusiestThread(const Table& table) {
  std::map<uint32_t, size_t> per;
  for (const auto& e : table) ++per[e.tid];
  uint32_t best = 0;
  size_t most = 0;
  for (const auto& [tid, n] : per) {
    if (n > most) best = tid, most = n;
  }
  return best;
}

// The boundaries of a process's steps from its best source, on one thread; empty when
// it does not step.
struct Boundaries {
  StepSourceKind source = StepSourceKind::kMarker;
  uint32_t tid = 0;
  std::vector<uint64_t> ts;
};

Boundaries FindBoundaries(const ProcessTrace& t) {
  Boundaries b;
  for (auto source : {format::StepSource::kMarker, format::StepSource::kOptimizer}) {
    std::map<uint32_t, size_t> per;
    for (const auto& s : t.records.Step) {
      if (s.source == static_cast<uint64_t>(source)) ++per[s.tid];
    }
    if (per.empty()) continue;
    b.source = source == format::StepSource::kMarker ? StepSourceKind::kMarker : StepSourceKind::kOptimizer;
    b.tid = std::max_element(per.begin(), per.end(), [](const auto& x, const auto& y) { return x.second < y.second; })->first;
    for (const auto& s : t.records.Step) {
      if (s.source == static_cast<uint64_t>(source) && s.tid == b.tid) b.ts.push_back(s.ts);
    }
    return b;
  }
  if (t.records.BatchWait.empty()) return b;
  b.source = StepSourceKind::kDataLoader;
  b.tid = BusiestThread(t.records.BatchWait);
  for (const auto& w : t.records.BatchWait) {
    if (w.tid == b.tid) b.ts.push_back(w.ts);
  }
  return b;
}

// How the stepping thread's time splits: its batch waits, its GPU syncs outside them, its
// file calls outside both.
struct ThreadTime {
  IntervalSet wait, sync, io;
  IntervalSet wait_io;  // file calls inside batch waits
  std::vector<uint64_t> call_ts;       // the thread's file calls, by start
  std::vector<uint64_t> call_ns_upto;  // [i]: the time of calls [0, i)
};

ThreadTime ThreadTimeOf(const ProcessTrace& t, uint32_t tid) {
  IntervalSet wait, sync, io;
  for (const auto& w : t.records.BatchWait) {
    if (w.tid == tid) wait.Add(w.ts, w.ts + w.dur);
  }
  for (const auto& g : t.records.GpuSync) {
    if (g.tid == tid) sync.Add(g.ts, g.ts + g.dur);
  }
  std::vector<std::pair<uint64_t, uint64_t>> calls;
  ForEachFileCall(t, [&](uint64_t ts, uint64_t dur, uint32_t th) {
    if (th != tid) return;
    io.Add(ts, ts + dur);
    calls.emplace_back(ts, dur);
  });
  wait.Build();
  sync.Build();
  io.Build();
  ThreadTime out;
  SortRuns(calls);
  out.call_ns_upto.push_back(0);
  for (const auto& [ts, dur] : calls) {
    out.call_ts.push_back(ts);
    out.call_ns_upto.push_back(out.call_ns_upto.back() + dur);
  }
  out.wait_io = io.Minus(io.Minus(wait));
  out.sync = sync.Minus(wait);
  out.io = io.Minus(wait.Union(sync));
  out.wait = std::move(wait);
  return out;
}

StepTime Split(const ThreadTime& tt, uint64_t start, uint64_t end) {
  StepTime s;
  s.start_ns = start;
  s.end_ns = end;
  s.input_wait_ns = tt.wait.MeasureIn(start, end);
  s.gpu_sync_ns = tt.sync.MeasureIn(start, end);
  s.io_ns = tt.io.MeasureIn(start, end);
  s.wait_io_ns = tt.wait_io.MeasureIn(start, end);
  const size_t first = static_cast<size_t>(std::lower_bound(tt.call_ts.begin(), tt.call_ts.end(), start) - tt.call_ts.begin());
  const size_t last = static_cast<size_t>(std::lower_bound(tt.call_ts.begin(), tt.call_ts.end(), end) - tt.call_ts.begin());
  s.io_calls = last - first;
  s.io_call_ns = tt.call_ns_upto[last] - tt.call_ns_upto[first];
  const uint64_t parts = s.input_wait_ns + s.gpu_sync_ns + s.io_ns;
  s.other_ns = s.duration_ns() > parts ? s.duration_ns() - parts : 0;
  return s;
}

// The Python line named by most of the thread's batch waits.
std::string WaitSite(const ProcessTrace& t, uint32_t tid) {
  std::map<uint64_t, size_t> per;
  for (const auto& w : t.records.BatchWait) {
    if (w.tid == tid && w.where != 0) ++per[w.where];
  }
  if (per.empty()) return "";
  const auto best = std::max_element(per.begin(), per.end(), [](const auto& x, const auto& y) { return x.second < y.second; });
  return std::string(t.Str(best->first));
}

// The series of the best source (marker, optimizer, batch waits) of the latest image that
// has one; null for none.
const StepSeries* BestSeries(const ProcessTrace& t) {
  for (uint32_t source : {static_cast<uint32_t>(format::StepSource::kMarker),
                          static_cast<uint32_t>(format::StepSource::kOptimizer), format::kStepAggBatchWaits}) {
    const StepSeries* best = nullptr;
    for (const StepSeries& s : t.step_aggregates.series) {
      if (s.source == source && (best == nullptr || s.image >= best->image)) best = &s;
    }
    if (best != nullptr) return best;
  }
  return nullptr;
}

StepSourceKind KindOf(uint32_t source) {
  return source == static_cast<uint32_t>(format::StepSource::kMarker)      ? StepSourceKind::kMarker
         : source == static_cast<uint32_t>(format::StepSource::kOptimizer) ? StepSourceKind::kOptimizer
                                                                           : StepSourceKind::kDataLoader;
}

// The boundaries of a series' source and thread in the window (b's when they match).
Boundaries WindowBoundaries(const ProcessTrace& t, const StepSeries& s) {
  Boundaries b;
  b.source = KindOf(s.source);
  b.tid = s.tid;
  if (s.source == format::kStepAggBatchWaits) {
    for (const auto& w : t.records.BatchWait) {
      if (w.tid == s.tid) b.ts.push_back(w.ts);
    }
  } else {
    for (const auto& r : t.records.Step) {
      if (r.source == s.source && r.tid == s.tid) b.ts.push_back(r.ts);
    }
  }
  return b;
}

}  // namespace

uint64_t HistPercentile(const std::vector<StepSeries::Bin>& bins, bool skip_one, uint32_t skip, double p) {
  uint64_t n = 0;
  for (const auto& b : bins) n += b.count;
  if (skip_one && n > 0) --n;
  if (n == 0) return 0;
  uint64_t rank = static_cast<uint64_t>(p * static_cast<double>(n) + 0.999999);
  rank = std::clamp<uint64_t>(rank, 1, n);
  uint64_t seen = 0;
  bool skipped = !skip_one;
  for (const auto& b : bins) {
    uint64_t c = b.count;
    if (!skipped && b.bucket == skip && c > 0) {
      --c;
      skipped = true;
    }
    seen += c;
    if (seen >= rank) return b.bucket == 0 ? 0 : b.low_ns + (b.high_ns - b.low_ns) / 2;
  }
  const auto& last = bins.back();
  return last.bucket == 0 ? 0 : last.low_ns + (last.high_ns - last.low_ns) / 2;
}

namespace {

StepTime TimeOf(const StepSeries::Span& s) {
  StepTime out;
  out.start_ns = s.start_ns;
  out.end_ns = s.end_ns;
  out.input_wait_ns = s.sums[format::kStepInputWait];
  out.gpu_sync_ns = s.sums[format::kStepGpuSync];
  out.io_ns = s.sums[format::kStepIo];
  out.other_ns = s.sums[format::kStepOther];
  out.wait_io_ns = s.sums[format::kStepWaitIo];
  out.io_calls = s.sums[format::kStepIoCalls];
  out.io_call_ns = s.sums[format::kStepIoCallTicks];
  return out;
}

// a - b, part by part (never below 0: the sums are the shim's).
StepTime Less(StepTime a, const StepTime& b) {
  auto sub = [](uint64_t& x, uint64_t y) { x = x > y ? x - y : 0; };
  sub(a.input_wait_ns, b.input_wait_ns);
  sub(a.gpu_sync_ns, b.gpu_sync_ns);
  sub(a.io_ns, b.io_ns);
  sub(a.other_ns, b.other_ns);
  sub(a.wait_io_ns, b.wait_io_ns);
  sub(a.io_calls, b.io_calls);
  sub(a.io_call_ns, b.io_call_ns);
  return a;
}

// The whole run's figures from the series s (ProcessSteps, "from_aggregates"): p's count,
// after_warmup, medians, periods. p.steps stays what the window holds.
void SumFromAggregates(const ProcessTrace& t, const StepSeries& s, const Boundaries& window, ProcessSteps& p) {
  p.from_aggregates = true;
  // Boundaries after the last one summed: at most the one being summed when a SIGKILL came.
  size_t after = 0;
  for (uint64_t ts : window.ts) after += ts > s.last_ns ? 1 : 0;
  p.count = s.boundaries + after;
  p.timed = s.steps;
  p.warmup_ns = s.steps > 0 ? s.warmup.sums[format::kStepTotal] : 0;
  const bool skip = s.steps > 1;  // after warm-up (all steps when there is only one)
  StepTime all = TimeOf(s.all);
  const StepTime warm = TimeOf(s.warmup);
  StepShares& a = p.after_warmup;
  a.steps = skip ? s.steps - 1 : s.steps;
  a.total_ns = s.all.sums[format::kStepTotal] - (skip ? std::min(s.warmup.sums[format::kStepTotal],
                                                                 s.all.sums[format::kStepTotal]) : 0);
  const StepTime after_warmup = skip ? Less(all, warm) : all;
  a.input_wait_ns = after_warmup.input_wait_ns;
  a.gpu_sync_ns = after_warmup.gpu_sync_ns;
  a.io_ns = after_warmup.io_ns;
  a.other_ns = after_warmup.other_ns;
  a.wait_io_ns = after_warmup.wait_io_ns;
  p.median_ns = HistPercentile(s.hist[format::kStepTotal], skip, s.warmup_bucket[format::kStepTotal], 0.5);
  p.p90_ns = HistPercentile(s.hist[format::kStepTotal], skip, s.warmup_bucket[format::kStepTotal], 0.9);
  p.median_wait_ns =
      HistPercentile(s.hist[format::kStepInputWait], skip, s.warmup_bucket[format::kStepInputWait], 0.5);
  for (size_t i = 0; i < s.periods.size(); ++i) {
    StepPeriod period{s.periods[i].steps, TimeOf(s.periods[i])};
    if (i == 0 && skip && period.steps > 0) {  // the warm-up is the first period's first step
      --period.steps;
      period.sum = Less(period.sum, warm);
      period.sum.start_ns = s.warmup.end_ns;
    }
    if (period.steps > 0) p.periods.push_back(period);
  }
  // The batch waits of the step loop's thread: their series' when it is that thread's.
  for (const StepSeries& w : t.step_aggregates.series) {
    if (w.source != format::kStepAggBatchWaits || w.tid != p.tid || w.image != s.image) continue;
    uint64_t later = 0;
    for (const auto& r : t.records.BatchWait) later += r.tid == w.tid && r.ts > w.last_ns ? 1 : 0;
    p.batch_waits = w.boundaries + later;
  }
}

ProcessSteps StepsOf(const RunModel& run, size_t index) {
  const ProcessTrace& t = run.traces()[index];
  ProcessSteps p;
  p.trace = index;
  p.pid = t.pid();
  const StepSeries* series = StepsFromAggregates(t) ? BestSeries(t) : nullptr;
  const Boundaries b = series != nullptr ? WindowBoundaries(t, *series) : FindBoundaries(t);
  if (b.ts.empty() && series == nullptr) return p;
  p.source = b.source;
  p.tid = b.tid;
  p.count = b.ts.size();
  p.full_from_ns = t.start_ns();
  const ThreadTime tt = ThreadTimeOf(t, b.tid);
  // An optimizer step ends its iteration: the first iteration ran from the first batch
  // wait before it (else the trace's start) to it. (Not when the window may have given up
  // the steps before the first it holds.)
  if (b.source == StepSourceKind::kOptimizer && series == nullptr) {
    uint64_t first = t.start_ns();
    for (const auto& w : t.records.BatchWait) {
      if (w.tid == b.tid && w.ts < b.ts.front()) {
        first = w.ts;
        break;
      }
    }
    if (first < b.ts.front()) p.steps.push_back(Split(tt, first, b.ts.front()));
  }
  for (size_t i = 0; i + 1 < b.ts.size(); ++i) p.steps.push_back(Split(tt, b.ts[i], b.ts[i + 1]));
  const ProcessFacts& facts = run.facts(t);
  p.ended_cleanly = facts.end_kind == EndKind::kExited || facts.end_kind == EndKind::kExecUntraced;
  // A killed process died when its reaper saw it die, or, unreaped, at its last record.
  const uint64_t died = facts.reap ? std::max(facts.reap->ts, t.end_ns()) : t.end_ns();
  const uint64_t last = b.ts.empty() ? series->last_ns : b.ts.back();
  if (!p.ended_cleanly && died > last) p.interrupted = Split(tt, last, died);
  p.timed = p.steps.size();
  p.warmup_ns = p.steps.empty() ? 0 : p.steps.front().duration_ns();
  p.wait_site = WaitSite(t, b.tid);
  for (const auto& w : t.records.BatchWait) p.batch_waits += w.tid == b.tid ? 1 : 0;
  if (series != nullptr) {
    p.full_from_ns = b.ts.empty() ? last : b.ts.front();
    SumFromAggregates(t, *series, b, p);
    return p;
  }
  const size_t from = p.steps.size() > 1 ? 1 : 0;
  p.after_warmup = StepShares::Of(p.steps, from, p.steps.size());
  std::vector<uint64_t> durations, waits;
  for (size_t i = from; i < p.steps.size(); ++i) {
    durations.push_back(p.steps[i].duration_ns());
    waits.push_back(p.steps[i].input_wait_ns);
  }
  p.median_ns = PercentileOf(durations, 0.5);
  p.p90_ns = PercentileOf(durations, 0.9);
  p.median_wait_ns = PercentileOf(waits, 0.5);
  return p;
}

// CPU time (utime + stime) a process spent inside [a, b): from its own samples, else from
// `colabtrace run`'s; nullopt when neither recorded CPU time.
std::optional<uint64_t> CpuIn(const RunModel& run, const ProcessTrace& t, uint64_t a, uint64_t b) {
  std::vector<std::pair<uint64_t, uint64_t>> points;  // ts, cpu ns so far
  for (const auto& s : t.records.Sample) {
    if (s.utime_ns + s.stime_ns > 0) points.emplace_back(s.ts, s.utime_ns + s.stime_ns);
  }
  if (points.empty()) {
    for (const OutsideSample* s : run.lifecycle().SamplesOf(t)) {
      if (s->cpu_ns > 0) points.emplace_back(s->ts, s->cpu_ns);
    }
  }
  if (points.empty()) return std::nullopt;
  std::sort(points.begin(), points.end());
  // The counter at a time, interpolated between samples (the process started with none;
  // after the last sample it is the last value).
  const uint64_t start = std::min(t.start_ns(), points.front().first);
  auto at = [&](uint64_t ts) -> double {
    uint64_t t0 = start;
    double v0 = 0;
    for (const auto& [pts, cpu] : points) {
      if (pts >= ts) {
        if (pts == t0) return static_cast<double>(cpu);
        return v0 + (static_cast<double>(cpu) - v0) * static_cast<double>(ts - t0) / static_cast<double>(pts - t0);
      }
      t0 = pts;
      v0 = static_cast<double>(cpu);
    }
    return v0;
  };
  const double used = at(std::max(b, start)) - at(std::max(a, start));
  return used > 0 ? static_cast<uint64_t>(used) : 0;
}

// Whether `ancestor` is t's parent, grandparent... (same host), by the lifecycle model's
// parent pids.
bool DescendsFrom(const RunModel& run, const ProcessTrace& t, const ProcessTrace& ancestor,
                  const std::map<std::pair<std::string, int64_t>, const ProcessTrace*>& by_pid) {
  const LifecycleModel& lc = run.lifecycle();
  const std::string host = lc.HostOf(t);
  if (host != lc.HostOf(ancestor)) return false;
  const ProcessTrace* at = &t;
  for (int depth = 0; depth < 8; ++depth) {
    const int64_t ppid = lc.ParentPidOf(*at);
    if (ppid <= 0) return false;
    if (ppid == ancestor.pid()) return true;
    const auto it = by_pid.find({host, ppid});
    if (it == by_pid.end()) return false;
    at = it->second;
  }
  return false;
}

WorkerTime WorkerTimeOf(const RunModel& run, size_t index, uint64_t span_a, uint64_t span_b) {
  const ProcessTrace& t = run.traces()[index];
  WorkerTime w;
  w.trace = index;
  w.pid = t.pid();
  for (const auto& r : t.records.ProcessRole) {
    if (r.role == static_cast<uint64_t>(format::ProcessRoleKind::kDataLoaderWorker)) {
      w.dataloader_worker = true;
      w.worker_id = static_cast<int64_t>(r.worker_id);
    }
  }
  const uint64_t a = std::max(span_a, t.start_ns()), b = std::min(span_b, t.end_ns());
  w.alive_ns = b > a ? b - a : 0;
  IntervalSet io;
  ForEachFileCall(t, [&](uint64_t ts, uint64_t dur, uint32_t) { io.Add(std::max(ts, a), std::min(ts + dur, b)); });
  io.Build();
  w.io_ns = io.MeasureIn(a, b);
  if (const auto cpu = CpuIn(run, t, a, b)) {
    w.cpu_known = true;
    w.cpu_ns = *cpu;
  }
  // CPU time spent inside file calls (the kernel's side of a read) is I/O here.
  const uint64_t cpu_outside_io = std::min(w.cpu_ns, w.alive_ns > w.io_ns ? w.alive_ns - w.io_ns : 0);
  w.wait_ns = w.alive_ns > w.io_ns + cpu_outside_io ? w.alive_ns - w.io_ns - cpu_outside_io : 0;
  w.io = DataIoOf(run, index);
  return w;
}

// CPUs the process may use: its affinity count, lowered by its cgroup's CPU quota.
double CpusAllowed(const ProcessTrace& t) {
  double cpus = 0;
  for (const auto& h : t.records.HostNum) {
    const std::string_view key = t.Str(h.key);
    if (key == "cpu_count" && h.value > 0) cpus = cpus > 0 ? std::min(cpus, double(h.value)) : double(h.value);
    if (key == "cgroup_cpu_quota_millicpus" && h.value > 0) {
      const double quota = static_cast<double>(h.value) / 1000.0;
      cpus = cpus > 0 ? std::min(cpus, quota) : quota;
    }
  }
  return cpus;
}

StepWorkers WorkersOf(const RunModel& run, const ProcessSteps& p, size_t stepping) {
  StepWorkers out;
  out.stepping = stepping;
  const auto& traces = run.traces();
  const ProcessTrace& main = traces[p.trace];
  out.cpus_allowed = CpusAllowed(main);
  if (p.steps.empty() && !p.interrupted) return out;
  const uint64_t span_a = p.steps.empty() ? p.interrupted->start_ns : p.steps.front().start_ns;
  const uint64_t span_b = p.interrupted ? p.interrupted->end_ns : p.steps.back().end_ns;
  const LifecycleModel& lc = run.lifecycle();
  std::map<std::pair<std::string, int64_t>, const ProcessTrace*> by_pid;
  for (const ProcessTrace& t : traces) by_pid[{lc.HostOf(t), t.pid()}] = &t;
  std::vector<size_t> descendants;
  bool any_marked = false;
  for (size_t i = 0; i < traces.size(); ++i) {
    const ProcessTrace& t = traces[i];
    if (i == p.trace || run.facts(t).run_wrapper) continue;
    if (t.end_ns() <= span_a || t.start_ns() >= span_b) continue;
    if (!DescendsFrom(run, t, main, by_pid)) continue;
    descendants.push_back(i);
    for (const auto& r : t.records.ProcessRole) {
      any_marked |= r.role == static_cast<uint64_t>(format::ProcessRoleKind::kDataLoaderWorker);
    }
  }
  for (size_t i : descendants) {
    WorkerTime w = WorkerTimeOf(run, i, span_a, span_b);
    if (any_marked && !w.dataloader_worker) continue;
    if (w.cpu_known && w.alive_ns > 0 && w.cpu_ns * 2 >= w.alive_ns) ++out.busy_workers;
    if (p.steps.size() > 1 && traces[i].start_ns() > p.steps[1].start_ns) ++out.restarted_workers;
    out.workers.push_back(std::move(w));
  }
  return out;
}

}  // namespace

FileCallTime FileCallsIn(const ProcessTrace& t, uint64_t a, uint64_t b, uint32_t tid) {
  FileCallTime out;
  ForEachFileCall(t, [&](uint64_t ts, uint64_t dur, uint32_t th) {
    if (ts < a || ts >= b || (tid != 0 && th != tid)) return;
    ++out.calls;
    out.ns += dur;
  });
  return out;
}

std::vector<WorkerIo> MergeByDirectory(std::vector<WorkerIo> rows) {
  std::map<std::pair<std::string, std::string>, WorkerIo> by_dir;
  for (WorkerIo& r : rows) {
    WorkerIo& d = by_dir[{r.mountpoint, r.directory}];
    if (d.directory.empty()) {
      d.directory = std::move(r.directory);
      d.mountpoint = std::move(r.mountpoint);
      d.fs_type = std::move(r.fs_type);
      d.slow_fs = r.slow_fs;
    }
    d.Add(r);
  }
  std::vector<WorkerIo> out;
  for (auto& [k, d] : by_dir) out.push_back(std::move(d));
  std::stable_sort(out.begin(), out.end(), [](const WorkerIo& x, const WorkerIo& y) { return x.io_ns() > y.io_ns(); });
  return out;
}

std::vector<WorkerIo> DataIoOf(const RunModel& run, size_t trace) {
  const io::IoModel& model = run.Get<io::ProcessIoModels>().of_trace[trace];
  std::vector<WorkerIo> files;
  for (const io::FileStats& f : model.files) {
    if (!io::IsDataFile(f, model.mounts) || f.directory) continue;
    WorkerIo file;
    file.directory = std::string(io::DirOf(f.path));
    if (f.mount >= 0 && static_cast<size_t>(f.mount) < model.mounts.size()) {
      const io::MountRow& m = model.mounts[static_cast<size_t>(f.mount)];
      file.mountpoint = m.mountpoint;
      file.fs_type = m.fstype;
      file.slow_fs = m.fs.slow;
    }
    file.files = 1;
    file.opens = f.opens;
    file.open_ns = f.open_ns;
    file.reads = f.reads;
    file.read_ns = f.read_ns;
    file.bytes_read = f.bytes_read;
    file.stats = f.stats;
    file.stat_ns = f.stat_ns;
    files.push_back(std::move(file));
  }
  return MergeByDirectory(std::move(files));
}

std::string_view StepSourceName(StepSourceKind s) {
  switch (s) {
    case StepSourceKind::kMarker: return "marker";
    case StepSourceKind::kOptimizer: return "optimizer";
    case StepSourceKind::kDataLoader: return "dataloader";
  }
  return "";
}

namespace {
double Fraction(uint64_t part, uint64_t total) { return total == 0 ? 0.0 : static_cast<double>(part) / static_cast<double>(total); }
}  // namespace

double StepShares::input_wait_fraction() const { return Fraction(input_wait_ns, total_ns); }
double StepShares::gpu_sync_fraction() const { return Fraction(gpu_sync_ns, total_ns); }
double StepShares::io_fraction() const { return Fraction(io_ns, total_ns); }
double StepShares::other_fraction() const { return Fraction(other_ns, total_ns); }

StepShares StepShares::Of(const std::vector<StepTime>& steps, size_t begin, size_t end) {
  StepShares s;
  for (size_t i = begin; i < end && i < steps.size(); ++i) {
    ++s.steps;
    s.total_ns += steps[i].duration_ns();
    s.input_wait_ns += steps[i].input_wait_ns;
    s.gpu_sync_ns += steps[i].gpu_sync_ns;
    s.io_ns += steps[i].io_ns;
    s.other_ns += steps[i].other_ns;
    s.wait_io_ns += steps[i].wait_io_ns;
  }
  return s;
}

uint64_t PercentileOf(std::vector<uint64_t> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  size_t rank = static_cast<size_t>(p * static_cast<double>(values.size()) + 0.999999);  // nearest rank
  rank = std::clamp<size_t>(rank, 1, values.size());
  return values[rank - 1];
}


bool StepsFromAggregates(const ProcessTrace& t) {
  if (t.step_aggregates.series.empty()) return false;
  // The window gave up some events (or the cap kept some from being written): only the
  // sums still cover every step.
  if (t.window.events_in_full < t.window.events_total || t.window.capped) return true;
  const char* v = std::getenv("COLABTRACE_ANALYZER_IGNORE_STEP_EVENTS");
  return v != nullptr && std::string_view(v) == "1";
}

const ProcessSteps* StepModels::Of(size_t trace) const {
  for (const ProcessSteps& p : processes) {
    if (p.trace == trace) return &p;
  }
  return nullptr;
}

const StepWorkers* StepModels::WorkersOf(size_t trace) const {
  for (size_t i = 0; i < processes.size(); ++i) {
    if (processes[i].trace == trace) return &workers[i];
  }
  return nullptr;
}

StepModels StepModels::Build(const RunModel& run) {
  StepModels m;
  const auto& traces = run.traces();
  // Each process's steps on its own (a 1,024-rank job's traces on every core, issue 38):
  // the process facts are made first, once, so the threads only read them.
  if (!traces.empty()) run.facts(traces.front());
  std::vector<ProcessSteps> each(traces.size());
  ParallelFor(traces.size(), 16, [&](size_t i) {
    if (!run.facts(traces[i]).run_wrapper) each[i] = StepsOf(run, i);
  });
  for (ProcessSteps& p : each) {
    if (p.count > 0) m.processes.push_back(std::move(p));
  }
  for (size_t i = 0; i < m.processes.size(); ++i) m.workers.push_back(perf::WorkersOf(run, m.processes[i], i));
  return m;
}

}  // namespace colabtrace::analyzer::perf
