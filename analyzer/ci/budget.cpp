#include "ci/budget.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

namespace colabtrace::analyzer {
namespace {

constexpr std::string_view kBudgetNote =
    "colabtrace check fails when a metric is above its max, or when a finding of severity "
    "warning or error appears whose id is not listed under findings. Edit a max to loosen "
    "it, set it to null to stop checking that metric, or list a finding id to allow it.";

uint64_t ClampToU64(long double v) {
  if (!(v > 0)) return 0;
  if (v >= 18446744073709551615.0L) return UINT64_MAX;
  return static_cast<uint64_t>(v);
}

Json MetricEntry(const MetricBudget& m) {
  Json e = Json::MakeObject();
  e["value"] = m.value ? Json(*m.value) : Json();
  e["max"] = m.max ? Json(*m.max) : Json();
  return e;
}

Json ScopeToJson(const ScopeBudget& s) {
  Json o = Json::MakeObject();
  for (const auto& m : s.metrics) o[m.metric] = MetricEntry(m);
  return o;
}

ScopeBudget MakeScope(const RoleMetrics& r, const BudgetPolicy& policy) {
  ScopeBudget s;
  s.scope = r.role;
  for (size_t i = 0; i < kMetricCount; ++i) {
    s.metrics.push_back({std::string(kMetrics[i].name), r.values[i],
                         DefaultLimit(kMetrics[i], r.values[i], policy)});
  }
  return s;
}

std::string Quoted(std::string_view s) {
  std::string out;
  AppendJsonString(out, s);
  return out;
}

// Reads a non-negative number (integers exactly, others rounded down).
std::optional<uint64_t> NonNegative(const Json& v) {
  if (!v.is_number()) return std::nullopt;
  const double d = v.number();
  if (!std::isfinite(d) || d < 0) return std::nullopt;
  const int64_t i = v.as_int();  // negative only for integers above INT64_MAX
  return i >= 0 ? static_cast<uint64_t>(i) : ClampToU64(static_cast<long double>(d));
}

class BudgetParser {
 public:
  BudgetParser(std::string* error, std::vector<std::string>* warnings)
      : error_(error), warnings_(warnings) {}

  std::optional<Budget> Run(std::string_view text) {
    std::string perr;
    auto doc = Json::Parse(text, &perr);
    if (!doc) return Fail("it is not valid JSON (" + perr + ")");
    const Json& j = *doc;
    if (!j.is_object()) return Fail("the top level is not a JSON object");
    const Json* schema = j.Find("schema");
    if (!schema || !schema->is_string()) {
      return Fail("it has no \"schema\" field; a budget starts with \"schema\": \"" +
                  std::string(kBudgetSchema) + "\" (write one with colabtrace baseline)");
    }
    if (schema->str() != kBudgetSchema) {
      return Fail("\"schema\" is " + Quoted(schema->str()) + ", expected \"" +
                  std::string(kBudgetSchema) + "\"");
    }
    Budget b;
    if (const Json* t = j.Find("tolerance_percent"); t && !t->is_null()) {
      if (!t->is_number() || t->number() < 0) return Fail("tolerance_percent must be a number >= 0");
      b.policy.tolerance_percent = t->number();
    }
    if (const Json* t = j.Find("time_slack_ns"); t && !t->is_null()) {
      auto v = NonNegative(*t);
      if (!v) return Fail("time_slack_ns must be a number >= 0");
      b.policy.time_slack_ns = *v;
    }
    if (const Json* t = j.Find("rss_slack_bytes"); t && !t->is_null()) {
      auto v = NonNegative(*t);
      if (!v) return Fail("rss_slack_bytes must be a number >= 0");
      b.policy.rss_slack_bytes = *v;
    }
    if (const Json* a = j.Find("gpu_arch"); a && !a->is_null()) {
      if (!a->is_string()) return Fail("gpu_arch must be a string like \"sm_75\"");
      b.gpu_arch = a->str();
    }
    const Json* total = j.Find("total");
    if (!total) return Fail("it has no \"total\" object");
    if (!Scope(*total, "total", "total", &b.total)) return std::nullopt;
    if (const Json* roles = j.Find("roles"); roles && !roles->is_null()) {
      if (!roles->is_object()) return Fail("\"roles\" must be an object of role -> metrics");
      for (const auto& [role, metrics] : roles->object()) {
        ScopeBudget s;
        if (!Scope(metrics, role, "roles." + Quoted(role), &s)) return std::nullopt;
        b.roles.push_back(std::move(s));
      }
    }
    if (const Json* fs = j.Find("findings"); fs && !fs->is_null()) {
      if (!fs->is_object()) return Fail("\"findings\" must be an object of finding id -> severity");
      for (const auto& [id, v] : fs->object()) {
        const Json* sev = v.is_object() ? v.Find("severity") : &v;
        auto s = sev && sev->is_string() ? ParseSeverity(sev->str()) : std::nullopt;
        if (!s) {
          return Fail("findings." + Quoted(id) + " must be \"error\", \"warning\" or \"info\"");
        }
        b.findings.push_back({id, *s});
      }
    }
    return b;
  }

 private:
  std::nullopt_t Fail(std::string why) {
    if (error_) *error_ = std::move(why);
    return std::nullopt;
  }

  bool Scope(const Json& j, const std::string& scope, const std::string& where, ScopeBudget* out) {
    out->scope = scope;
    if (!j.is_object()) {
      Fail(where + " must be an object of metric -> {\"value\", \"max\"}");
      return false;
    }
    for (const auto& [name, entry] : j.object()) {
      const std::string at = where + "." + Quoted(name);
      if (!FindMetric(name)) {
        if (warnings_) warnings_->push_back("unknown metric " + at + " ignored");
        continue;
      }
      MetricBudget m;
      m.metric = name;
      if (entry.is_number()) {  // a bare number is the max
        m.max = NonNegative(entry);
        if (!m.max) return Fail(at + " must be a number >= 0"), false;
      } else if (entry.is_object()) {
        const Json* max = entry.Find("max");
        if (!max) return Fail(at + " has no \"max\" (use null to stop checking it)"), false;
        if (!max->is_null()) {
          m.max = NonNegative(*max);
          if (!m.max) return Fail(at + ".max must be a number >= 0 or null"), false;
        }
        if (const Json* v = entry.Find("value"); v && !v->is_null()) {
          m.value = NonNegative(*v);
          if (!m.value) return Fail(at + ".value must be a number >= 0 or null"), false;
        }
      } else {
        return Fail(at + " must be {\"value\": N, \"max\": M} or a number"), false;
      }
      out->metrics.push_back(std::move(m));
    }
    return true;
  }

  std::string* error_;
  std::vector<std::string>* warnings_;
};

std::string Percent(uint64_t base, uint64_t now) {
  if (base == 0) return now == 0 ? "" : "new";
  char buf[32];
  const double pct = (static_cast<double>(now) - static_cast<double>(base)) * 100.0 /
                     static_cast<double>(base);
  std::snprintf(buf, sizeof(buf), "%+.1f%%", pct);
  return buf;
}

std::string Opt(const std::optional<uint64_t>& v) { return v ? FormatMetric(*v) : "-"; }

std::string SeverityOpt(const std::optional<Severity>& s) {
  return s ? std::string(SeverityName(*s)) : "-";
}

// XML text or attribute: escapes markup, and replaces bytes that XML 1.0 cannot hold
// (controls, invalid UTF-8) with '?'.
std::string Xml(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '&': out += "&amp;"; continue;
      case '<': out += "&lt;"; continue;
      case '>': out += "&gt;"; continue;
      case '"': out += "&quot;"; continue;
      case '\'': out += "&apos;"; continue;
      case '\n': out += "&#10;"; continue;
      case '\t': out += "&#9;"; continue;
      default: break;
    }
    if (c < 0x20 || c == 0x7f) {
      out += '?';
      continue;
    }
    if (c < 0x80) {
      out += static_cast<char>(c);
      continue;
    }
    const size_t len = (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    bool ok = len != 0 && i + len <= s.size();
    for (size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(s[i + k]) & 0xc0) == 0x80;
    if (ok) {
      out.append(s.substr(i, len));
      i += len - 1;
    } else {
      out += '?';
    }
  }
  return out;
}

void CheckScope(const ScopeBudget& budget, const RoleMetrics& now, CheckResult& result) {
  for (const MetricBudget& m : budget.metrics) {
    const size_t idx = *FindMetric(m.metric);
    MetricCheck c;
    c.scope = budget.scope;
    c.metric = m.metric;
    c.baseline = m.value;
    c.max = m.max;
    c.now = now.values[idx];
    if (!m.max) {
      c.verdict = Verdict::kUnchecked;
    } else if (*c.now > *m.max) {
      c.verdict = Verdict::kRegression;
      c.message = m.metric + " of " + budget.scope + " is " + FormatMetric(*c.now) +
                  ", over its limit " + FormatMetric(*m.max);
      if (m.value) {
        c.message += " (baseline " + FormatMetric(*m.value);
        if (const std::string pct = Percent(*m.value, *c.now); !pct.empty()) c.message += ", " + pct;
        c.message += ")";
      }
    }
    result.metrics.push_back(std::move(c));
  }
}

}  // namespace

std::optional<uint64_t> DefaultLimit(const MetricSpec& spec, uint64_t value, const BudgetPolicy& policy) {
  if (spec.rule == MetricLimitRule::kExact) return value;
  if (spec.rule == MetricLimitRule::kUnchecked) return std::nullopt;
  if (spec.rule == MetricLimitRule::kTwiceAsSlow) {
    return value > (UINT64_MAX - 1'000'000) / 2 ? UINT64_MAX : 2 * value + 1'000'000;
  }
  if (spec.rule == MetricLimitRule::kSharePoints) return std::min<uint64_t>(100, value + kSharePointsSlack);
  // Integer arithmetic in millionths of a percent, so 10 reads at 10% allow exactly 11
  // (floating point would give 10.999... for some values).
  const double pct = std::min(std::max(policy.tolerance_percent, 0.0), 1e9);
  const unsigned __int128 micro_pct = static_cast<unsigned __int128>(std::llround(pct * 1e6));
  const unsigned __int128 grown =
      static_cast<unsigned __int128>(value) + static_cast<unsigned __int128>(value) * micro_pct / 100000000u;
  uint64_t limit = grown > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(grown);
  if (spec.rule == MetricLimitRule::kTimed) {
    limit = limit > UINT64_MAX - policy.time_slack_ns ? UINT64_MAX : limit + policy.time_slack_ns;
  }
  if (spec.rule == MetricLimitRule::kResident) {
    limit = limit > UINT64_MAX - policy.rss_slack_bytes ? UINT64_MAX : limit + policy.rss_slack_bytes;
  }
  return limit;
}

Budget MakeBudget(const RunMetrics& run, const BudgetPolicy& policy,
                  std::optional<std::string> gpu_arch) {
  Budget b;
  b.policy = policy;
  b.gpu_arch = std::move(gpu_arch);
  b.total = MakeScope(run.total, policy);
  for (const RoleMetrics& r : run.roles) b.roles.push_back(MakeScope(r, policy));
  for (const FindingPresence& f : run.findings) b.findings.push_back({f.id, f.severity});
  return b;
}

std::string FormatBudget(const Budget& b) {
  // Indented like the report, except that each metric's {"value", "max"} stays on one
  // line, so a budget reads (and diffs) as one line per limit.
  std::string out;
  auto dump = [&](auto&& self, const Json& j, int depth) -> void {
    if (!j.is_object() || j.object().empty()) {
      out += j.Dump(-1);
      return;
    }
    const auto& members = j.object();
    if (depth >= 3 || (depth == 2 && j.Find("max") != nullptr)) {  // {"value": 1, "max": 2}
      out += "{";
      for (size_t k = 0; k < members.size(); ++k) {
        if (k) out += ", ";
        AppendJsonString(out, members[k].first);
        out += ": " + members[k].second.Dump(-1);
      }
      out += "}";
      return;
    }
    out += "{";
    for (size_t k = 0; k < members.size(); ++k) {
      out += k ? ",\n" : "\n";
      out.append(static_cast<size_t>(2 * (depth + 1)), ' ');
      AppendJsonString(out, members[k].first);
      out += ": ";
      self(self, members[k].second, depth + 1);
    }
    out += "\n";
    out.append(static_cast<size_t>(2 * depth), ' ');
    out += "}";
  };
  dump(dump, BudgetToJson(b), 0);
  return out + "\n";
}

Json BudgetToJson(const Budget& b) {
  Json j = Json::MakeObject();
  j["schema"] = std::string(kBudgetSchema);
  j["note"] = std::string(kBudgetNote);
  const double pct = b.policy.tolerance_percent;
  j["tolerance_percent"] = pct == std::floor(pct) && pct < 1e15 ? Json(static_cast<int64_t>(pct)) : Json(pct);
  j["time_slack_ns"] = b.policy.time_slack_ns;
  j["rss_slack_bytes"] = b.policy.rss_slack_bytes;
  if (b.gpu_arch) j["gpu_arch"] = *b.gpu_arch;
  j["total"] = ScopeToJson(b.total);
  Json roles = Json::MakeObject();
  for (const ScopeBudget& s : b.roles) roles[s.scope] = ScopeToJson(s);
  j["roles"] = std::move(roles);
  Json findings = Json::MakeObject();
  for (const AllowedFinding& f : b.findings) findings[f.id] = std::string(SeverityName(f.severity));
  j["findings"] = std::move(findings);
  return j;
}

std::optional<Budget> ParseBudget(std::string_view text, std::string* error,
                                  std::vector<std::string>* warnings) {
  return BudgetParser(error, warnings).Run(text);
}

std::string_view VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kOk: return "ok";
    case Verdict::kRegression: return "REGRESSION";
    case Verdict::kUnchecked: return "no limit";
    case Verdict::kNewRole: return "new role";
    case Verdict::kAbsent: return "absent";
    case Verdict::kNewInfo: return "new (below --fail-on)";
    case Verdict::kGone: return "gone";
  }
  return "ok";
}

CheckResult CheckRun(const Budget& budget, const RunMetrics& run, Severity fail_on) {
  CheckResult result;
  CheckScope(budget.total, run.total, result);
  for (const ScopeBudget& role : budget.roles) {
    if (const RoleMetrics* now = run.FindRole(role.scope)) {
      CheckScope(role, *now, result);
      continue;
    }
    MetricCheck c;
    c.scope = role.scope;
    c.metric = "processes";
    for (const auto& m : role.metrics) {
      if (m.metric == "processes") c.baseline = m.value, c.max = m.max;
    }
    c.verdict = Verdict::kAbsent;
    result.metrics.push_back(std::move(c));
  }
  for (const RoleMetrics& r : run.roles) {
    const bool known = std::any_of(budget.roles.begin(), budget.roles.end(),
                                   [&](const ScopeBudget& s) { return s.scope == r.role; });
    if (known) continue;
    MetricCheck c;
    c.scope = r.role;
    c.metric = "processes";
    c.now = r.values[*FindMetric("processes")];
    c.verdict = Verdict::kNewRole;
    result.metrics.push_back(std::move(c));
  }

  std::map<std::string, FindingCheck> findings;
  for (const AllowedFinding& a : budget.findings) {
    FindingCheck& f = findings[a.id];
    f.id = a.id;
    f.baseline = f.baseline ? std::max(*f.baseline, a.severity) : a.severity;
  }
  for (const FindingPresence& p : run.findings) {
    FindingCheck& f = findings[p.id];
    f.id = p.id;
    f.now = p.severity;
    f.count = p.count;
    f.summary = p.summary;
  }
  for (auto& [id, f] : findings) {
    if (!f.now) {
      f.verdict = Verdict::kGone;
    } else if (f.baseline && *f.now <= *f.baseline) {
      f.verdict = Verdict::kOk;
    } else if (*f.now >= fail_on) {
      f.verdict = Verdict::kRegression;
      f.message = f.baseline ? "finding " + id + " rose from " + std::string(SeverityName(*f.baseline)) +
                                   " to " + std::string(SeverityName(*f.now))
                             : "new " + std::string(SeverityName(*f.now)) + " finding " + id;
      if (!f.summary.empty()) f.message += ": " + f.summary;
    } else {
      f.verdict = Verdict::kNewInfo;
    }
    result.findings.push_back(std::move(f));
  }
  for (const auto& m : result.metrics) result.regressions += m.verdict == Verdict::kRegression;
  for (const auto& f : result.findings) result.regressions += f.verdict == Verdict::kRegression;
  return result;
}

std::string RenderCheckText(const CheckResult& result, std::string_view budget_path, bool color) {
  const char* red = color ? "\033[1;31m" : "";
  const char* green = color ? "\033[1;32m" : "";
  const char* bold = color ? "\033[1m" : "";
  const char* reset = color ? "\033[0m" : "";
  size_t scope_w = 5, metric_w = 22;
  for (const auto& m : result.metrics) {
    scope_w = std::max(scope_w, m.scope.size());
    metric_w = std::max(metric_w, m.metric.size());
  }
  for (const auto& f : result.findings) metric_w = std::max(metric_w, f.id.size());
  scope_w = std::min<size_t>(scope_w, 48);
  auto pad = [](std::string_view text, size_t width) {
    std::string cell(text);
    cell.resize(std::max(width, text.size()) + 2, ' ');
    return cell;
  };
  auto row = [&](std::string_view scope, std::string_view metric, const std::string& base,
                 const std::string& limit, const std::string& now, std::string_view verdict,
                 bool bad) {
    char nums[80];
    std::snprintf(nums, sizeof(nums), "%14s %14s %14s  ", base.c_str(), limit.c_str(), now.c_str());
    return pad(scope, scope_w) + pad(metric, metric_w) + nums + (bad ? red : "") +
           std::string(verdict) + (bad ? reset : "") + "\n";
  };
  std::string out = std::string(bold) + "colabtrace check" + reset + " against " +
                    std::string(budget_path) + "\n\n";
  out += row("scope", "metric", "baseline", "limit", "now", "verdict", false);
  for (const auto& m : result.metrics) {
    std::string verdict(VerdictName(m.verdict));
    if (m.verdict == Verdict::kRegression && m.baseline) {
      if (const std::string pct = Percent(*m.baseline, *m.now); !pct.empty()) verdict += " (" + pct + ")";
    }
    out += row(m.scope, m.metric, Opt(m.baseline), Opt(m.max), Opt(m.now), verdict,
               m.verdict == Verdict::kRegression);
  }
  out += "\n";
  out += row("findings", "id", "allowed", "", "now", "verdict", false);
  for (const auto& f : result.findings) {
    std::string now = SeverityOpt(f.now);
    if (f.count > 1) now += " x" + std::to_string(f.count);
    out += row("finding", f.id, SeverityOpt(f.baseline), "", now, VerdictName(f.verdict),
               f.verdict == Verdict::kRegression);
  }
  if (result.findings.empty()) out += "(no findings in the budget or the run)\n";
  out += "\n";
  const size_t checks = result.metrics.size() + result.findings.size();
  if (result.regressions == 0) {
    out += std::string(green) + "PASS" + reset + ": " + std::to_string(checks) +
           " checks, no regression\n";
    return out;
  }
  out += std::string(red) + "FAIL" + reset + ": " + std::to_string(result.regressions) +
         " regression" + (result.regressions == 1 ? "" : "s") + " in " + std::to_string(checks) +
         " checks\n";
  for (const auto& m : result.metrics) {
    if (m.verdict == Verdict::kRegression) out += "  " + m.message + "\n";
  }
  for (const auto& f : result.findings) {
    if (f.verdict == Verdict::kRegression) out += "  " + f.message + "\n";
  }
  return out;
}

namespace {

// A Markdown table cell: HTML and Markdown syntax escaped, no line breaks or control
// characters.
std::string MarkdownCell(std::string_view text) {
  std::string out;
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '|': out += "\\|"; break;
      case '\n': case '\r': case '\t': out += ' '; break;
      case '\\': case '`': case '*': case '_': case '[': case ']': case '#': case '~': case '!':
        out += '\\';
        out += c;
        break;
      default: out += static_cast<unsigned char>(c) < 0x20 || c == 0x7f ? '?' : c;
    }
  }
  return out;
}

}  // namespace

std::string RenderCheckMarkdown(const CheckResult& result, std::string_view budget_path) {
  const size_t checks = result.metrics.size() + result.findings.size();
  std::string out = "### colabtrace check: ";
  out += result.regressions == 0
             ? "PASS, " + std::to_string(checks) + " checks, no regression"
             : "FAIL, " + std::to_string(result.regressions) + " regression" +
                   (result.regressions == 1 ? "" : "s") + " in " + std::to_string(checks) + " checks";
  out += "\n\nBudget: " + MarkdownCell(budget_path) + "\n\n";
  out += "| metric | baseline | value | band | verdict |\n|---|---:|---:|---|---|\n";
  auto verdict_cell = [](Verdict v, std::string extra) {
    std::string cell = v == Verdict::kRegression ? "\u274c " : v == Verdict::kOk ? "\u2705 " : "\u2796 ";
    cell += std::string(VerdictName(v));
    if (!extra.empty()) cell += " (" + extra + ")";
    return cell;
  };
  for (const auto& m : result.metrics) {
    const std::string metric = m.scope == "total" ? m.metric : m.scope + ": " + m.metric;
    const std::string band = m.max ? "\u2264 " + Opt(m.max) : "not checked";
    std::string pct;
    if (m.verdict == Verdict::kRegression && m.baseline && m.now) pct = Percent(*m.baseline, *m.now);
    out += "| " + MarkdownCell(metric) + " | " + Opt(m.baseline) + " | " + Opt(m.now) + " | " + band +
           " | " + verdict_cell(m.verdict, pct) + " |\n";
  }
  for (const auto& f : result.findings) {
    std::string now = SeverityOpt(f.now);
    if (f.count > 1) now += " x" + std::to_string(f.count);
    const std::string band = f.baseline ? "\u2264 " + SeverityOpt(f.baseline) : "absent";
    out += "| finding " + MarkdownCell(f.id) + " | " + SeverityOpt(f.baseline) + " | " + now + " | " +
           band + " | " + verdict_cell(f.verdict, "") + " |\n";
  }
  for (const auto& m : result.metrics) {
    if (m.verdict == Verdict::kRegression) out += "\n- " + MarkdownCell(m.message);
  }
  for (const auto& f : result.findings) {
    if (f.verdict == Verdict::kRegression) out += "\n- " + MarkdownCell(f.message);
  }
  out += "\n\n";
  return out;
}

std::string RenderCheckJUnit(const CheckResult& result, std::string_view budget_path) {
  size_t skipped = 0;
  for (const auto& m : result.metrics) skipped += m.verdict != Verdict::kOk && m.verdict != Verdict::kRegression;
  const std::string tests = std::to_string(result.metrics.size() + result.findings.size());
  const std::string failures = std::to_string(result.regressions);
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += "<testsuites name=\"colabtrace check\" tests=\"" + tests + "\" failures=\"" + failures +
         "\" errors=\"0\">\n";
  out += "  <testsuite name=\"colabtrace check\" tests=\"" + tests + "\" failures=\"" + failures +
         "\" errors=\"0\" skipped=\"" + std::to_string(skipped) + "\">\n";
  out += "    <properties><property name=\"budget\" value=\"" + Xml(budget_path) + "\"/></properties>\n";
  for (const auto& m : result.metrics) {
    out += "    <testcase classname=\"colabtrace.metrics\" name=\"" + Xml(m.scope + ": " + m.metric) +
           "\" time=\"0\">";
    const std::string detail = "baseline " + Opt(m.baseline) + ", limit " + Opt(m.max) + ", now " + Opt(m.now);
    if (m.verdict == Verdict::kRegression) {
      out += "\n      <failure type=\"regression\" message=\"" + Xml(m.message) + "\">" + Xml(detail) +
             "</failure>\n    ";
    } else if (m.verdict != Verdict::kOk) {
      out += "<skipped message=\"" + Xml(std::string(VerdictName(m.verdict)) + ": " + detail) + "\"/>";
    } else {
      out += "<system-out>" + Xml(detail) + "</system-out>";
    }
    out += "</testcase>\n";
  }
  for (const auto& f : result.findings) {
    out += "    <testcase classname=\"colabtrace.findings\" name=\"" + Xml(f.id) + "\" time=\"0\">";
    const std::string detail = "allowed " + SeverityOpt(f.baseline) + ", now " + SeverityOpt(f.now) +
                               (f.summary.empty() ? "" : ": " + f.summary);
    if (f.verdict == Verdict::kRegression) {
      out += "\n      <failure type=\"new-finding\" message=\"" + Xml(f.message) + "\">" + Xml(detail) +
             "</failure>\n    ";
    } else {
      out += "<system-out>" + Xml(std::string(VerdictName(f.verdict)) + ": " + detail) + "</system-out>";
    }
    out += "</testcase>\n";
  }
  out += "  </testsuite>\n</testsuites>\n";
  return out;
}

}  // namespace colabtrace::analyzer
