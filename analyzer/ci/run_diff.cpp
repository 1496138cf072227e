#include "ci/run_diff.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

namespace colabtrace::analyzer {
namespace {

RoleDelta Compare(std::string role, const RoleMetrics* a, const RoleMetrics* b) {
  RoleDelta d;
  d.role = std::move(role);
  for (size_t i = 0; i < kMetricCount; ++i) {
    MetricDelta m;
    m.metric = std::string(kMetrics[i].name);
    if (a) m.a = a->values[i];
    if (b) m.b = b->values[i];
    d.metrics.push_back(std::move(m));
  }
  return d;
}

std::optional<double> PercentChange(const MetricDelta& m) {
  if (!m.a || !m.b || *m.a == 0) return std::nullopt;
  return (static_cast<double>(*m.b) - static_cast<double>(*m.a)) * 100.0 / static_cast<double>(*m.a);
}

std::string DeltaText(const MetricDelta& m) {
  if (!m.a || !m.b) return "";
  if (*m.a == *m.b) return "=";
  const bool up = *m.b > *m.a;
  std::string s = (up ? "+" : "-") + std::to_string(up ? *m.b - *m.a : *m.a - *m.b);
  if (auto pct = PercentChange(m)) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), " (%+.1f%%)", *pct);
    s += buf;
  }
  return s;
}

Json SeverityJson(const std::optional<Severity>& s) {
  return s ? Json(std::string(SeverityName(*s))) : Json();
}

std::vector<SideBySide> SideBySides(const std::map<std::string, std::set<std::string>>& a,
                                    const std::map<std::string, std::set<std::string>>& b) {
  std::set<std::string> keys;
  for (const auto& [k, v] : a) keys.insert(k);
  for (const auto& [k, v] : b) keys.insert(k);
  std::vector<SideBySide> out;
  for (const std::string& k : keys) {
    SideBySide s;
    s.key = k;
    if (auto it = a.find(k); it != a.end()) s.a = it->second;
    if (auto it = b.find(k); it != b.end()) s.b = it->second;
    out.push_back(std::move(s));
  }
  return out;
}

std::string JoinValues(const std::set<std::string>& values) {
  if (values.empty()) return "-";
  std::string out;
  for (const std::string& v : values) out += (out.empty() ? "" : ", ") + (v.empty() ? "\"\"" : v);
  return out;
}

}  // namespace

RunDiff DiffRuns(const RunMetrics& a, const RunMetrics& b, std::string name_a, std::string name_b) {
  RunDiff d;
  d.name_a = std::move(name_a);
  d.name_b = std::move(name_b);
  d.roles.push_back(Compare("total", &a.total, &b.total));
  std::set<std::string> roles;
  for (const auto& r : a.roles) roles.insert(r.role);
  for (const auto& r : b.roles) roles.insert(r.role);
  for (const auto& r : roles) d.roles.push_back(Compare(r, a.FindRole(r), b.FindRole(r)));

  std::set<std::string> ids;
  for (const auto& f : a.findings) ids.insert(f.id);
  for (const auto& f : b.findings) ids.insert(f.id);
  for (const auto& id : ids) {
    const FindingPresence* fa = a.FindFinding(id);
    const FindingPresence* fb = b.FindFinding(id);
    FindingSides s;
    s.id = id;
    if (fa) s.a = fa->severity, s.count_a = fa->count, s.summary = fa->summary;
    if (fb) s.b = fb->severity, s.count_b = fb->count, s.summary = fb->summary;
    (fa && fb ? d.both : fa ? d.only_a : d.only_b).push_back(std::move(s));
  }
  d.host = SideBySides(a.environment.host, b.environment.host);
  d.libraries = SideBySides(a.environment.libraries, b.environment.libraries);
  d.python_packages = SideBySides(a.environment.python_packages, b.environment.python_packages);
  return d;
}

std::string RenderDiffText(const RunDiff& diff, bool color) {
  const char* bold = color ? "\033[1m" : "";
  const char* reset = color ? "\033[0m" : "";
  std::string out = std::string(bold) + "colabtrace diff" + reset + "\n  A: " + diff.name_a +
                    "\n  B: " + diff.name_b + "\n";
  char line[256];
  bool zeros = false;
  for (const RoleDelta& r : diff.roles) {
    auto count = [&](bool side_a) -> std::string {
      for (const auto& m : r.metrics) {
        if (m.metric != "processes") continue;
        const auto& v = side_a ? m.a : m.b;
        return v ? std::to_string(*v) : "absent";
      }
      return "-";
    };
    out += "\n" + std::string(bold) + r.role + reset + "  (processes: A " + count(true) + ", B " +
           count(false) + ")\n";
    std::snprintf(line, sizeof(line), "  %-24s %16s %16s  %s\n", "metric", "A", "B", "delta");
    out += line;
    for (const MetricDelta& m : r.metrics) {
      if (m.a.value_or(0) == 0 && m.b.value_or(0) == 0) {
        zeros = true;
        continue;
      }
      std::snprintf(line, sizeof(line), "  %-24s %16s %16s  %s\n", m.metric.c_str(),
                    m.a ? FormatMetric(*m.a).c_str() : "-", m.b ? FormatMetric(*m.b).c_str() : "-",
                    DeltaText(m).c_str());
      out += line;
    }
  }
  if (zeros) out += "\n(metrics that are 0 in both runs are not shown; --format json lists all)\n";
  out += "\n" + std::string(bold) + "findings" + reset + "\n";
  auto list = [&](const char* title, const std::vector<FindingSides>& fs, bool show_a, bool show_b) {
    out += std::string("  ") + title + ":";
    if (fs.empty()) out += " none";
    out += "\n";
    for (const auto& f : fs) {
      out += "    " + f.id + " (";
      if (show_a && show_b && f.a != f.b) {
        out += "A " + std::string(SeverityName(*f.a)) + ", B " + std::string(SeverityName(*f.b));
      } else {
        out += SeverityName(show_b ? *f.b : *f.a);
      }
      if (show_a && show_b) {
        out += "; A x" + std::to_string(f.count_a) + ", B x" + std::to_string(f.count_b);
      } else {
        out += " x" + std::to_string(show_a ? f.count_a : f.count_b);
      }
      out += ")";
      if (!f.summary.empty()) out += ": " + f.summary;
      out += "\n";
    }
  };
  list("only in A", diff.only_a, true, false);
  list("only in B", diff.only_b, false, true);
  list("in both", diff.both, true, true);
  // The environment: every host key (one line when both runs agree, '*' and A/B lines
  // when not); libraries and packages only where they differ (--format json has all).
  auto table = [&](const char* title, const std::vector<SideBySide>& rows, bool all) {
    size_t same = 0;
    for (const auto& r : rows) same += r.same();
    out += "\n" + std::string(bold) + title + reset;
    if (!all) out += "  (" + std::to_string(rows.size() - same) + " differ, " + std::to_string(same) + " the same)";
    out += "\n";
    for (const auto& r : rows) {
      if (!all && r.same()) continue;
      out += r.same() ? "  " + r.key + ": " + JoinValues(r.a) + "\n"
                      : "* " + r.key + "\n      A: " + JoinValues(r.a) + "\n      B: " + JoinValues(r.b) + "\n";
    }
  };
  table("environment", diff.host, true);
  table("libraries", diff.libraries, false);
  table("python packages", diff.python_packages, false);
  return out;
}

Json RenderDiffJson(const RunDiff& diff) {
  Json j = Json::MakeObject();
  j["schema"] = "colabtrace.diff.v1";
  j["a"] = diff.name_a;
  j["b"] = diff.name_b;
  Json roles = Json::MakeArray();
  for (const RoleDelta& r : diff.roles) {
    Json role = Json::MakeObject();
    role["role"] = r.role;
    Json metrics = Json::MakeArray();
    for (const MetricDelta& m : r.metrics) {
      Json e = Json::MakeObject();
      e["metric"] = m.metric;
      e["a"] = m.a ? Json(*m.a) : Json();
      e["b"] = m.b ? Json(*m.b) : Json();
      e["delta"] = m.a && m.b ? Json(static_cast<int64_t>(*m.b) - static_cast<int64_t>(*m.a)) : Json();
      const auto pct = PercentChange(m);
      e["percent"] = pct ? Json(std::round(*pct * 10) / 10) : Json();  // one decimal, as in text
      metrics.Append(std::move(e));
    }
    role["metrics"] = std::move(metrics);
    roles.Append(std::move(role));
  }
  j["roles"] = std::move(roles);
  auto list = [](const std::vector<FindingSides>& fs) {
    Json arr = Json::MakeArray();
    for (const auto& f : fs) {
      Json e = Json::MakeObject();
      e["id"] = f.id;
      e["severity_a"] = SeverityJson(f.a);
      e["severity_b"] = SeverityJson(f.b);
      e["count_a"] = f.count_a;
      e["count_b"] = f.count_b;
      e["summary"] = f.summary;
      arr.Append(std::move(e));
    }
    return arr;
  };
  Json findings = Json::MakeObject();
  findings["only_in_a"] = list(diff.only_a);
  findings["only_in_b"] = list(diff.only_b);
  findings["in_both"] = list(diff.both);
  j["findings"] = std::move(findings);
  auto sides = [](const std::vector<SideBySide>& rows) {
    Json arr = Json::MakeArray();
    for (const auto& r : rows) {
      Json e = Json::MakeObject();
      e["key"] = r.key;
      Json a = Json::MakeArray(), b = Json::MakeArray();
      for (const auto& v : r.a) a.Append(v);
      for (const auto& v : r.b) b.Append(v);
      e["a"] = std::move(a);
      e["b"] = std::move(b);
      e["same"] = r.same();
      arr.Append(std::move(e));
    }
    return arr;
  };
  Json environment = Json::MakeObject();
  environment["host"] = sides(diff.host);
  environment["libraries"] = sides(diff.libraries);
  environment["python_packages"] = sides(diff.python_packages);
  j["environment"] = std::move(environment);
  return j;
}

}  // namespace colabtrace::analyzer
