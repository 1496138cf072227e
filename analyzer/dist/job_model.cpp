#include "dist/job_model.h"

#include <algorithm>
#include <csignal>
#include <map>
#include <set>
#include <tuple>

#include "colabtrace/format/records.h"
#include "core/format.h"
#include "perf/hang_model.h"
#include "perf/step_model.h"

namespace colabtrace::analyzer::dist {
namespace {

std::string HostNameOf(const std::string& key) { return key.substr(0, key.find('/')); }

bool SameIdentity(const LauncherIdentity& a, const LauncherIdentity& b) {
  return a.launcher == b.launcher && a.variables == b.variables;
}

// The traced process that sent `signo` to pid on host at or after since_ns (kill() to
// that pid, result 0), and the time it sent it; {0, 0} when none did.
std::pair<int64_t, uint64_t> SenderOf(const RunModel& run, const std::string& host, int64_t pid, int64_t signo,
                                      uint64_t since_ns) {
  for (const ProcessTrace& o : run.traces()) {
    if (o.records.KillSent.empty() || run.lifecycle().HostOf(o) != host) continue;
    for (const auto& k : o.records.KillSent) {
      if (k.target == pid && static_cast<int64_t>(k.signo) == signo && k.result == 0 && k.ts >= since_ns) {
        return {static_cast<int64_t>(o.pid()), k.ts};
      }
    }
  }
  return {0, 0};
}

// NCCL (the shim's NCCL hooks): the sequence number each communicator reached, from its
// table (exact) and its calls still in the ring; and what the rank waited in when a GPU
// synchronisation was in flight at its end: the last NCCL collective issued on the stream it
// waited for (on any stream, for a device-wide one) before it began. The thread that waited
// longest counts.
void NcclEntered(const ProcessTrace& t, JobRank& r) {
  for (const auto& c : t.records.NcclCommState) {
    if (c.comm == 0) continue;
    uint64_t& e = r.entered[c.comm];
    e = std::max(e, c.colls);
  }
  for (const auto& c : t.records.NcclCall) {
    if (c.comm == 0 || c.seq == 0) continue;
    uint64_t& e = r.entered[c.comm];
    e = std::max(e, c.seq);
  }
}
void FindNcclWait(const ProcessTrace& t, uint64_t stop_ns, JobRank& r) {
  using format::InFlightCall;
  if (t.records.NcclCall.empty()) return;
  // The default streams (0, cudaStreamLegacy, cudaStreamPerThread) are one.
  const auto key = [](uint64_t s) { return s <= 2 ? 0 : s; };
  const format::InFlight* sync = nullptr;
  for (const auto& n : t.records.InFlight) {
    if (n.call != static_cast<uint64_t>(InFlightCall::kGpuSync)) continue;
    if (sync == nullptr || n.ts < sync->ts) sync = &n;
  }
  if (sync == nullptr) return;
  const format::NcclCall* last = nullptr;
  for (const auto& c : t.records.NcclCall) {
    if (c.seq == 0 || c.comm == 0 || c.ts > sync->ts) continue;
    if (sync->device_wide == 0 && key(c.stream) != key(sync->stream)) continue;
    if (last == nullptr || c.n > last->n) last = &c;
  }
  if (last == nullptr) return;
  RankWait w;
  w.op_code = last->op;
  const char* n = format::CollectiveOpName(last->op);
  w.op = n != nullptr ? n : "collective";
  w.group = last->comm;
  w.nccl = true;
  w.seq = last->seq;
  w.count = last->count;
  const char* d = format::NcclDataTypeName(last->dtype);
  w.dtype = d != nullptr ? d : "";
  w.where = last->py_stack != 0 ? std::string(t.Str(last->py_stack)) : std::string();
  w.tid = static_cast<uint32_t>(sync->tid);
  w.since_ns = last->ts;
  w.waited_ns = stop_ns > last->ts ? stop_ns - last->ts : 0;
  r.waiting = std::move(w);
}

// What rank trace t was waiting in when it stopped at stop_ns: a collective in flight
// (level 1 note), else its last Collective record when that one raised and no step
// followed it; and the highest sequence number it entered in each group.
void FindWait(const ProcessTrace& t, uint64_t stop_ns, JobRank& r) {
  using format::InFlightCall;
  NcclEntered(t, r);
  // The collective chunks' counters (1.5) count every collective of their groups, the
  // window's given-up ones too; the records count the rest (older traces, groups past the
  // chunks').
  for (const auto& g : t.records.CollectiveGroup) {
    GroupCollectives& s = r.groups[g.group];
    s.collectives += g.collectives;
    s.raised += g.raised;
    s.entered = std::max(s.entered, g.entered);
    s.time_ns += g.time;
  }
  std::map<uint64_t, GroupCollectives> from_records;
  for (const auto& c : t.records.Collective) {
    GroupCollectives& s = from_records[c.group];
    ++s.collectives;
    if (c.status == static_cast<uint64_t>(format::CollectiveStatus::kRaised)) ++s.raised;
    s.time_ns += c.dur;
    if (c.seq != 0) s.entered = std::max(s.entered, c.seq + (c.seqs > 0 ? c.seqs - 1 : 0));
  }
  for (const auto& [group, s] : from_records) r.groups.try_emplace(group, s);
  for (const auto& [group, s] : r.groups) {
    if (s.entered == 0) continue;
    uint64_t& e = r.entered[group];
    e = std::max(e, s.entered);
  }
  const auto text = [&](uint64_t id) { return id != 0 ? std::string(t.Str(id)) : std::string(); };
  const auto name = [](uint64_t op) {
    const char* n = format::CollectiveOpName(op);
    return std::string(n != nullptr ? n : "collective");
  };
  // A RankWait from a record's fields (an in_flight note's or a collective's).
  const auto make = [&](const auto& rec, uint64_t op, uint64_t waited_ns, bool raised) {
    RankWait w;
    w.op_code = op;
    w.op = name(op);
    w.group = rec.group;
    w.seq = rec.seq;
    w.count = rec.count;
    w.dtype = text(rec.dtype);
    w.where = text(rec.where);
    w.tid = static_cast<uint32_t>(rec.tid);
    w.since_ns = rec.ts;
    w.waited_ns = waited_ns;
    w.raised = raised;
    return w;
  };
  for (const auto& n : t.records.InFlight) {
    if (n.call != static_cast<uint64_t>(InFlightCall::kCollective)) continue;
    if (r.waiting && r.waiting->since_ns <= n.ts) continue;  // the thread that waited longest
    r.waiting = make(n, n.api, stop_ns > n.ts ? stop_ns - n.ts : 0, false);
  }
  if (!r.waiting) FindNcclWait(t, stop_ns, r);
  if (r.waiting) {
    if (r.waiting->seq != 0) {
      uint64_t& e = r.entered[r.waiting->group];
      e = std::max(e, r.waiting->seq);
    }
    return;
  }
  if (t.records.Collective.empty()) return;
  const auto& last = t.records.Collective.back();
  if (last.status != static_cast<uint64_t>(format::CollectiveStatus::kRaised)) return;
  const uint64_t ended = last.ts + last.dur;
  for (const auto& st : t.records.Step) {
    if (st.ts >= ended) return;  // it went on stepping: the error was caught
  }
  r.waiting = make(last, last.op, last.dur, true);
}

// A rank killed in a call it began no later than this after the waiters entered, and
// stayed in at least this long, was stuck there (JudgeHang).
constexpr uint64_t kBlockedSlackNs = 1'000'000'000;

bool IsFatalSignal(int64_t s) {
  return s == SIGSEGV || s == SIGBUS || s == SIGABRT || s == SIGILL || s == SIGFPE;
}

// Wall time minus CLOCK_MONOTONIC for t at mono time ns, modulo 2^64 (trace values are
// untrusted: unsigned arithmetic wraps where signed would overflow): from its last Clock
// record at or before ns (the first after it when none is), else from its header;
// nullopt when the trace has no wall-clock reading at all.
std::optional<uint64_t> WallOffset(const ProcessTrace& t, uint64_t ns) {
  const auto& clocks = t.records.Clock;
  const format::Clock* best = nullptr;
  for (const auto& c : clocks) {
    if (c.realtime_ns == 0) continue;
    if (best == nullptr || c.ts <= ns) best = &c;
    if (c.ts > ns) break;
  }
  if (best != nullptr) return best->realtime_ns - best->mono_ns;
  if (t.start_realtime_ns() != 0) return t.start_realtime_ns() - t.start_ns();
  return std::nullopt;
}

std::string JoinRanks(const std::vector<int64_t>& ranks) {
  std::string s;
  for (size_t i = 0; i < ranks.size(); ++i) {
    s += (i == 0 ? "" : i + 1 == ranks.size() ? " and " : ", ") + std::to_string(ranks[i]);
  }
  return s;
}

// A program that only starts the real one: a shell running a launch script, or a
// command prefix (env, timeout, numactl...). One that carries the rank variables and
// starts a child that carries them too is part of the launch, not the rank.
bool IsWrapperProgram(std::string_view exe) {
  const std::string_view base = exe.substr(exe.rfind('/') + 1);
  for (std::string_view w : {"sh", "bash", "dash", "zsh", "ksh", "env", "timeout", "nice", "nohup", "numactl",
                             "taskset", "stdbuf", "srun", "mpirun", "mpiexec", "orted", "prted"}) {
    if (base == w) return true;
  }
  return false;
}

class Builder {
 public:
  explicit Builder(const RunModel& run) : run_(run), life_(run.lifecycle()) {}

  JobModel Build() {
    const auto& traces = run_.traces();
    index_.assign(traces.size(), -1);
    std::vector<LauncherIdentity> ids(traces.size());
    for (size_t i = 0; i < traces.size(); ++i) {
      const ProcessTrace& t = traces[i];
      by_host_pid_[{life_.HostOf(t), t.pid()}].push_back(i);
      if (run_.facts(t).run_wrapper) continue;
      const auto env = LauncherEnvOf(t);
      ids[i] = IdentityOf(env);
      if (!ids[i].present()) ids[i] = IdentityOfGroup(t, env, life_.ParentPidOf(t));
    }
    for (auto& [key, list] : by_host_pid_) {
      std::sort(list.begin(), list.end(),
                [&](size_t a, size_t b) { return traces[a].start_ns() < traces[b].start_ns(); });
    }
    // A wrapper (a launch script's shell, a command prefix) whose child carries the same
    // variables is no rank: it reads as part of the launch (a launcher of its rank).
    std::vector<bool> wrapper(traces.size(), false);
    for (size_t i = 0; i < traces.size(); ++i) {
      const std::optional<size_t> parent = ids[i].present() ? ParentOf(i) : std::nullopt;
      if (parent && SameIdentity(ids[*parent], ids[i]) &&
          IsWrapperProgram(run_.facts(traces[*parent]).JobExe(traces[*parent]))) {
        wrapper[*parent] = true;
      }
    }
    for (size_t i = 0; i < traces.size(); ++i) {
      if (!ids[i].present() || wrapper[i]) continue;
      RankProcess p;
      p.trace = i;
      p.identity = std::move(ids[i]);
      p.host_key = life_.HostOf(traces[i]);
      p.host = HostNameOf(p.host_key);
      index_[i] = static_cast<int64_t>(model_.processes.size());
      model_.processes.push_back(std::move(p));
    }
    for (RankProcess& p : model_.processes) Place(p);
    GroupJobs();
    model_.by_trace = index_;
    return std::move(model_);
  }

 private:
  // The traced parent of trace i: the trace of its parent pid on its host that began
  // before it (the latest such); nullopt when the parent left no trace.
  std::optional<size_t> ParentOf(size_t i) const {
    const ProcessTrace& t = run_.traces()[i];
    const int64_t ppid = life_.ParentPidOf(t);
    if (ppid <= 0) return std::nullopt;
    auto it = by_host_pid_.find({life_.HostOf(t), static_cast<uint32_t>(ppid)});
    if (it == by_host_pid_.end()) return std::nullopt;
    std::optional<size_t> best;
    for (size_t j : it->second) {
      if (j != i && run_.traces()[j].start_ns() <= t.start_ns()) best = j;
    }
    return best;
  }

  // Decides p's role: a worker when its parent carries the same launcher variables (its
  // rank is then its parent's rank, or the rank its parent works for).
  void Place(RankProcess& p) {
    p.role = Role::kRank;
    p.rank_trace = p.trace;
    std::set<size_t> seen{p.trace};
    std::optional<size_t> parent = ParentOf(p.trace);
    while (parent && seen.insert(*parent).second && index_[*parent] >= 0) {
      const RankProcess& q = model_.processes[static_cast<size_t>(index_[*parent])];
      if (!SameIdentity(q.identity, p.identity)) break;
      p.role = Role::kWorker;
      p.rank_trace = *parent;
      parent = ParentOf(*parent);
    }
  }

  void GroupJobs() {
    using Key = std::tuple<std::string, int64_t>;
    std::map<Key, std::vector<const RankProcess*>> groups;
    std::set<std::string> names;
    for (const RankProcess& p : model_.processes) {
      if (p.role != Role::kRank) continue;
      groups[{p.identity.job, p.identity.restart.value_or(-1)}].push_back(&p);
      names.insert(p.identity.job);
    }
    if (names.size() > 1) {
      std::string list;
      for (const std::string& n : names) list += (list.empty() ? "" : ", ") + (n.empty() ? "(no job id)" : n);
      model_.notes.push_back(std::to_string(names.size()) + " jobs in these traces (" + list +
                             "): each is judged on its own");
    }
    for (auto& [key, members] : groups) model_.jobs.push_back(MakeJob(members));
  }

  Job MakeJob(const std::vector<const RankProcess*>& members) {
    Job job;
    const RankProcess& first = *members.front();
    job.job = first.identity.job;
    job.launcher = first.identity.launcher;
    job.restart = first.identity.restart;
    std::set<std::string> hosts, host_keys;
    std::map<int64_t, std::vector<const RankProcess*>> by_rank;
    std::set<int64_t> sizes;
    for (const RankProcess* p : members) {
      const ProcessTrace& t = run_.traces()[p->trace];
      for (const std::string& problem : p->identity.problems) {
        job.problems.push_back("pid " + std::to_string(t.pid()) + " on " + p->host + ": " + problem);
      }
      if (p->identity.world_size) sizes.insert(*p->identity.world_size);
      if (p->identity.rank && p->identity.problems.empty()) by_rank[*p->identity.rank].push_back(p);
      hosts.insert(p->host);
      host_keys.insert(p->host_key);
    }
    job.hosts.assign(hosts.begin(), hosts.end());
    job.wall_clock = host_keys.size() > 1;
    if (sizes.size() > 1) {
      std::string list;
      for (int64_t s : sizes) list += (list.empty() ? "" : ", ") + std::to_string(s);
      job.problems.push_back("its ranks disagree on the world size (" + list + ")");
    } else if (sizes.size() == 1) {
      job.world_size = *sizes.begin();
    }
    for (const auto& [rank, procs] : by_rank) {
      if (procs.size() > 1) {
        std::string pids;
        for (const RankProcess* p : procs) {
          pids += (pids.empty() ? "" : ", ") + std::to_string(run_.traces()[p->trace].pid()) + " on " + p->host;
        }
        job.problems.push_back("rank " + std::to_string(rank) + " appears in " + std::to_string(procs.size()) +
                               " processes (pids " + pids +
                               "): two runs with one job id in these traces, or a launcher that gave one rank twice");
      }
      job.ranks.push_back(MakeRank(*procs.front(), rank));
    }
    if (job.world_size) {
      for (int64_t r = 0; r < *job.world_size; ++r) {
        if (!by_rank.count(r)) job.missing.push_back(r);
      }
      if (!job.missing.empty()) {
        job.problems.push_back(std::string(job.missing.size() == 1 ? "rank " : "ranks ") + JoinRanks(job.missing) +
                               " of " + std::to_string(*job.world_size) +
                               (job.missing.size() == 1 ? " has" : " have") +
                               " no trace here (a host's folder left out, or a trace lost): the rank that failed "
                               "first cannot be told");
      }
    }
    for (const RankProcess& w : model_.processes) {
      if (w.role != Role::kWorker) continue;
      for (JobRank& r : job.ranks) {
        if (r.trace == w.rank_trace) r.workers.push_back(w.trace);
      }
    }
    std::set<size_t> launchers;
    for (const JobRank& r : job.ranks) {
      const std::optional<size_t> parent = ParentOf(r.trace);
      if (parent && index_[*parent] < 0 && !run_.facts(run_.traces()[*parent]).run_wrapper) launchers.insert(*parent);
    }
    job.launchers.assign(launchers.begin(), launchers.end());
    Align(job);
    Judge(job);
    return job;
  }

  JobRank MakeRank(const RankProcess& p, int64_t rank) {
    const ProcessTrace& t = run_.traces()[p.trace];
    const ProcessFacts& f = run_.facts(t);
    JobRank r;
    r.trace = p.trace;
    r.rank = rank;
    r.pid = t.pid();
    r.host = p.host;
    r.host_key = p.host_key;
    if (const perf::ProcessSteps* s = run_.Get<perf::StepModels>().Of(p.trace)) r.steps = s->count;
    r.end_kind = f.end_kind;
    r.code = f.exit_code;
    r.signal = f.end_signal;
    r.stop_ns = t.end_ns();
    switch (f.end_kind) {
      case EndKind::kExited:
        r.blame = f.exit_code && *f.exit_code != 0 ? Blame::kExit : Blame::kNone;
        break;
      case EndKind::kExecUntraced:
        r.blame = Blame::kNone;
        break;
      case EndKind::kSignaled: {
        const int64_t signo = f.end_signal.value_or(0);
        if (IsFatalSignal(signo) && f.signal != nullptr) {
          r.blame = Blame::kOwn;
          break;
        }
        const auto [sender, at] = SenderOf(run_, p.host_key, r.pid, signo, t.start_ns());
        r.blame = sender != 0 ? Blame::kSent : IsFatalSignal(signo) ? Blame::kOwn : Blame::kExit;
        r.sender_pid = sender;
        // It lived until the signal came, even when its handler could not record it (the
        // signal reached a thread inside one of the shim's hooks).
        if (sender != 0) r.stop_ns = std::max(r.stop_ns, at);
        break;
      }
      case EndKind::kKilled: {
        // Its last sign of life: its own last record, or `colabtrace run`'s last sample.
        for (const OutsideSample* s : life_.SamplesOf(t)) r.stop_ns = std::max(r.stop_ns, s->ts);
        const auto [sender, at] = SenderOf(run_, p.host_key, r.pid, SIGKILL, t.start_ns());
        r.blame = sender != 0 ? Blame::kSent : Blame::kOwn;
        r.sender_pid = sender;
        if (sender != 0) r.stop_ns = std::max(r.stop_ns, at);
        break;
      }
    }
    FindWait(t, r.stop_ns, r);
    for (const auto& e : t.records.PyException) {
      if (!format::EndedItsProcess(e.how)) continue;
      r.exception = std::string(t.Str(e.type));
      // Its first line, as the summary quotes it.
      const std::string_view m = e.message != 0 ? t.Str(e.message) : std::string_view();
      if (!m.empty()) r.exception += ": " + std::string(m.substr(0, std::min<size_t>(m.find('\n'), 200)));
    }
    return r;
  }

  // Puts every rank's stop on the job's axis: ns from the job's first start (in unsigned
  // arithmetic, which wraps on hostile values where signed would overflow).
  void Align(Job& job) {
    std::vector<uint64_t> offset(job.ranks.size(), 0);
    for (size_t i = 0; i < job.ranks.size(); ++i) {
      if (!job.wall_clock) continue;
      const ProcessTrace& t = run_.traces()[job.ranks[i].trace];
      const std::optional<uint64_t> o = WallOffset(t, job.ranks[i].stop_ns);
      if (!o) {
        job.problems.push_back("rank " + std::to_string(job.ranks[i].rank) + "'s trace (pid " +
                               std::to_string(t.pid()) + " on " + job.ranks[i].host +
                               ") has no wall-clock reading to align it with the other hosts");
        continue;
      }
      offset[i] = *o;
    }
    if (job.wall_clock) {
      job.clock = "wall";
      job.clock_uncertainty_ns = kCrossHostClockUncertaintyNs;
      RefineByCollectives(job, offset);
    }
    uint64_t origin = UINT64_MAX;
    for (size_t i = 0; i < job.ranks.size(); ++i) {
      origin = std::min(origin, run_.traces()[job.ranks[i].trace].start_ns() + offset[i]);
    }
    for (size_t i = 0; i < job.ranks.size(); ++i) {
      job.ranks[i].axis_base = offset[i] - origin;
      job.ranks[i].at_ns = static_cast<int64_t>(job.ranks[i].stop_ns + job.ranks[i].axis_base);
    }
  }

  // Corrects each host's offset (wall minus monotonic) by the collectives its ranks left
  // with the first host's: a blocking collective (seq known, returned) ends on every rank
  // at nearly the same moment. All hosts or none: a host with too few shared collectives
  // leaves the wall clocks as they are.
  void RefineByCollectives(Job& job, std::vector<uint64_t>& offset) {
    using Key = std::pair<uint64_t, uint64_t>;  // (group, seq)
    std::map<std::string, std::map<Key, uint64_t>> ends;  // host -> collective -> end (wall)
    for (size_t i = 0; i < job.ranks.size(); ++i) {
      const ProcessTrace& t = run_.traces()[job.ranks[i].trace];
      for (const auto& c : t.records.Collective) {
        if (c.seq == 0 || c.group == 0 || c.status != static_cast<uint64_t>(format::CollectiveStatus::kReturned) ||
            c.op == static_cast<uint64_t>(format::CollectiveOp::kSend) ||
            c.op == static_cast<uint64_t>(format::CollectiveOp::kRecv)) {
          continue;
        }
        ends[job.ranks[i].host_key].emplace(Key{c.group, c.seq}, c.ts + c.dur + offset[i]);
      }
    }
    const std::string& reference = job.ranks.front().host_key;
    const auto ref = ends.find(reference);
    if (ref == ends.end() || ends.size() < 2) return;
    std::map<std::string, int64_t> shift;
    uint64_t spread = 0;
    for (const auto& [host, mine] : ends) {
      if (host == reference) continue;
      std::vector<int64_t> d;
      for (const auto& [key, end] : mine) {
        if (auto r = ref->second.find(key); r != ref->second.end()) {
          d.push_back(static_cast<int64_t>(end - r->second));
        }
      }
      if (d.size() < kMinClockCollectives) return;
      std::sort(d.begin(), d.end());
      const int64_t median = d[d.size() / 2];
      std::vector<uint64_t> off;
      for (int64_t x : d) off.push_back(static_cast<uint64_t>(x > median ? x - median : median - x));
      std::sort(off.begin(), off.end());
      spread = std::max(spread, off[off.size() * 9 / 10]);  // the 90th percentile
      shift[host] = median;
    }
    for (const JobRank& r : job.ranks) {
      if (r.host_key != reference && !shift.count(r.host_key)) return;  // a host without collectives
    }
    for (size_t i = 0; i < job.ranks.size(); ++i) {
      if (auto sh = shift.find(job.ranks[i].host_key); sh != shift.end()) {
        offset[i] -= static_cast<uint64_t>(sh->second);
      }
    }
    job.clock = "collectives";
    job.clock_uncertainty_ns = std::max(spread, kMinCollectiveUncertaintyNs);
  }

  // dist.hang: ranks ended waiting in a collective that others never entered, while those
  // were alive (blocked elsewhere, or still going when they were stopped) or missing. True
  // when the job's verdict is made here (a hang, or every rank waiting): then no rank
  // failed first. A rank that failed on its own before the waiters gave up is the first
  // failure instead, and the waiters its consequences (false).
  bool JudgeHang(Job& job) {
    for (size_t i = 0; i < job.ranks.size(); ++i) {
      if (job.ranks[i].waiting) job.waiters.push_back(i);
    }
    if (job.waiters.empty()) return false;
    // The collective they wait in: the lowest sequence number, else the first entered.
    size_t in = job.waiters.front();
    for (size_t i : job.waiters) {
      const RankWait &a = *job.ranks[i].waiting, &b = *job.ranks[in].waiting;
      const bool lower = a.seq != 0 && b.seq != 0 && a.group == b.group ? a.seq < b.seq
                                                                          : a.since_ns + job.ranks[i].axis_base <
                                                                                b.since_ns + job.ranks[in].axis_base;
      if (lower) in = i;
    }
    const RankWait& w = *job.ranks[in].waiting;
    uint64_t entered_last = 0;  // the last waiter to enter did so then (the job's axis)
    for (size_t i : job.waiters) {
      entered_last = std::max(entered_last, job.ranks[i].waiting->since_ns + job.ranks[i].axis_base);
    }
    const perf::HangModel& hangs = run_.Get<perf::HangModel>();
    // The launcher (a traced process) ended waiters after rank r had stopped: it saw r
    // fail. Never when `colabtrace run` ended the job for a hang (it ends everything).
    const bool run_ended_hang = hangs.hang_timeout_ns.has_value();
    const auto torn_down_after = [&](const JobRank& r) {
      return !run_ended_hang && std::any_of(job.waiters.begin(), job.waiters.end(), [&](size_t i) {
               return job.ranks[i].blame == Blame::kSent && job.ranks[i].at_ns >= r.at_ns;
             });
    };
    // The waiters gave up (or were stopped) no earlier than this.
    uint64_t gave_up = UINT64_MAX;
    for (size_t i : job.waiters) gave_up = std::min(gave_up, static_cast<uint64_t>(job.ranks[i].at_ns));
    std::vector<size_t> never;
    for (size_t i = 0; i < job.ranks.size(); ++i) {
      const JobRank& r = job.ranks[i];
      if (r.waiting) continue;
      if (w.seq != 0) {
        const auto e = r.entered.find(w.group);
        if (e != r.entered.end() && e->second >= w.seq) continue;  // it entered it, and left
      }
      // Killed (SIGKILL) while blocked in a call it had begun by the time the waiters
      // entered, and stayed in for a while: stuck, not failed (a kill of the whole job).
      // An OOM-killed rank dies while the others have already entered, in whatever call
      // it was just then; and when the launcher ended the waiters after it died, its
      // death is what the launcher reacted to: a failure.
      // So is a rank `colabtrace run` ended for the hang (its SIGTERM reaches the ranks in
      // no particular order) while it sat in such a call.
      bool blocked_before = false;
      if (const perf::ProcessHang* h = hangs.Of(r.trace);
          h != nullptr && (r.end_kind == EndKind::kKilled || run_ended_hang) && !torn_down_after(r)) {
        for (const perf::InFlightCall& c : h->calls) {
          blocked_before |= c.since_ns + r.axis_base <= entered_last + kBlockedSlackNs && c.blocked_ns >= kBlockedSlackNs;
        }
      }
      const bool own = (r.blame == Blame::kOwn || r.blame == Blame::kExit) && !blocked_before;
      if (own && static_cast<uint64_t>(r.at_ns) <= gave_up) return false;  // it failed first
      // Blocked elsewhere, stopped from outside while they waited, or gone (exited 0,
      // before or after they entered): it never entered.
      never.push_back(i);
    }
    if (never.empty() && job.missing.empty()) {
      job.all_waiting = job.waiters.size() == job.ranks.size();
      return job.all_waiting;
    }
    job.hung = std::move(never);
    job.waited_in = in;
    std::vector<size_t> failed;
    for (size_t i : job.waiters) {
      if (job.ranks[i].failed()) failed.push_back(i);
    }
    std::sort(failed.begin(), failed.end(),
              [&](size_t a, size_t b) { return job.ranks[a].at_ns < job.ranks[b].at_ns; });
    job.consequences = std::move(failed);
    return true;
  }

  void Judge(Job& job) {
    // A missing rank leaves the hang verdict standing (it may be the rank that never
    // entered); any other problem leaves no verdict at all.
    const bool only_missing = !job.missing.empty() && job.problems.size() == 1;
    if (!job.problems.empty() && !only_missing) return;
    if (JudgeHang(job) || !job.problems.empty() || !job.failed()) return;
    // A trace that stopped early (disk full, size limit) or could be read only in part
    // does not say when its process stopped.
    for (const JobRank& r : job.ranks) {
      const ProcessTrace& t = run_.traces()[r.trace];
      if (!t.truncated && t.warnings.empty()) continue;
      job.problems.push_back("rank " + std::to_string(r.rank) + "'s trace (pid " + std::to_string(r.pid) + " on " +
                             r.host + ") " +
                             (t.truncated ? "stopped early (tracing stopped: a full disk or a size limit)"
                                          : "could be read only in part") +
                             ": when it stopped is unknown, so the rank that failed first cannot be told");
    }
    if (!job.problems.empty()) return;
    std::vector<size_t> failed, own;
    for (size_t i = 0; i < job.ranks.size(); ++i) {
      if (!job.ranks[i].failed()) continue;
      failed.push_back(i);
      if (job.ranks[i].blame != Blame::kSent) own.push_back(i);
    }
    // A rank that gave up waiting in a collective (a timeout, a lost peer) failed because
    // of another that did not wait there.
    std::vector<size_t> own_outside;
    for (size_t i : own) {
      if (!job.ranks[i].waiting) own_outside.push_back(i);
    }
    if (!own_outside.empty()) own = std::move(own_outside);
    if (failed.empty()) return;
    if (own.empty()) {
      job.stopped_from_outside = true;
      return;
    }
    const auto earlier = [&](size_t a, size_t b) {
      const JobRank &ra = job.ranks[a], &rb = job.ranks[b];
      if (ra.at_ns != rb.at_ns) return ra.at_ns < rb.at_ns;
      if (ra.blame != rb.blame) return ra.blame > rb.blame;
      return ra.rank < rb.rank;
    };
    std::sort(own.begin(), own.end(), earlier);
    const JobRank& first = job.ranks[own.front()];
    for (size_t k = 1; k < own.size() && job.wall_clock; ++k) {
      const JobRank& other = job.ranks[own[k]];
      if (other.host_key == first.host_key) continue;
      const uint64_t apart = static_cast<uint64_t>(other.at_ns) - static_cast<uint64_t>(first.at_ns);
      if (apart >= job.clock_uncertainty_ns) continue;
      // A non-zero exit just after a rank died on its own is the usual consequence.
      if (first.blame == Blame::kOwn && other.blame == Blame::kExit) continue;
      job.problems.push_back("ranks " + std::to_string(first.rank) + " (" + first.host + ") and " +
                             std::to_string(other.rank) + " (" + other.host + ") failed " +
                             FormatDurationNs(apart) +
                             " apart, closer than two hosts' wall clocks can order: the rank that failed first "
                             "cannot be told");
      return;
    }
    job.first_failure = own.front();
    std::sort(failed.begin(), failed.end(), earlier);
    for (size_t i : failed) {
      if (i != own.front()) job.consequences.push_back(i);
    }
  }

  const RunModel& run_;
  const LifecycleModel& life_;
  JobModel model_;
  std::vector<int64_t> index_;  // per trace: its index in model_.processes, -1 none
  std::map<std::pair<std::string, uint32_t>, std::vector<size_t>> by_host_pid_;
};

}  // namespace

std::string_view RoleName(Role r) { return r == Role::kRank ? "rank" : "worker"; }

std::string CommName(uint64_t group, bool nccl) {
  if (!nccl) return "group " + std::to_string(group);
  char buf[40];
  std::snprintf(buf, sizeof(buf), "nccl comm 0x%016llx", static_cast<unsigned long long>(group));
  return buf;
}

bool Job::failed() const {
  return std::any_of(ranks.begin(), ranks.end(), [](const JobRank& r) { return r.failed(); });
}

const RankProcess* JobModel::Of(size_t trace) const {
  return trace < by_trace.size() && by_trace[trace] >= 0 ? &processes[static_cast<size_t>(by_trace[trace])] : nullptr;
}

JobModel JobModel::Build(const RunModel& run) { return Builder(run).Build(); }

}  // namespace colabtrace::analyzer::dist
