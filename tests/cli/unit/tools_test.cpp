// Unit and golden tests of analyzer/ci (budgets, checks, diff), the Perfetto export and process roles: process roles, default limits, budget files
// (format, parse errors, hand edits), the check's verdicts, JUnit escaping, and the
// trace-event export of a small trace built inline.
#include <cstring>
#include <string>
#include <vector>

#include "../../harness/trace_builder.h"
#include "colabtrace/format/codec.h"
#include "gtest/gtest.h"
#include "report/report.h"
#include "ci/budget.h"
#include "ci/run_diff.h"
#include "ci/run_metrics.h"
#include "export/trace_event_export.h"

namespace colabtrace::analyzer {
namespace {

namespace ctf = colabtrace::format;

Json Process(std::string exe, std::vector<std::string> argv, std::string origin = "start",
             int images = 1) {
  Json p = Json::MakeObject();
  p["exe"] = std::move(exe);
  Json a = Json::MakeArray();
  for (auto& s : argv) a.Append(std::move(s));
  p["argv"] = std::move(a);
  p["origin"] = std::move(origin);
  Json im = Json::MakeArray();
  for (int i = 0; i < images; ++i) im.Append(Json::MakeObject());
  p["images"] = std::move(im);
  return p;
}

TEST(ProcessRole, InterpretersAreNamedByTheirScript) {
  EXPECT_EQ(ProcessRole(Process("/usr/bin/python3.11", {"python3", "-u", "/home/u/train.py", "--lr", "1"})),
            "python3.11 train.py");
  EXPECT_EQ(ProcessRole(Process("/usr/bin/python3.11", {"python", "-W", "ignore", "train.py"})),
            "python3.11 train.py");
  EXPECT_EQ(ProcessRole(Process("/usr/bin/python3.11", {"python", "-m", "torch.distributed.run", "x.py"})),
            "python3.11 -m torch.distributed.run");
  EXPECT_EQ(ProcessRole(Process("/usr/bin/python3.11", {"python", "-mpip", "install"})),
            "python3.11 -m pip");
  EXPECT_EQ(ProcessRole(Process("/usr/bin/python3.11",
                                {"python", "-c", "from multiprocessing.spawn import spawn_main; spawn_main()",
                                 "--multiprocessing-fork"})),
            "python3.11 -c multiprocessing.spawn");
  EXPECT_EQ(ProcessRole(Process("/usr/bin/python3.11", {"python", "-c", "print(1)"})), "python3.11 -c");
  EXPECT_EQ(ProcessRole(Process("/usr/bin/dash", {"sh", "-c", "echo hi"})), "dash -c");
  EXPECT_EQ(ProcessRole(Process("/usr/bin/bash", {"bash", "run.sh", "a"})), "bash run.sh");
  EXPECT_EQ(ProcessRole(Process("/usr/bin/python3.11", {"python3"})), "python3.11");
}

TEST(ProcessRole, ProgramsAndForks) {
  EXPECT_EQ(ProcessRole(Process("/usr/local/bin/torchrun", {"torchrun", "--nproc", "4", "t.py"})), "torchrun");
  EXPECT_EQ(ProcessRole(Process("/usr/bin/python3.11", {"python3", "train.py"}, "fork")),
            "python3.11 train.py (fork)");
  // A fork child that exec'd is its new program, not a fork.
  EXPECT_EQ(ProcessRole(Process("/usr/bin/cat", {"cat", "f"}, "fork", 2)), "cat");
  EXPECT_EQ(ProcessRole(Process("", {"/opt/x/worker", "1"})), "worker");
  EXPECT_EQ(ProcessRole(Json::MakeObject()), "unknown");
}

const MetricSpec& Spec(std::string_view name) { return kMetrics[*FindMetric(name)]; }

TEST(DefaultLimit, ToleranceRoundsDownExactly) {
  BudgetPolicy p;  // 10%, 1 s
  EXPECT_EQ(DefaultLimit(Spec("io.reads"), 10, p), 11u);
  EXPECT_EQ(DefaultLimit(Spec("io.reads"), 15, p), 16u);
  EXPECT_EQ(DefaultLimit(Spec("io.reads"), 1, p), 1u);
  EXPECT_EQ(DefaultLimit(Spec("io.reads"), 0, p), 0u);
  EXPECT_EQ(DefaultLimit(Spec("io.bytes_read"), 1000000000000ull, p), 1100000000000ull);
  EXPECT_EQ(DefaultLimit(Spec("gpu.failed_allocations"), 3, p), 3u);
  EXPECT_EQ(DefaultLimit(Spec("gpu.leak_growth_bytes"), 4096, p), 4096u);
  EXPECT_EQ(DefaultLimit(Spec("processes"), 5, p), 5u);
  EXPECT_EQ(DefaultLimit(Spec("duration_ns"), 2000, p), 2200u + 1000000000u);
  // Peak RSS: the tolerance plus 1 MiB (sampled RSS moves with timing).
  EXPECT_EQ(DefaultLimit(Spec("peak_rss_bytes"), 2000000, p), 2200000u + (1u << 20));
  p.tolerance_percent = 12.5;
  p.time_slack_ns = 0;
  p.rss_slack_bytes = 0;
  EXPECT_EQ(DefaultLimit(Spec("peak_rss_bytes"), 1000, p), 1125u);
  EXPECT_EQ(DefaultLimit(Spec("duration_ns"), 1000, p), 1125u);
  p.rss_slack_bytes = 4096;
  EXPECT_EQ(DefaultLimit(Spec("peak_rss_bytes"), 1000, p), 1125u + 4096u);
  EXPECT_EQ(DefaultLimit(Spec("peak_rss_bytes"), UINT64_MAX - 1, p), UINT64_MAX);
}

TEST(DefaultLimit, StepsMayNotGetTwiceAsSlowNorWaitFifteenPointsMore) {
  BudgetPolicy p;
  // More steps is not a regression: not checked.
  EXPECT_EQ(DefaultLimit(Spec("steps.count"), 500, p), std::nullopt);
  EXPECT_EQ(DefaultLimit(Spec("steps.median_ns"), 50'000'000, p), 101'000'000u);
  EXPECT_EQ(DefaultLimit(Spec("steps.median_ns"), UINT64_MAX / 2, p), UINT64_MAX);
  EXPECT_EQ(DefaultLimit(Spec("steps.input_wait_percent"), 10, p), 25u);
  EXPECT_EQ(DefaultLimit(Spec("steps.input_wait_percent"), 90, p), 100u);
  EXPECT_EQ(DefaultLimit(Spec("steps.gpu_allocations_per_step"), 20, p), 22u);
}

RunMetrics SampleRun() {
  RunMetrics run;
  run.total.role = "total";
  RoleMetrics main, workers;
  main.role = "python3.11 train.py";
  main.pids = {100};
  workers.role = "python3.11 train.py (fork)";
  workers.pids = {101, 102};
  auto set = [](RoleMetrics& r, std::string_view m, uint64_t v) { r.values[*FindMetric(m)] = v; };
  set(main, "processes", 1);
  set(main, "io.reads", 10);
  set(main, "gpu.allocations", 40);
  set(workers, "processes", 2);
  set(workers, "io.reads", 200);
  set(run.total, "processes", 3);
  set(run.total, "io.reads", 210);
  set(run.total, "gpu.allocations", 40);
  run.roles = {main, workers};
  FindingPresence f;
  f.id = "io.small-files";
  f.severity = Severity::kWarning;
  f.count = 1;
  run.findings = {f};
  return run;
}

TEST(Budget, FormatsOneLinePerMetricAndParsesBack) {
  const RunMetrics run = SampleRun();
  const std::string text = FormatBudget(MakeBudget(run, BudgetPolicy{}, "sm_75"));
  EXPECT_NE(text.find("\"schema\": \"colabtrace.budget.v1\""), std::string::npos);
  EXPECT_NE(text.find("    \"io.reads\": {\"value\": 210, \"max\": 231},\n"), std::string::npos) << text;
  EXPECT_NE(text.find("      \"io.reads\": {\"value\": 200, \"max\": 220},\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\"io.small-files\": \"warning\""), std::string::npos);
  std::string error;
  std::vector<std::string> warnings;
  auto b = ParseBudget(text, &error, &warnings);
  ASSERT_TRUE(b) << error;
  EXPECT_TRUE(warnings.empty());
  EXPECT_EQ(b->gpu_arch, "sm_75");
  EXPECT_EQ(b->total.metrics.size(), kMetricCount);
  ASSERT_EQ(b->roles.size(), 2u);
  EXPECT_EQ(b->roles[1].scope, "python3.11 train.py (fork)");
  EXPECT_EQ(b->findings.size(), 1u);
  const CheckResult same = CheckRun(*b, run, Severity::kWarning);
  EXPECT_EQ(same.regressions, 0u);
  EXPECT_EQ(same.metrics.size(), 3 * kMetricCount);
}

TEST(Budget, ParseErrorsNameTheField) {
  auto error_of = [](std::string_view text) {
    std::string error;
    EXPECT_FALSE(ParseBudget(text, &error, nullptr)) << text;
    return error;
  };
  EXPECT_EQ(error_of("{\"schema\": \"colabtrace.budget.v1\", \"total\": {\"io.reads\": true}}"),
            "total.\"io.reads\" must be {\"value\": N, \"max\": M} or a number");
  EXPECT_EQ(error_of("{\"schema\": \"colabtrace.budget.v1\", \"total\": {}, \"roles\": []}"),
            "\"roles\" must be an object of role -> metrics");
  EXPECT_EQ(error_of("{\"schema\": \"colabtrace.budget.v1\", \"total\": {}, \"tolerance_percent\": -1}"),
            "tolerance_percent must be a number >= 0");
  EXPECT_EQ(error_of("{\"schema\": \"colabtrace.budget.v1\", \"total\": {}, \"roles\": {\"a\\\"b\": 3}}"),
            "roles.\"a\\\"b\" must be an object of metric -> {\"value\", \"max\"}");
  EXPECT_NE(error_of("").find("it is not valid JSON"), std::string::npos);
}

TEST(Check, VerdictsFollowTheBudgetAsWritten) {
  RunMetrics run = SampleRun();
  std::string error;
  auto b = ParseBudget(
      "{\"schema\": \"colabtrace.budget.v1\","
      " \"total\": {\"io.reads\": {\"value\": 100, \"max\": 210}, \"gpu.allocations\": 39,"
      "             \"processes\": {\"value\": 3, \"max\": null}},"
      " \"roles\": {\"python3.11 train.py\": {\"io.reads\": {\"value\": 10, \"max\": 11}},"
      "           \"python3.11 eval.py\": {\"processes\": {\"value\": 1, \"max\": 1}}},"
      " \"findings\": {\"gpu.leak\": \"warning\", \"io.small-files\": \"info\"}}",
      &error, nullptr);
  ASSERT_TRUE(b) << error;
  FindingPresence info;
  info.id = "io.reread";
  info.severity = Severity::kInfo;
  run.findings.push_back(info);
  const CheckResult r = CheckRun(*b, run, Severity::kWarning);
  std::vector<std::pair<std::string, Verdict>> got;
  for (const auto& m : r.metrics) got.emplace_back(m.scope + ":" + m.metric, m.verdict);
  const std::vector<std::pair<std::string, Verdict>> want = {
      {"total:io.reads", Verdict::kOk},  // 210 == max
      {"total:gpu.allocations", Verdict::kRegression},
      {"total:processes", Verdict::kUnchecked},
      {"python3.11 train.py:io.reads", Verdict::kOk},
      {"python3.11 eval.py:processes", Verdict::kAbsent},
      {"python3.11 train.py (fork):processes", Verdict::kNewRole},
  };
  EXPECT_EQ(got, want);
  std::vector<std::pair<std::string, Verdict>> findings;
  for (const auto& f : r.findings) findings.emplace_back(f.id, f.verdict);
  const std::vector<std::pair<std::string, Verdict>> want_findings = {
      {"gpu.leak", Verdict::kGone},
      {"io.reread", Verdict::kNewInfo},
      {"io.small-files", Verdict::kRegression},  // allowed as info, now a warning
  };
  EXPECT_EQ(findings, want_findings);
  EXPECT_EQ(r.regressions, 2u);
  EXPECT_EQ(r.metrics[1].message, "gpu.allocations of total is 40, over its limit 39");
  EXPECT_EQ(r.findings[2].message, "finding io.small-files rose from info to warning");
  EXPECT_EQ(CheckRun(*b, run, Severity::kError).regressions, 1u);
  EXPECT_EQ(CheckRun(*b, run, Severity::kInfo).regressions, 3u);
}

TEST(Check, JUnitEscapesWhatTracesControl) {
  RunMetrics run = SampleRun();
  run.roles[0].role = "python3.11 <a&b>\"\x01\xff.py";
  auto b = MakeBudget(run, BudgetPolicy{}, std::nullopt);
  run.roles[0].values[*FindMetric("io.reads")] = 99;
  const std::string xml = RenderCheckJUnit(CheckRun(b, run, Severity::kWarning), "budget<1>.json");
  EXPECT_NE(xml.find("name=\"python3.11 &lt;a&amp;b&gt;&quot;??.py: io.reads\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("value=\"budget&lt;1&gt;.json\""), std::string::npos);
  EXPECT_NE(xml.find("tests=\"46\" failures=\"1\""), std::string::npos);
  EXPECT_EQ(xml.find('\x01'), std::string::npos);
}

TEST(Check, MarkdownEscapesWhatTracesControl) {
  RunMetrics run = SampleRun();
  run.roles[0].role = "py|x <img src=x onerror=alert(1)>\n*b*\x01";
  auto b = MakeBudget(run, BudgetPolicy{}, std::nullopt);
  run.roles[0].values[*FindMetric("io.reads")] = 99;
  const std::string md = RenderCheckMarkdown(CheckRun(b, run, Severity::kWarning), "budget|1.json");
  EXPECT_NE(md.find("| py\\|x &lt;img src=x onerror=alert(1)&gt; \\*b\\*?: io.reads | "), std::string::npos) << md;
  EXPECT_EQ(md.find("<img"), std::string::npos);
  EXPECT_NE(md.find("### colabtrace check: FAIL, 1 regression in 46 checks\n\nBudget: budget\\|1.json\n"),
            std::string::npos) << md;
  // Every table row has exactly the six column bars that are not escaped.
  size_t rows = 0, pos = 0;
  while ((pos = md.find("\n|", pos)) != std::string::npos) {
    const size_t end = md.find('\n', pos + 1);
    const std::string row = md.substr(pos + 1, end - pos - 1);
    size_t bars = 0;
    for (size_t i = 0; i < row.size(); ++i) bars += row[i] == '|' && (i == 0 || row[i - 1] != '\\');
    EXPECT_EQ(bars, 6u) << row;
    ++rows;
    pos = end;
  }
  EXPECT_EQ(rows, 2u + 46u);  // header, separator, one row per check
}

TEST(Diff, DeltasAndFindingSides) {
  RunMetrics a = SampleRun(), b = SampleRun();
  b.roles.pop_back();
  b.total.values[*FindMetric("io.reads")] = 10;
  b.findings[0].id = "gpu.leak";
  const RunDiff d = DiffRuns(a, b, "A", "B");
  ASSERT_EQ(d.roles.size(), 3u);
  EXPECT_EQ(d.roles[2].role, "python3.11 train.py (fork)");
  EXPECT_FALSE(d.roles[2].metrics[0].b.has_value());
  const Json j = RenderDiffJson(d);
  const Json& reads = j["roles"].array()[0]["metrics"].array()[*FindMetric("io.reads")];
  EXPECT_EQ(reads.Dump(-1), "{\"metric\":\"io.reads\",\"a\":210,\"b\":10,\"delta\":-200,\"percent\":-95.2}");
  EXPECT_EQ(j["findings"]["only_in_a"].array()[0]["id"].str(), "io.small-files");
  EXPECT_EQ(j["findings"]["only_in_b"].array()[0]["id"].str(), "gpu.leak");
  const std::string text = RenderDiffText(d, false);
  EXPECT_NE(text.find("  io.reads                              210               10  -200 (-95.2%)\n"),
            std::string::npos) << text;
  EXPECT_NE(text.find("python3.11 train.py (fork)  (processes: A 2, B absent)\n"), std::string::npos);
}

// Builds a trace in memory with the shim's encoder: ticks are nanoseconds.
class TraceBuilder {
 public:
  TraceBuilder(uint32_t pid, uint64_t start_ns, bool ended) : b_(pid, start_ns, ended), now_(start_ns) {}

  void At(uint64_t ns) { now_ = ns; }

  uint64_t Str(const std::string& s) { return b_.AppendString(s, now_); }

  template <class R> void Add(R r) {
    r.ts = now_;
    b_.Append(r);
  }

  ProcessTrace Finish() { return b_.Parse(); }

 private:
  ::colabtrace::testing::TraceBytesBuilder b_;
  uint64_t now_;
};

void Start(TraceBuilder& b, uint32_t pid, uint32_t ppid, uint64_t origin, const char* name) {
  ctf::ProcessStart ps;
  ps.pid = pid;
  ps.ppid = ppid;
  ps.origin = origin;
  ps.exe = b.Str("/usr/bin/python3.11");
  b.Add(ps);
  ctf::Argv a;
  a.value = b.Str("python3");
  b.Add(a);
  a.index = 1;
  a.value = b.Str("train.py");
  b.Add(a);
  ctf::ThreadName tn;
  tn.tid = pid;
  tn.name = b.Str(name);
  b.Add(tn);
}

std::vector<Json> Events(const std::vector<ProcessTrace>& traces, TraceEventCounts* counts) {
  std::string out;
  EXPECT_TRUE(ExportTraceEvents(traces, [&](std::string_view s) { out += s; return true; }, counts));
  std::string err;
  auto doc = Json::Parse(out, &err);
  EXPECT_TRUE(doc) << err << "\n" << out;
  if (!doc) return {};
  EXPECT_EQ(doc->Find("displayTimeUnit")->str(), "ns");
  return (*doc)["traceEvents"].array();
}

std::string Brief(const Json& e) {
  std::string s = e["ph"].str() + " " + e["name"].str() + " pid=" + std::to_string(e["pid"].as_int()) +
                  " tid=" + std::to_string(e["tid"].as_int());
  if (const Json* ts = e.Find("ts")) s += " ts=" + ts->Dump(-1);
  if (const Json* dur = e.Find("dur")) s += " dur=" + dur->Dump(-1);
  if (const Json* sc = e.Find("s")) s += " s=" + sc->str();
  if (const Json* args = e.Find("args")) s += " " + args->Dump(-1);
  return s;
}

TEST(TraceEventExport, GoldenTwoProcesses) {
  // The parent starts at 1 ms, the killed child at 1.5 ms; times print relative to 1 ms.
  TraceBuilder parent(10, 1000000, true);
  Start(parent, 10, 1, 0, "python3");
  parent.At(1000500);
  ctf::Sample s;
  s.rss_bytes = 4096;
  s.cgroup_current = UINT64_MAX;
  parent.Add(s);
  parent.At(1001000);
  ctf::IoRead rd;
  rd.api = static_cast<uint64_t>(ctf::IoApi::kRead);
  rd.fd = 3;
  rd.result = 100;
  rd.dur = 2500;
  parent.Add(rd);
  parent.At(1002000);
  ctf::GpuAlloc ga;
  ga.api = static_cast<uint64_t>(ctf::GpuApi::kCudaMalloc);
  ga.addr = 0x1000;
  ga.size = 64;
  ga.dur = 10;
  parent.Add(ga);
  ga.addr = 0x2000;
  ga.size = 36;
  parent.Add(ga);
  ga.addr = 0;
  ga.rc = 2;  // failed: not live
  parent.Add(ga);
  ctf::GpuFree gf;
  gf.api = static_cast<uint64_t>(ctf::GpuApi::kCudaFree);
  gf.addr = 0x1000;
  gf.device = -1;
  parent.At(1003000);
  parent.Add(gf);
  ctf::IoDir scan;  // a readdir scan summary: its dur is a total, so it is an instant
  scan.api = static_cast<uint64_t>(ctf::IoApi::kReaddir64);
  scan.fd = 4;
  scan.result = 7;
  scan.dur = 900;
  parent.Add(scan);
  ctf::Fork fk;
  fk.child_pid = 11;
  parent.Add(fk);
  parent.At(1004000);
  ctf::Exit ex;
  ex.code = 3;
  parent.Add(ex);

  TraceBuilder child(11, 1500000, false);
  Start(child, 11, 10, 1, "worker");
  child.At(1600000);
  s.rss_bytes = 8192;
  s.cgroup_current = 1 << 20;
  child.Add(s);

  std::vector<ProcessTrace> traces;
  traces.push_back(child.Finish());  // input order does not matter
  traces.push_back(parent.Finish());
  TraceEventCounts counts;
  std::vector<std::string> got;
  for (const Json& e : Events(traces, &counts)) got.push_back(Brief(e));
  // Records' args are checked as prefixes: fields are only ever appended.
  const std::vector<std::string> want = {
      "M process_name pid=10 tid=10 {\"name\":\"python3.11 train.py\"}",
      "M process_sort_index pid=10 tid=10 {\"sort_index\":0}",
      "M thread_name pid=10 tid=10 {\"name\":\"python3\"}",
      "i exit pid=10 tid=10 ts=4 s=p {\"code\":3,\"how\":0",
      "i fork pid=10 tid=10 ts=3 s=t {\"child_pid\":11,\"how\":0",
      "X io_read (read) pid=10 tid=10 ts=1 dur=2.5 {\"api\":20,\"fd\":3,\"result\":100,\"dur\":2500",
      "i io_dir (readdir64) pid=10 tid=10 ts=3 s=t {\"api\":91,\"path\":null,\"fd\":4,\"result\":7",
      "X gpu_alloc (cudaMalloc) pid=10 tid=10 ts=2 dur=0.01 {\"api\":1,\"layer\":0,\"device\":0,"
      "\"stream\":\"0x0\",\"addr\":\"0x1000\",\"size\":64,\"rc\":0,\"dur\":10,\"stack\":null",
  };
  ASSERT_GE(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_TRUE(got[i].starts_with(want[i])) << i << ": " << got[i] << "\nwant: " << want[i];
  }

  auto named = [&](const std::string& prefix) {
    std::vector<std::string> v;
    for (const auto& g : got) {
      if (g.starts_with(prefix)) v.push_back(g);
    }
    return v;
  };
  EXPECT_EQ(named("C "), (std::vector<std::string>{
                             "C RSS pid=10 tid=10 ts=0.5 {\"bytes\":4096}",
                             "C GPU 0 live pid=10 tid=10 ts=2 {\"bytes\":64}",
                             "C GPU 0 live pid=10 tid=10 ts=2 {\"bytes\":100}",
                             "C GPU 0 live pid=10 tid=10 ts=3 {\"bytes\":36}",
                             "C RSS pid=11 tid=11 ts=600 {\"bytes\":8192}",
                             "C cgroup memory.current pid=11 tid=11 ts=600 {\"bytes\":1048576}",
                         }));
  EXPECT_EQ(named("M process_labels"),
            std::vector<std::string>{"M process_labels pid=11 tid=11 {\"labels\":\"killed\"}"});
  EXPECT_EQ(named("i killed").size(), 1u);
  EXPECT_NE(named("i killed")[0].find("pid=11 tid=11 ts=600 s=p"), std::string::npos);
  EXPECT_EQ(named("M process_sort_index pid=11"),
            std::vector<std::string>{"M process_sort_index pid=11 tid=11 {\"sort_index\":1}"});
  EXPECT_EQ(counts.complete, 5u);  // a read, three allocations (the failed one too), a free
  EXPECT_EQ(counts.instant, 4u);   // fork, exit, the readdir summary, killed
  EXPECT_EQ(counts.counter, 6u);
  EXPECT_EQ(counts.total(), got.size());
}

TEST(TraceEventExport, StopsWhenTheSinkFails) {
  TraceBuilder b(10, 1000, true);
  Start(b, 10, 1, 0, "x");
  std::vector<ProcessTrace> traces;
  traces.push_back(b.Finish());
  EXPECT_FALSE(ExportTraceEvents(traces, [](std::string_view) { return false; }));
}

// The JSON report is streamed (report --format json): the pieces DumpStreaming hands out
// are Dump's text exactly, more than one for a large document, and a sink that refuses a
// piece is given no more.
TEST(JsonStreaming, PiecesAreDumpsTextAndARefusalStops) {
  Json doc = Json::MakeArray();
  for (int i = 0; i < 5000; ++i) {
    Json row = Json::MakeObject();
    row["pid"] = static_cast<uint64_t>(i);
    row["path"] = "/data/shard-" + std::to_string(i) + "/\"quoted\"\n";
    row["empty"] = Json::MakeArray();
    doc.Append(std::move(row));
  }
  for (int indent : {2, -1}) {
    std::string streamed;
    size_t pieces = 0;
    EXPECT_TRUE(doc.DumpStreaming(indent, [&](std::string_view piece) {
      streamed.append(piece);
      ++pieces;
      return true;
    }));
    EXPECT_EQ(streamed, doc.Dump(indent));
    EXPECT_GT(pieces, 2u);
  }
  size_t calls = 0;
  EXPECT_FALSE(doc.DumpStreaming(2, [&](std::string_view) { return ++calls < 2; }));
  EXPECT_EQ(calls, 2u);
}

}  // namespace
}  // namespace colabtrace::analyzer
