// The calls in flight of every process and the job's hang verdict. See hang_model.h.
#include "perf/hang_model.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "core/format.h"
#include "gpu/gpu_api.h"
#include "gpu/kernel_names.h"
#include "io/filesystems.h"
#include "model/local_host.h"
#include "model/python_stack.h"
#include "perf/step_model.h"

namespace colabtrace::analyzer::perf {
namespace {

using Call = format::InFlightCall;

std::string ApiName(const format::InFlight& r) {
  switch (static_cast<Call>(r.call)) {
    case Call::kGpuSync: {
      const char* n = format::GpuApiName(r.api);
      return n != nullptr ? n : "cuda";
    }
    case Call::kWait: {
      static constexpr const char* kNames[] = {"wait", "waitpid", "wait3", "wait4", "waitid"};
      return r.api < std::size(kNames) ? kNames[r.api] : "wait";
    }
    case Call::kDlopen:
      return r.api == static_cast<uint64_t>(format::LibApi::kDlmopen) ? "dlmopen" : "dlopen";
    case Call::kBatchWait:
      return "DataLoader.__next__";
    case Call::kCollective: {
      const char* n = format::CollectiveOpName(r.api);
      return n != nullptr ? n : "collective";
    }
    default: {
      const char* n = format::IoApiName(r.api);
      return n != nullptr ? n : format::InFlightCallName(r.call);
    }
  }
}

bool IsFdCall(uint64_t call) {
  switch (static_cast<Call>(call)) {
    case Call::kRead:
    case Call::kWrite:
    case Call::kFsync:
    case Call::kFstat:
      return true;
    default:
      return false;
  }
}

// The path descriptor fd of trace t named at `at`: its last successful open before then,
// unless a close of it came between.
std::string FdPath(const ProcessTrace& t, int64_t fd, uint64_t at) {
  const Event<format::IoOpen>* open = nullptr;
  for (const auto& o : t.records.IoOpen) {
    if (o.ts > at) break;
    if (o.fd == fd) open = &o;
  }
  if (open == nullptr) return "";
  for (const auto& c : t.records.IoClose) {
    if (c.ts > at) break;
    if (c.ts >= open->ts && c.fd == fd) return "";
  }
  return std::string(t.Str(open->path));
}

}  // namespace

MountFacts MountOf(const RunModel& run, const ProcessTrace& t, std::string_view path) {
  MountFacts best;
  if (path.empty() || path.front() != '/') return best;
  size_t best_len = 0;
  bool found = false;
  auto consider = [&](const ProcessTrace& o) {
    for (const auto& m : o.records.Mount) {
      const std::string_view mp = o.Str(m.mountpoint);
      if (mp.empty() || mp.size() < best_len || (found && mp.size() == best_len)) continue;
      const bool under = path.starts_with(mp) &&
                         (mp == "/" || path.size() == mp.size() || path[mp.size()] == '/');
      if (!under) continue;
      best_len = mp.size();
      found = true;
      best.mountpoint = std::string(mp);
      best.fstype = std::string(o.Str(m.fstype));
      best.slow = io::ClassifyFilesystem(o.Str(m.fstype), o.Str(m.source)).slow;
    }
  };
  consider(t);
  if (!found) {
    const std::string host = run.lifecycle().HostOf(t);
    for (const ProcessTrace& o : run.traces()) {
      if (&o != &t && run.lifecycle().HostOf(o) == host) consider(o);
    }
  }
  return best;
}

namespace {

// A GPU synchronisation's kernels in flight: launches on its stream (every stream for a
// device-wide one) that returned before it began and had not completed, newest first.
// They come from the rings as the process left them: those a SIGKILL left in the trace
// (why 3), else those the shim wrote at the fatal signal that ended it (why 2: the
// SIGTERM of `colabtrace run --hang-timeout`, a time limit's). The rings written at the
// first sticky error (why 1) are an earlier moment's.
Json KernelsInFlight(const RunModel& run, const ProcessTrace& t, const format::InFlight& r) {
  const auto& rings = t.records.GpuLaunchRing;
  const bool left = std::any_of(rings.begin(), rings.end(), [](const auto& k) { return k.why == 3; });
  const uint64_t why = left ? 3 : 2;
  std::vector<const format::GpuLaunchRing*> in;
  for (const auto& k : rings) {
    if (k.why != why || k.epoch < k.synced || k.epoch >= r.epoch) continue;
    if (r.device_wide == 0 && k.stream != r.stream) continue;
    in.push_back(&k);
  }
  std::sort(in.begin(), in.end(), [](const format::GpuLaunchRing* a, const format::GpuLaunchRing* b) {
    return std::tie(a->epoch, a->seq, b->tid) > std::tie(b->epoch, b->seq, a->tid);
  });
  Json kernels = Json::MakeArray();
  if (in.empty()) return kernels;
  gpu::KernelNames names(t, run.symbols());
  for (const auto* k : in) kernels.Append(gpu::RingKernelJson(t, names, *k));
  return kernels;
}

std::vector<std::string> Lines(std::string_view text) {
  std::vector<std::string> out;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    if (!line.empty()) out.emplace_back(line);
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return out;
}

}  // namespace

const ProcessHang* HangModel::Of(size_t trace) const {
  for (const ProcessHang& p : processes) {
    if (p.trace == trace) return &p;
  }
  return nullptr;
}

HangModel HangModel::Build(const RunModel& run) {
  HangModel m;
  const std::vector<ProcessTrace>& traces = run.traces();
  const LifecycleModel& life = run.lifecycle();

  // What `colabtrace run` said: its decision, and the threads it read from outside.
  struct Stop {
    uint64_t ts = 0, timeout = 0;
  };
  std::map<std::string, Stop> stops;  // by host
  std::map<std::tuple<std::string, uint64_t, uint64_t>, OutsideThread> outside;  // host, pid, tid
  std::map<std::string, uint64_t> latest;  // by host: the latest record of any job trace
  for (const ProcessTrace& t : traces) {
    const std::string host = life.HostOf(t);
    if (!IsRunWrapper(t)) {
      latest[host] = std::max(latest[host], t.end_ns());
      continue;
    }
    for (const auto& h : t.records.HangStop) stops[host] = Stop{h.ts, h.timeout};
    for (const auto& ev : t.records.ThreadState) {
      // The record's own tid field (the thread it describes), not the writing thread's.
      const format::ThreadState& s = ev;
      OutsideThread o;
      o.tid = static_cast<uint32_t>(s.tid);
      o.comm = std::string(t.Str(s.comm));
      o.kernel_state = static_cast<char>(s.kernel_state);
      o.syscall = s.syscall;
      o.python_stack = Lines(t.Str(s.python_stack));
      outside[{host, s.pid, s.tid}] = std::move(o);
    }
  }

  for (size_t i = 0; i < traces.size(); ++i) {
    const ProcessTrace& t = traces[i];
    if (IsRunWrapper(t)) continue;
    const ProcessFacts& f = run.facts(t);
    const std::string host = life.HostOf(t);
    ProcessHang p;
    p.trace = i;
    p.ended_cleanly = f.end_kind == EndKind::kExited || f.end_kind == EndKind::kExecUntraced;
    // When it stopped: its reap, else its own record of the signal that ended it, else the
    // latest of run's decision, run's samples and the job's records on its host.
    uint64_t stopped = t.end_ns();
    if (f.reap) {
      stopped = std::max(stopped, f.reap->ts);
      p.end_known = true;
    } else if (p.ended_cleanly || f.signal != nullptr) {
      p.end_known = true;
    } else {
      for (const OutsideSample* s : life.SamplesOf(t)) {
        stopped = std::max(stopped, s->ts);
        p.end_known = true;
      }
      if (auto s = stops.find(host); s != stops.end() && s->second.ts >= t.start_ns()) {
        stopped = std::max(stopped, s->second.ts);
        p.end_known = true;
      }
      stopped = std::max(stopped, latest[host]);
    }
    p.stopped_ns = stopped;

    for (const auto& r : t.records.InFlight) {
      if (format::InFlightCallName(r.call) == nullptr) continue;
      InFlightCall c;
      c.tid = static_cast<uint32_t>(r.tid);
      c.call = r.call;
      c.level = r.level;
      c.api = ApiName(r);
      c.since_ns = r.ts;
      c.blocked_ns = stopped > r.ts ? stopped - r.ts : 0;
      if (IsFdCall(r.call)) {
        c.fd = r.fd;
        c.path = FdPath(t, r.fd, r.ts);
      } else if (r.path != 0) {
        c.path = std::string(t.Str(r.path));
      }
      if (!c.path.empty()) {
        const MountFacts mf = MountOf(run, t, c.path);
        c.mount = mf.mountpoint;
        c.fs_type = mf.fstype;
        c.slow_fs = mf.slow;
      }
      const auto call = static_cast<Call>(r.call);
      if (call == Call::kGpuSync) {
        c.stream = r.stream;
        c.device_wide = r.device_wide != 0;
        c.kernels = KernelsInFlight(run, t, r);
      }
      if ((call == Call::kBatchWait || call == Call::kCollective) && r.where != 0) {
        c.where = std::string(t.Str(r.where));
      }
      if (call == Call::kCollective) {
        c.seq = r.seq;
        c.count = r.count;
        c.group = r.group;
        if (r.dtype != 0) c.dtype = std::string(t.Str(r.dtype));
      }
      if (call == Call::kWait) c.pid = r.pid;
      if (auto o = outside.find({host, t.pid(), r.tid}); o != outside.end()) {
        c.python_stack = o->second.python_stack;
        c.comm = o->second.comm;
      }
      p.calls.push_back(std::move(c));
    }
    std::stable_sort(p.calls.begin(), p.calls.end(), [](const InFlightCall& a, const InFlightCall& b) {
      return std::tie(a.level, a.since_ns) < std::tie(b.level, b.since_ns);
    });
    for (auto it = outside.lower_bound({host, t.pid(), 0});
         it != outside.end() && std::get<0>(it->first) == host && std::get<1>(it->first) == t.pid(); ++it) {
      p.outside.push_back(it->second);
    }
    m.processes.push_back(std::move(p));
  }

  // Progress: the steps of the job's stepping process (the one with most steps).
  const StepModels& steps = run.Get<StepModels>();
  const ProcessSteps* stepper = nullptr;
  for (const ProcessSteps& s : steps.processes) {
    if (stepper == nullptr || s.count > stepper->count) stepper = &s;
  }
  if (stepper != nullptr) {
    m.stepping_trace = stepper->trace;
    m.median_step_ns = stepper->median_ns;
    m.last_step = stepper->count;
    if (stepper->interrupted) {
      m.last_step_ns = stepper->interrupted->start_ns;
    } else if (!stepper->steps.empty()) {
      m.last_step_ns = stepper->steps.back().end_ns;
    }
  }
  m.threshold_ns = std::max(kHangMinBlockedNs, kHangStepMultiple * m.median_step_ns);
  const Stop* stop = stops.empty() ? nullptr : &stops.begin()->second;
  if (stop != nullptr) {
    m.hang_timeout_ns = stop->timeout;
    m.decided_ns = stop->ts;
    // Ended for the user's own limit: stuck is blocked for half of it, at least.
    m.threshold_ns = std::min(m.threshold_ns, std::max<uint64_t>(stop->timeout / 2, 1));
  }

  uint64_t job_stopped = 0;
  bool any_stuck = false;
  for (ProcessHang& p : m.processes) {
    if (p.ended_cleanly) continue;
    job_stopped = std::max(job_stopped, p.stopped_ns);
    for (const InFlightCall& c : p.calls) {
      if (c.blocked_ns >= m.threshold_ns) p.stuck = true;
    }
    any_stuck = any_stuck || p.stuck;
  }
  const bool no_progress =
      stepper == nullptr || (job_stopped > m.last_step_ns && job_stopped - m.last_step_ns >= m.threshold_ns);
  m.hung = stop != nullptr || (any_stuck && no_progress);
  if (m.hung) {
    if (stop != nullptr) {
      m.ended_by = "hang-timeout";
    } else {
      m.ended_by = "killed";
      for (const ProcessHang& p : m.processes) {
        const ProcessTrace& t = traces[p.trace];
        if (!p.ended_cleanly && !run.facts(t).reap && StillRunningHere(t)) m.ended_by = "still-running";
      }
    }
  }
  return m;
}

Json InFlightJson(const InFlightCall& c) {
  Json j = Json::MakeObject();
  j["tid"] = static_cast<uint64_t>(c.tid);
  j["call"] = std::string(format::InFlightCallName(c.call));
  j["api"] = c.api;
  j["level"] = c.level;
  j["blocked_ns"] = c.blocked_ns;
  j["path"] = c.path.empty() ? Json() : Json(c.path);
  j["fd"] = c.fd ? Json(*c.fd) : Json();
  j["mount"] = c.mount.empty() ? Json() : Json(c.mount);
  j["fs_type"] = c.fs_type.empty() ? Json() : Json(c.fs_type);
  j["stream"] = c.stream ? Json(FormatHex(*c.stream)) : Json();
  if (c.call == static_cast<uint64_t>(Call::kGpuSync)) {
    j["device_wide"] = c.device_wide;
    j["kernels"] = c.kernels.is_array() ? c.kernels : Json::MakeArray();
  }
  if (c.call == static_cast<uint64_t>(Call::kBatchWait) || c.call == static_cast<uint64_t>(Call::kCollective)) {
    j["where"] = c.where.empty() ? Json() : Json(c.where);
  }
  if (c.call == static_cast<uint64_t>(Call::kCollective)) {
    j["seq"] = c.seq != 0 ? Json(c.seq) : Json();
    j["count"] = c.count;
    j["dtype"] = c.dtype.empty() ? Json() : Json(c.dtype);
    j["group"] = c.group;
  }
  if (c.pid) j["pid"] = *c.pid;
  if (c.python_stack.empty()) {
    j["python_stack"] = Json();
  } else {
    Json s = Json::MakeArray();
    for (const std::string& line : c.python_stack) s.Append(line);
    j["python_stack"] = std::move(s);
  }
  j["comm"] = c.comm.empty() ? Json() : Json(c.comm);
  return j;
}

}  // namespace colabtrace::analyzer::perf
