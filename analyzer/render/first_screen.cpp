#include "render/first_screen.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "io/file_stats.h"
#include "model/process_facts.h"
#include "perf/rules/rules.h"
#include "render/text/sections.h"

namespace colabtrace::analyzer {
namespace {

// The findings shown before all others, in this order.
constexpr std::string_view kLeadingFindings[] = {"gpu.device-fault"};

int Lead(const Finding& f) {
  for (size_t i = 0; i < std::size(kLeadingFindings); ++i) {
    if (f.id == kLeadingFindings[i]) return static_cast<int>(i);
  }
  return static_cast<int>(std::size(kLeadingFindings));
}

// A limit counts as reached from here (host.memory-pressure's threshold).
constexpr double kAlarmFraction = 0.9;

std::string Plural(size_t n, std::string_view one, std::string_view many) {
  return std::to_string(n) + " " + std::string(n == 1 ? one : many);
}

// 0.034 -> "3%", 0.003 -> "<1%", 0 -> "0%".
std::string Percent(double fraction) {
  if (!std::isfinite(fraction) || fraction <= 0) return "0%";
  const double p = fraction * 100;
  if (p < 0.5) return "<1%";
  if (p > 1e6) return ">1000000%";
  return std::to_string(static_cast<long long>(std::lround(p))) + "%";
}

uint64_t U64(const Json* v) {
  if (v == nullptr || !v->is_number() || !(v->number() > 0)) return 0;
  return v->number() >= 1.8e19 ? UINT64_MAX : static_cast<uint64_t>(v->as_int());
}

double Fraction(const Json& o, std::string_view key) {
  const Json* v = o.Find(key);
  return v != nullptr && v->is_number() ? v->number() : 0;
}

// "300 optimizer steps", "1 step (colabtrace.step markers)", "12 steps (DataLoader batches)".
std::string StepCountText(const Json& steps) {
  const uint64_t n = U64(steps.Find("count"));
  const std::string noun = n == 1 ? "step" : "steps";
  const Json* s = steps.Find("source");
  const std::string src = s != nullptr && s->is_string() ? s->str() : "";
  if (src == "optimizer") return std::to_string(n) + " optimizer " + noun;
  if (src == "marker") return std::to_string(n) + " " + noun + " (colabtrace.step markers)";
  if (src == "dataloader") return std::to_string(n) + " " + noun + " (DataLoader batches)";
  return std::to_string(n) + " " + noun;
}

void ProcessVitals(const Json* rows, std::vector<VitalSign>& out) {
  const size_t n = rows != nullptr && rows->is_array() ? rows->array().size() : 0;
  std::map<std::string, size_t> ends;
  for (size_t i = 0; i < n; ++i) ++ends[text::EndSummary(rows->array()[i]["end"])];
  std::vector<std::pair<std::string, size_t>> order(ends.begin(), ends.end());
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string v = std::to_string(n);
  if (order.size() == 1) {
    v += n == 1 ? ", " + order[0].first : ", all " + order[0].first;
  } else {
    for (size_t k = 0; k < order.size() && k < 4; ++k) {
      v += (k == 0 ? ": " : ", ") + std::to_string(order[k].second) + " " + order[k].first;
    }
    if (order.size() > 4) v += ", ...";
  }
  const bool failed = std::any_of(order.begin(), order.end(), [](const auto& e) {
    return e.first != "exited 0";
  });
  out.push_back({"processes", v, failed});
}

// The rows whose parent is no row (the job's main processes) that exited non-zero.
std::vector<std::pair<int64_t, int64_t>> FailedMainProcesses(const Json* rows) {
  std::vector<std::pair<int64_t, int64_t>> out;
  if (rows == nullptr || !rows->is_array()) return out;
  std::set<int64_t> pids;
  for (const Json& p : rows->array()) {
    if (const Json* pid = p.Find("pid"); pid != nullptr && pid->is_number()) pids.insert(pid->as_int());
  }
  for (const Json& p : rows->array()) {
    const Json* pid = p.Find("pid");
    const Json* ppid = p.Find("ppid");
    const Json* end = p.Find("end");
    if (pid == nullptr || !pid->is_number() || end == nullptr || !end->is_object()) continue;
    if (ppid != nullptr && ppid->is_number() && pids.count(ppid->as_int()) > 0) continue;
    const Json* kind = end->Find("kind");
    const Json* code = end->Find("code");
    if (kind == nullptr || !kind->is_string() || kind->str() != "exited") continue;
    if (code == nullptr || !code->is_number() || code->as_int() == 0) continue;
    out.emplace_back(pid->as_int(), code->as_int());
  }
  return out;
}

std::string FormatCount(uint64_t n);

void StepVitals(const Json* rows, std::vector<VitalSign>& out) {
  if (rows == nullptr || !rows->is_array()) return;
  std::vector<const Json*> stepping;
  for (const Json& p : rows->array()) {
    const Json* s = p.Find("steps");
    if (s != nullptr && s->is_object() && U64(s->Find("count")) > 0) stepping.push_back(&p);
  }
  const bool several = stepping.size() > 1;
  for (size_t k = 0; k < stepping.size() && k < kVitalRows; ++k) {
    const Json& p = *stepping[k];
    const Json& s = p["steps"];
    const std::string who = several ? "pid " + std::to_string(p["pid"].as_int()) + ": " : "";
    std::string v = who + StepCountText(s) + (several ? "" : " in pid " + std::to_string(p["pid"].as_int()));
    if (const uint64_t median = U64(s.Find("median_ns")); median > 0) v += ", median " + FormatDurationNs(median);
    if (const uint64_t p90 = U64(s.Find("p90_ns")); p90 > 0) v += " (p90 " + FormatDurationNs(p90) + ")";
    if (const Json* i = s.Find("interrupted"); i != nullptr && i->boolean()) {
      v += "; the last one was interrupted";
    }
    // The window gave steps up: what the report saw in full, and what only in sums.
    if (const Json* a = s.Find("from_aggregates"); a != nullptr && a->boolean()) {
      v += "; the last " + FormatCount(U64(s.Find("timed_in_full"))) + " in full, all of them in sums";
    }
    out.push_back({"steps", v, false});
    const double wait = Fraction(s, "input_wait_fraction");
    out.push_back({"input wait", who + Percent(wait) + " of step time after warm-up (GPU sync " +
                                     Percent(Fraction(s, "gpu_sync_fraction")) + ", file I/O " +
                                     Percent(Fraction(s, "io_fraction")) + ", other " +
                                     Percent(Fraction(s, "other_fraction")) + ")",
                   wait >= perf::kInputBoundWarning});
  }
  if (stepping.size() > kVitalRows) {
    out.push_back({"steps", std::to_string(stepping.size() - kVitalRows) + " more stepping processes", false});
  }
}

void GpuVitals(const Json& root, std::vector<VitalSign>& out) {
  const Json* gpu = root.Find("gpu");
  if (gpu == nullptr || !gpu->is_object()) return;
  const Json* devices = gpu->Find("devices");
  const size_t n = devices != nullptr && devices->is_array() ? devices->array().size() : 0;
  if (n == 0) {
    if (const uint64_t peak = U64(gpu->Find("peak_bytes")); peak > 0) {
      out.push_back({"GPU memory", FormatBytes(peak) + " peak (device capacity not recorded)", false});
    }
    return;
  }
  for (size_t k = 0; k < n && k < kVitalRows; ++k) {
    const Json& d = devices->array()[k];
    const uint64_t peak = U64(d.Find("peak_bytes")), total = U64(d.Find("total_bytes"));
    std::string v = FormatBytes(peak) + " peak";
    bool alarm = false;
    if (total > 0) {
      const double f = static_cast<double>(peak) / static_cast<double>(total);
      v += " of " + FormatBytes(total) + " (" + Percent(f) + ")";
      alarm = f >= kAlarmFraction;
    }
    v += " on GPU " + std::to_string(d["index"].as_int());
    if (const Json* name = d.Find("name"); name != nullptr && name->is_string()) v += " (" + name->str() + ")";
    out.push_back({"GPU memory", v, alarm});
  }
  if (n > kVitalRows) out.push_back({"GPU memory", std::to_string(n - kVitalRows) + " more devices", false});
}

std::string BasisText(const std::string& basis) {
  if (basis == "pss") return "PSS";
  if (basis.starts_with("rss")) return "RSS";
  return basis;
}

void HostVitals(const Json& root, const Json* rows, std::vector<VitalSign>& out) {
  const Json* hosts = root.Find("memory");
  hosts = hosts != nullptr && hosts->is_object() ? hosts->Find("hosts") : nullptr;
  const size_t n = hosts != nullptr && hosts->is_array() ? hosts->array().size() : 0;
  size_t shown = 0;
  for (size_t k = 0; k < n && shown < kVitalRows; ++k) {
    const Json& h = hosts->array()[k];
    if (!h.is_object()) continue;
    const uint64_t peak = U64(h.Find("peak_bytes")), limit = U64(h.Find("limit_bytes"));
    if (limit == 0) continue;
    const double f = static_cast<double>(peak) / static_cast<double>(limit);
    std::string v = FormatBytes(peak) + " peak";
    if (const Json* b = h.Find("basis"); b != nullptr && b->is_string()) {
      v += " (" + BasisText(b->str());
      // The tree's summed RSS never came near the limit: PSS (at most RSS) was not needed.
      if (const Json* needed = h.Find("pss_needed"); b->str() == "pss" && needed != nullptr && !needed->boolean()) {
        v += "; the summed RSS, " + FormatBytes(U64(h.Find("rss_sum_peak_bytes"))) + " at most, stayed below 90%";
      }
      v += ")";
    }
    v += " of " + FormatBytes(limit);
    if (const Json* s = h.Find("limit_source"); s != nullptr && s->is_string()) v += " " + s->str();
    v += " (" + Percent(f) + ")";
    if (const Json* name = h.Find("host"); n > 1 && name != nullptr && name->is_string()) v += " on " + name->str();
    out.push_back({"host memory", v, f >= kAlarmFraction});
    ++shown;
  }
  if (shown == 0) {
    // No limit known: the largest process's RSS.
    uint64_t peak = 0;
    int64_t pid = 0;
    if (rows != nullptr && rows->is_array()) {
      for (const Json& p : rows->array()) {
        if (const uint64_t r = U64(p.Find("peak_rss_bytes")); r > peak) peak = r, pid = p["pid"].as_int();
      }
    }
    if (peak > 0) {
      out.push_back({"host memory", FormatBytes(peak) + " peak RSS (pid " + std::to_string(pid) +
                                        "); no memory limit recorded", false});
    }
  } else if (n > shown) {
    out.push_back({"host memory", std::to_string(n - shown) + " more hosts", false});
  }
}

void IoVitals(const ReportBuilder& report, std::vector<VitalSign>& out) {
  const Json* io = report.document().Find("io");
  const Json* totals = io != nullptr && io->is_object() ? io->Find("totals") : nullptr;
  if (totals == nullptr || !totals->is_object()) return;
  const uint64_t opens = U64(totals->Find("opens")), reads = U64(totals->Find("reads")),
                 bytes = U64(totals->Find("bytes_read")), stats = U64(totals->Find("stats"));
  if (opens == 0 && reads == 0 && stats == 0) return;
  // Time in file calls over the job's processes (the totals' own read_ns is reads only).
  uint64_t io_ns = 0;
  for (const io::ProcessIo& p : report.run().Get<io::IoModel>().processes) {
    if (!p.run_wrapper) io_ns += p.open_ns + p.read_ns + p.stat_ns;
  }
  out.push_back({"file I/O", std::to_string(opens) + " opens, " + std::to_string(reads) + " reads (" +
                                 FormatBytes(bytes) + "), " + std::to_string(stats) + " stats; " +
                                 FormatDurationNs(io_ns) + " in these calls",
                 false});
}

// "412 M", "3.1 M", "9,870": a call count to three figures.
std::string FormatCount(uint64_t n) {
  char buf[32];
  if (n < 10000) {
    std::snprintf(buf, sizeof(buf), "%llu", static_cast<unsigned long long>(n));
  } else if (n < 1000000) {
    std::snprintf(buf, sizeof(buf), "%.3g k", static_cast<double>(n) / 1e3);
  } else if (n < 1000000000) {
    std::snprintf(buf, sizeof(buf), "%.3g M", static_cast<double>(n) / 1e6);
  } else {
    std::snprintf(buf, sizeof(buf), "%.3g G", static_cast<double>(n) / 1e9);
  }
  return buf;
}

// "9 min 58 s", "2 h 5 min"; under a minute as FormatDurationNs says it.
std::string FormatSpan(uint64_t ns) {
  const uint64_t s = ns / 1000000000ull;
  if (s < 60) return FormatDurationNs(ns);
  if (s < 3600) return std::to_string(s / 60) + " min " + std::to_string(s % 60) + " s";
  return std::to_string(s / 3600) + " h " + std::to_string(s % 3600 / 60) + " min";
}

// What the traces hold of the file I/O calls (and steps, since format 1.4) in full, once a
// window rolled or the cap cut it (processes[].window): "412 M file I/O calls, of which the
// last 9 min 58 s in full (3.1 M)".
// The span is the shortest of the processes that gave events up.
void WindowVitals(const ReportBuilder& report, std::vector<VitalSign>& out) {
  uint64_t total = 0, in_full = 0, span = UINT64_MAX, compacted = 0;
  bool rolled = false, capped = false, steps = false;
  for (const ProcessTrace& t : report.traces()) {
    if (IsRunWrapper(t)) continue;
    steps = steps || !t.step_aggregates.series.empty();  // its step records count as events too
    const TraceWindow& w = t.window;
    total += w.events_total;
    in_full += std::min(w.events_in_full, w.events_total);
    capped = capped || w.capped;
    compacted += w.compacted;
    if (w.events_total > w.events_in_full && !w.compacted) {
      rolled = true;
      span = std::min(span, t.end_ns() > w.full_from_ns ? t.end_ns() - w.full_from_ns : 0);
    }
  }
  if (!rolled && !capped && compacted == 0) return;
  std::string value = FormatCount(total) + (steps ? " file I/O calls and steps, of which " : " file I/O calls, of which ");
  if (rolled) {
    value += "the last " + FormatSpan(span) + " in full (" + FormatCount(in_full) + ")";
  } else {
    value += in_full == total ? std::string("all in full") : FormatCount(in_full) + " in full";
  }
  if (capped) value += "; the trace reached its size cap (COLABTRACE_MAX_MB) and kept fewer in full";
  if (compacted > 0) {
    value += "; the traces of " + FormatCount(compacted) + (compacted == 1 ? " ended process" : " ended processes") +
             " were compacted to their sums (COLABTRACE_JOB_MAX_MB)";
  }
  out.push_back({"I/O window", value, false});
}

}  // namespace

std::vector<const Finding*> FindingsInReadingOrder(const std::vector<Finding>& findings) {
  std::vector<const Finding*> ordered;
  ordered.reserve(findings.size());
  for (const Finding& f : findings) ordered.push_back(&f);
  std::stable_sort(ordered.begin(), ordered.end(), [](const Finding* a, const Finding* b) {
    const int la = a->severity == Severity::kError ? Lead(*a) : INT32_MAX;
    const int lb = b->severity == Severity::kError ? Lead(*b) : INT32_MAX;
    return la < lb;
  });
  return ordered;
}

std::vector<FindingFold> FoldFindings(const std::vector<Finding>& findings) {
  std::vector<FindingFold> out;
  std::map<std::string_view, size_t> info_fold;  // id -> index in out
  for (const Finding* f : FindingsInReadingOrder(findings)) {
    if (f->severity != Severity::kInfo) {
      out.push_back({f->id, f->severity, {f}});
      continue;
    }
    auto [it, fresh] = info_fold.emplace(f->id, out.size());
    if (fresh) out.push_back({f->id, Severity::kInfo, {}});
    out[it->second].findings.push_back(f);
  }
  return out;
}

std::string FirstScreen::VerdictLine() const {
  const std::string in =
      " in " + (processes == 0 ? std::string("no processes") : Plural(processes, "process", "processes"));
  const std::string info = infos > 0 ? " (" + std::to_string(infos) + " info)" : "";
  if (healthy()) return "Healthy: no errors or warnings" + in + info;
  if (errors == 0 && warnings == 0) {
    const auto& [pid, code] = failed_main.front();
    std::string s = "Failed: the main process (pid " + std::to_string(pid) + ") exited " + std::to_string(code);
    if (failed_main.size() > 1) s += " (and " + Plural(failed_main.size() - 1, "other", "others") + ")";
    return s + ", and no finding says why" + info;
  }
  std::string s;
  if (errors > 0) s += Plural(errors, "error", "errors");
  if (warnings > 0) s += (s.empty() ? "" : ", ") + Plural(warnings, "warning", "warnings");
  s += in + ":";
  // The distinct ids of the worst findings.
  std::vector<std::string_view> ids;
  for (const Finding* f : worst) {
    if (std::find(ids.begin(), ids.end(), f->id) == ids.end()) ids.push_back(f->id);
  }
  for (size_t k = 0; k < ids.size(); ++k) s += (k == 0 ? " " : ", ") + std::string(ids[k]);
  if (errors + warnings > worst.size()) s += " +" + std::to_string(errors + warnings - worst.size()) + " more";
  return s;
}

FirstScreen FirstScreen::Of(const ReportBuilder& report) {
  FirstScreen out;
  const Json& root = report.document();
  const Json* rows = root.Find("processes");
  out.processes = rows != nullptr && rows->is_array() ? rows->array().size() : 0;
  for (const Finding* f : FindingsInReadingOrder(report.findings())) {
    switch (f->severity) {
      case Severity::kError: ++out.errors; break;
      case Severity::kWarning: ++out.warnings; break;
      case Severity::kInfo: ++out.infos; break;
    }
    if (f->severity != Severity::kInfo && out.worst.size() < kVerdictFindings) out.worst.push_back(f);
  }
  out.failed_main = FailedMainProcesses(rows);
  ProcessVitals(rows, out.vitals);
  uint64_t start = UINT64_MAX, end = 0;
  for (const ProcessTrace& t : report.traces()) {
    start = std::min(start, t.start_ns());
    end = std::max(end, t.end_ns());
  }
  if (start != UINT64_MAX && end > start) out.vitals.push_back({"wall time", FormatDurationNs(end - start), false});
  StepVitals(rows, out.vitals);
  GpuVitals(root, out.vitals);
  HostVitals(root, rows, out.vitals);
  IoVitals(report, out.vitals);
  WindowVitals(report, out.vitals);
  return out;
}

}  // namespace colabtrace::analyzer
