#include "ci/run_metrics.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <cctype>

namespace colabtrace::analyzer {
namespace {

uint64_t Unsigned(const Json& v) {
  if (!v.is_number()) return 0;
  const double d = v.number();
  if (d <= 0) return 0;
  const int64_t i = v.as_int();  // exact for integers up to INT64_MAX
  if (i >= 0) return static_cast<uint64_t>(i);
  return d >= 18446744073709551615.0 ? UINT64_MAX : static_cast<uint64_t>(d);
}

// The value of metric `index` for one processes[] entry.
uint64_t ProcessMetric(const Json& p, size_t index) {
  const std::string_view name = kMetrics[index].source.empty() ? kMetrics[index].name : kMetrics[index].source;
  if (name == "processes") return 1;
  if (name.starts_with("steps.")) {
    const Json* steps = p.Find("steps");
    if (steps == nullptr || !steps->is_object()) return 0;
    if (name == "steps.input_wait_percent") return Unsigned(Json(std::round((*steps)["input_wait_fraction"].number() * 100.0)));
    if (name == "steps.gpu_allocations_per_step") {
      const uint64_t count = Unsigned((*steps)["count"]);
      const Json* gpu = p.Find("gpu");
      const uint64_t allocations = gpu && gpu->is_object() ? Unsigned((*gpu)["allocations"]) : 0;
      return count ? (allocations + count / 2) / count : 0;
    }
    return Unsigned((*steps)[name.substr(6)]);
  }
  if (const size_t dot = name.find('.'); dot != std::string_view::npos) {
    return Unsigned(p[name.substr(0, dot)][name.substr(dot + 1)]);
  }
  return Unsigned(p[name]);
}

void Merge(MetricValues& into, const MetricValues& v) {
  for (size_t i = 0; i < kMetricCount; ++i) {
    into[i] = kMetrics[i].merge == MetricMerge::kSum ? into[i] + v[i] : std::max(into[i], v[i]);
  }
}

}  // namespace

std::optional<size_t> FindMetric(std::string_view name) {
  for (size_t i = 0; i < kMetricCount; ++i) {
    if (kMetrics[i].name == name) return i;
  }
  return std::nullopt;
}

const RoleMetrics* RunMetrics::FindRole(std::string_view role) const {
  for (const auto& r : roles) {
    if (r.role == role) return &r;
  }
  return nullptr;
}

const FindingPresence* RunMetrics::FindFinding(std::string_view id) const {
  for (const auto& f : findings) {
    if (f.id == id) return &f;
  }
  return nullptr;
}

namespace {

std::string ScalarText(const Json& v) {
  if (v.is_string()) return v.str();
  if (v.is_null()) return "";
  return v.Dump(0);
}

RunEnvironment MeasureEnvironment(const Json& root) {
  RunEnvironment env;
  if (const Json* procs = root.Find("processes"); procs && procs->is_array()) {
    for (const Json& p : procs->array()) {
      if (const Json* host = p.Find("host"); host && host->is_object()) {
        for (const auto& [key, value] : host->object()) env.host[key].insert(ScalarText(value));
      }
      const Json* gpu = p.Find("gpu");
      const Json* versions = gpu && gpu->is_object() ? gpu->Find("versions") : nullptr;
      if (versions && versions->is_array()) {
        for (const Json& v : versions->array()) {
          if (const Json* d = v.Find("driver"); d && d->as_int() > 0) env.host["cuda.driver"].insert(ScalarText(*d));
          if (const Json* r = v.Find("runtime"); r && r->as_int() > 0) env.host["cuda.runtime"].insert(ScalarText(*r));
        }
      }
    }
  }
  if (const Json* libs = root.Find("libraries"); libs && libs->is_array()) {
    for (const Json& l : libs->array()) {
      const Json* path = l.Find("path");
      if (!path || !path->is_string() || path->str().empty()) continue;
      const Json* soname = l.Find("soname");
      const std::string& p = path->str();
      const std::string key = soname && soname->is_string() && !soname->str().empty()
                                  ? soname->str()
                                  : p.substr(p.rfind('/') + 1);
      env.libraries[key].insert(p);
    }
  }
  const Json* python = root.Find("python");
  const Json* packages = python && python->is_object() ? python->Find("packages") : nullptr;
  if (packages && packages->is_array()) {
    for (const Json& pkg : packages->array()) {
      const Json* name = pkg.Find("name");
      const Json* version = pkg.Find("version");
      if (!name || !name->is_string()) continue;
      env.python_packages[name->str()].insert(version ? ScalarText(*version) : "");
    }
  }
  return env;
}

}  // namespace

RunMetrics MeasureRun(const ReportBuilder& report) {
  RunMetrics run;
  run.environment = MeasureEnvironment(report.document());
  run.total.role = "total";
  const Json& root = report.document();
  std::map<std::string, RoleMetrics> roles;
  if (const Json* procs = root.Find("processes"); procs && procs->is_array()) {
    for (const Json& p : procs->array()) {
      MetricValues v{};
      for (size_t i = 0; i < kMetricCount; ++i) v[i] = ProcessMetric(p, i);
      const int64_t pid = p["pid"].as_int();
      RoleMetrics& r = roles[ProcessRole(p)];
      Merge(r.values, v);
      r.pids.push_back(pid);
      Merge(run.total.values, v);
      run.total.pids.push_back(pid);
    }
  }
  for (auto& [name, r] : roles) {
    r.role = name;
    run.roles.push_back(std::move(r));
  }
  // The run's wall time is its span, not its longest process.
  const auto& traces = report.traces();
  if (!traces.empty()) {
    uint64_t first = UINT64_MAX, last = 0;
    for (const auto& t : traces) {
      first = std::min(first, t.start_ns());
      last = std::max(last, t.end_ns());
    }
    run.total.values[*FindMetric("duration_ns")] = last > first ? last - first : 0;
  }
  // Whole-run GPU figures come from the GPU analysis's totals when it wrote them (its
  // peak is the peak of the sum over processes, not the largest single peak).
  if (const Json* gpu = root.Find("gpu"); gpu && gpu->is_object()) {
    for (size_t i = 0; i < kMetricCount; ++i) {
      const std::string_view name = kMetrics[i].name;
      if (!name.starts_with("gpu.")) continue;
      if (const Json* v = gpu->Find(name.substr(4)); v && v->is_number()) run.total.values[i] = Unsigned(*v);
    }
  }
  // Findings from the typed report, not from its JSON.
  std::map<std::string, FindingPresence> findings;
  for (const Finding& f : report.findings()) {
    FindingPresence& fp = findings[f.id];
    if (fp.count == 0) {
      fp.id = f.id;
      fp.severity = f.severity;
      fp.summary = f.summary;
    }
    fp.severity = std::max(fp.severity, f.severity);
    ++fp.count;
    if (f.pid != 0) fp.pids.push_back(f.pid);
  }
  for (auto& [id, f] : findings) run.findings.push_back(std::move(f));
  run.warnings = report.warnings();
  return run;
}

std::optional<RunMetrics> MeasureInputs(const std::vector<std::string>& inputs,
                                        const ReportOptions& options,
                                        std::vector<std::string>* errors) {
  const bool progress = isatty(2);
  if (progress) std::fputs("colabtrace: reading traces...\r", stderr);
  TraceSet set = LoadTraces(inputs);
  if (progress) std::fputs("                              \r", stderr);
  if (!set.errors.empty() || set.traces.empty()) {
    *errors = std::move(set.errors);
    if (errors->empty()) errors->push_back("no readable trace");
    return std::nullopt;
  }
  // Unreadable files inside a directory are named and skipped, as `report` does.
  for (const auto& e : set.skipped) std::fprintf(stderr, "colabtrace: warning: skipped %s\n", e.c_str());
  auto report = BuildReport(set.traces, options);
  return MeasureRun(*report);
}

std::string FormatMetric(uint64_t v) { return std::to_string(v); }

}  // namespace colabtrace::analyzer
