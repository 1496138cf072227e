#include "export/trace_event_export.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <unordered_map>

#include "model/process_facts.h"
#include "model/run_model.h"
#include "model/symbolize.h"
#include "core/json.h"
#include "report/report.h"

namespace colabtrace::analyzer {
namespace {

using format::FieldKind;
using format::RecordType;

bool IsInstant(RecordType t) {
  switch (t) {
    case RecordType::Fork:
    case RecordType::Spawn:
    case RecordType::ExecStart:
    case RecordType::ExecFailed:
    case RecordType::Exit:
    case RecordType::Signal:
    case RecordType::LibLoad:
    case RecordType::LibUnload:
      return true;
    default:
      return false;
  }
}

// Records whose Dur is a total over several calls rather than the span of one call
// (records.h: a readdir scan summary). A slice would misplace them, so they are instants
// that carry their dur in args.
bool DurIsATotal(RecordType t, uint64_t api) {
  return t == RecordType::IoDir && (api == static_cast<uint64_t>(format::IoApi::kReaddir) ||
                                    api == static_cast<uint64_t>(format::IoApi::kReaddir64));
}

// Instants that concern the whole process rather than one thread.
bool IsProcessScoped(RecordType t) { return t == RecordType::Exit || t == RecordType::Signal; }

// The area of a record type, from the code ranges of records.h.
const char* Category(RecordType t) {
  const unsigned code = static_cast<unsigned>(t);
  if (code < 32) return "process";
  if (code < 64) return "io";
  if (code < 96) return "gpu";
  if (code < 128) return "libs";
  return "cupti";
}

// The name of a record's api value, from its area's table in records.h; nullptr when the
// area has none or the value is unknown.
const char* ApiName(RecordType t, uint64_t api) {
  const unsigned code = static_cast<unsigned>(t);
  if (code >= 32 && code < 64) return format::IoApiName(api);
  if (code >= 64 && code < 96) return format::GpuApiName(api);
  return nullptr;
}

// What the record table says about a type's fields, found once per type.
struct RecordShape {
  bool has_dur = false;
  bool has_api = false;
};

template <class R> const RecordShape& ShapeOf() {
  static const RecordShape shape = [] {
    RecordShape s;
    R r{};
    r.Visit([&](const char* field, auto tag, const auto&) {
      if (decltype(tag)::kind == FieldKind::kDur) s.has_dur = true;
      if (std::string_view(field) == "api") s.has_api = true;
    });
    return s;
  }();
  return shape;
}


// The job's command line: the executable's basename, then argv[1:].
std::string ProcessName(const RunModel& run, const ProcessTrace& t) {
  const ProcessFacts& f = run.facts(t);
  std::string name;
  const std::vector<std::string_view> argv = f.JobArgv(t);
  name = std::string(Basename(f.JobExe(t)));
  if (name.empty() && !argv.empty()) name = std::string(Basename(argv[0]));
  if (name.empty()) return "pid " + std::to_string(t.pid());
  for (size_t i = 1; i < argv.size() && name.size() < 160; ++i) {
    name += ' ';
    name += argv[i];
  }
  if (name.size() > 160) name = name.substr(0, 157) + "...";
  return name;
}

class TraceEventWriter {
 public:
  TraceEventWriter(const RunModel& run, const std::function<bool(std::string_view)>& sink,
                   TraceEventCounts* counts)
      : run_(run), traces_(run.traces()), sink_(sink), counts_(counts) {}

  bool Run() {
    origin_ = UINT64_MAX;
    uint64_t origin_realtime = 0;
    for (const auto& t : traces_) {
      if (t.start_ns() < origin_) origin_ = t.start_ns(), origin_realtime = t.start_realtime_ns();
    }
    if (origin_ == UINT64_MAX) origin_ = 0;
    out_ = "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"exporter\":\"colabtrace export\","
           "\"time_origin_realtime_ns\":" + std::to_string(origin_realtime) +
           ",\"processes\":" + std::to_string(traces_.size()) + "},\"traceEvents\":[";
    std::vector<size_t> order(traces_.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return traces_[a].start_ns() < traces_[b].start_ns();
    });
    std::set<int64_t> used_pids;
    for (size_t rank = 0; rank < order.size(); ++rank) {
      const ProcessTrace& t = traces_[order[rank]];
      // Two traces of one pid (pid reuse, or runs of several machines) stay apart.
      int64_t pid = t.pid();
      while (!used_pids.insert(pid).second) pid += 1 << 24;
      if (!Process(t, pid, rank)) return false;
    }
    out_ += "\n]}\n";
    return Flush(true);
  }

 private:
  bool Flush(bool force) {
    if (!force && out_.size() < (1u << 20)) return true;
    const bool ok = sink_(out_);
    out_.clear();
    return ok;
  }

  // Opens an event object with the fields every event has.
  void Begin(const char* ph, std::string_view name, const char* cat, int64_t pid, int64_t tid) {
    out_ += events_++ ? ",\n{" : "\n{";
    out_ += "\"ph\":\"";
    out_ += ph;
    out_ += "\",\"name\":";
    AppendJsonString(out_, name);
    if (cat) {
      out_ += ",\"cat\":\"";
      out_ += cat;
      out_ += '"';
    }
    out_ += ",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(tid);
  }

  // Appends ,"key":<microseconds> for a time or duration in nanoseconds.
  void Micros(const char* key, int64_t ns) {
    char buf[48];
    const uint64_t mag = ns < 0 ? 0 - static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
    std::snprintf(buf, sizeof(buf), ",\"%s\":%s%llu.%03llu", key, ns < 0 ? "-" : "",
                  static_cast<unsigned long long>(mag / 1000), static_cast<unsigned long long>(mag % 1000));
    out_ += buf;
  }

  void At(uint64_t ts) { Micros("ts", static_cast<int64_t>(ts - origin_)); }

  void Metadata(const char* what, int64_t pid, int64_t tid, const char* key, const Json& value) {
    Begin("M", what, nullptr, pid, tid);
    out_ += ",\"args\":{";
    AppendJsonString(out_, key);
    out_ += ':' + value.Dump(-1) + "}}";
    if (counts_) ++counts_->metadata;
  }

  void Counter(std::string_view name, int64_t pid, uint64_t ts, uint64_t bytes) {
    Begin("C", name, "memory", pid, pid);
    At(ts);
    out_ += ",\"args\":{\"bytes\":" + std::to_string(bytes) + "}}";
    if (counts_) ++counts_->counter;
  }

  template <class R> void Args(const ProcessTrace& t, const R& r) {
    out_ += ",\"args\":{";
    bool first = true;
    r.Visit([&](const char* field, auto tag, const auto& value) {
      constexpr FieldKind kKind = decltype(tag)::kind;
      if (!first) out_ += ',';
      first = false;
      AppendJsonString(out_, field);
      out_ += ':';
      char buf[40];
      if constexpr (kKind == FieldKind::kBytes) {
        std::string hex;
        for (uint32_t i = 0; i < value.size && i < 64; ++i) {
          std::snprintf(buf, sizeof(buf), "%02x", value.data[i]);
          hex += buf;
        }
        if (value.size > 64) hex += "...";
        AppendJsonString(out_, hex);
      } else if constexpr (kKind == FieldKind::kStr) {
        if (value == 0) {
          out_ += "null";
        } else {
          AppendJsonString(out_, t.Str(value));
        }
      } else if constexpr (kKind == FieldKind::kStack) {
        out_ += value == 0 ? std::string("null") : StackJson(t, value);
      } else if constexpr (kKind == FieldKind::kHex) {
        std::snprintf(buf, sizeof(buf), "\"0x%llx\"", static_cast<unsigned long long>(value));
        out_ += buf;
      } else {
        out_ += std::to_string(value);
      }
    });
    out_ += '}';
  }

  const std::string& StackJson(const ProcessTrace& t, uint64_t id) {
    auto it = stacks_.find(id);
    if (it != stacks_.end()) return it->second;
    Json frames = Json::MakeArray();
    for (const std::string& f : run_.symbols().Stack(t, t.Stack(id))) frames.Append(f);
    return stacks_.emplace(id, frames.Dump(-1)).first->second;
  }

  template <class Records>  // a std::vector<Event<R>> or a PackedTable<R>
  bool Table(const ProcessTrace& t, const Records& table, int64_t pid) {
    using R = typename Records::value_type::Record;
    const RecordShape& shape = ShapeOf<R>();
    if (!shape.has_dur && !IsInstant(R::kType)) return true;
    for (const auto& ev : table) {
      uint64_t dur = 0, api = 0;
      uint32_t tid = ev.tid;
      bool have_dur = false;
      ev.Visit([&](const char* field, auto tag, const auto& value) {
        constexpr FieldKind kKind = decltype(tag)::kind;
        if constexpr (kKind == FieldKind::kDur) {
          if (!have_dur) dur = value, have_dur = true;
        } else if constexpr (kKind == FieldKind::kU) {
          const std::string_view f(field);
          if (f == "api") api = value;
          // A signal names the thread it hit; the handler's chunk may be another's.
          if (f == "tid" && R::kType == RecordType::Signal && value != 0) tid = static_cast<uint32_t>(value);
        }
      });
      std::string name(R::kName);
      if (shape.has_api) {
        const char* api_name = ApiName(R::kType, api);
        name += api_name ? " (" + std::string(api_name) + ")" : " (api " + std::to_string(api) + ")";
      }
      if (shape.has_dur && !DurIsATotal(R::kType, api)) {
        Begin("X", name, Category(R::kType), pid, tid);
        At(ev.ts);
        Micros("dur", static_cast<int64_t>(dur));
        if (counts_) ++counts_->complete;
      } else {
        Begin("i", name, Category(R::kType), pid, tid);
        At(ev.ts);
        out_ += IsProcessScoped(R::kType) ? ",\"s\":\"p\"" : ",\"s\":\"t\"";
        if (counts_) ++counts_->instant;
      }
      Args(t, ev);
      out_ += '}';
      if (!Flush(false)) return false;
    }
    return true;
  }

  // Live GPU bytes per device, frees paired with allocations by address.
  bool GpuCounters(const ProcessTrace& t, int64_t pid) {
    struct Live {
      uint64_t size;
      int64_t device;
    };
    std::unordered_map<uint64_t, Live> live;
    std::map<int64_t, uint64_t> per_device;
    const auto& allocs = t.records.GpuAlloc;
    const auto& frees = t.records.GpuFree;
    size_t a = 0, f = 0;
    while (a < allocs.size() || f < frees.size()) {
      const bool take_alloc = f >= frees.size() || (a < allocs.size() && allocs[a].ts <= frees[f].ts);
      uint64_t ts = 0;
      int64_t device = 0;
      if (take_alloc) {
        const auto& r = allocs[a++];
        if (r.rc != 0 || r.addr == 0) continue;
        ts = r.ts;
        device = r.device;
        if (auto it = live.find(r.addr); it != live.end()) {  // its free was not seen
          per_device[it->second.device] -= std::min(per_device[it->second.device], it->second.size);
        }
        live[r.addr] = {r.size, r.device};
        per_device[r.device] += r.size;
      } else {
        const auto& r = frees[f++];
        auto it = r.rc == 0 ? live.find(r.addr) : live.end();
        if (it == live.end()) continue;
        ts = r.ts;
        device = it->second.device;
        per_device[device] -= std::min(per_device[device], it->second.size);
        live.erase(it);
      }
      Counter("GPU " + std::to_string(device) + " live", pid, ts, per_device[device]);
      if (!Flush(false)) return false;
    }
    return true;
  }

  bool Process(const ProcessTrace& t, int64_t pid, size_t rank) {
    Metadata("process_name", pid, pid, "name", Json(ProcessName(run_, t)));
    Metadata("process_sort_index", pid, pid, "sort_index", Json(static_cast<uint64_t>(rank)));
    const ProcessFacts& facts = run_.facts(t);
    if (facts.end_kind == EndKind::kKilled) {
      Metadata("process_labels", pid, pid, "labels", Json("killed"));
    }
    stacks_.clear();  // stack ids are per trace
    std::map<uint32_t, std::string_view> thread_names;  // the last name of each thread wins
    for (const auto& tn : t.records.ThreadName) {
      const uint64_t named = static_cast<const format::ThreadName&>(tn).tid;  // the field
      thread_names[named != 0 ? static_cast<uint32_t>(named) : tn.tid] = t.Str(tn.name);
    }
    for (const auto& [tid, name] : thread_names) {
      Metadata("thread_name", pid, tid, "name", Json(name));
    }
#define CT_EXPORT_TABLE(code, Name, dumpname) \
  if (!Table(t, t.records.Name, pid)) return false;
    COLABTRACE_RECORD_TYPES(CT_EXPORT_TABLE)
#undef CT_EXPORT_TABLE
    for (const auto& s : t.records.Sample) {
      Counter("RSS", pid, s.ts, s.rss_bytes);
      if (s.cgroup_current != UINT64_MAX) Counter("cgroup memory.current", pid, s.ts, s.cgroup_current);
    }
    if (!GpuCounters(t, pid)) return false;
    if (facts.end_kind == EndKind::kKilled) {
      Begin("i", "killed", "process", pid, pid);
      At(t.end_ns());
      out_ += ",\"s\":\"p\",\"args\":{\"reason\":\"the trace ends with no exit record: SIGKILL, "
              "the OOM killer, or the machine stopped\"}}";
      if (counts_) ++counts_->instant;
    }
    return Flush(false);
  }

  const RunModel& run_;
  const std::vector<ProcessTrace>& traces_;
  const std::function<bool(std::string_view)>& sink_;
  TraceEventCounts* counts_;
  uint64_t origin_ = 0;
  uint64_t events_ = 0;
  std::string out_;
  std::unordered_map<uint64_t, std::string> stacks_;  // symbolized stacks of the current trace
};

}  // namespace

bool ExportTraceEvents(const std::vector<ProcessTrace>& traces,
                       const std::function<bool(std::string_view)>& sink,
                       TraceEventCounts* counts) {
  const RunModel run(traces);
  return TraceEventWriter(run, sink, counts).Run();
}

}  // namespace colabtrace::analyzer
