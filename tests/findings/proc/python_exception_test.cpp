// proc.python-exception (error; KeyboardInterrupt info): a process that ended on an
// uncaught Python exception (PyException records, written by the Python start-up hook).
// Golden traces: the main thread's ValueError raised inside a library (python_stack from
// the program's own line, raised_in the library's), a thread's exception in a process
// that then exited 1 (and one that exited 0: none), a KeyboardInterrupt (info), a
// main-thread record in a process that exited 0 (a REPL: none), and a DataLoader worker's
// exception that the main process re-raised (one finding, on the main process, with the
// worker's record; the worker's own record makes none), and a torch.multiprocessing.spawn
// process's function's exception (spawned). Also processes[].exception.
#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "host_traces.h"
#include "report_findings.h"

namespace colabtrace::testing {
namespace {

using analyzer::ProcessTrace;
using analyzer::Severity;
using hosttest::kStart;

constexpr uint32_t kPid = 4242;
constexpr uint32_t kWorkerPid = 4250;

struct Raised {
  format::PyExceptionHow how;
  std::string type, message, stack;
  uint64_t at = 5000;  // ns after kStart
};

// A python3 train.py process (ppid given) that wrote `raised` and ended with exit code
// `code` (nullopt: died of SIGINT, as CPython ends on an uncaught KeyboardInterrupt).
ProcessTrace Process(uint32_t pid, uint32_t ppid, const std::vector<Raised>& raised, std::optional<int64_t> code) {
  TraceBytesBuilder b(pid, kStart, /*ended=*/true);
  hosttest::ProcessStartRecords(b, pid, ppid, {"python3", "train.py"});
  hosttest::HostIdentity(b, "h", 1ull << 34);
  uint64_t last = kStart;
  for (const Raised& r : raised) {
    format::PyException e;
    e.ts = kStart + r.at;
    e.how = static_cast<uint64_t>(r.how);
    e.type = b.AppendString(r.type, e.ts);
    e.message = b.AppendString(r.message, e.ts);
    e.message_bytes = r.message.size();
    e.py_stack = b.AppendString(r.stack, e.ts);
    e.frames = static_cast<uint64_t>(std::count(r.stack.begin(), r.stack.end(), '\n') + 1);
    b.Append(e);
    last = e.ts;
  }
  if (code) {
    format::Exit x;
    x.ts = last + 1000;
    x.code = *code;
    x.how = static_cast<uint64_t>(format::ExitHow::kExit);
    b.Append(x);
  } else {
    format::Signal s;
    s.ts = last + 1000;
    s.signo = SIGINT;
    s.si_code = 0;
    s.tid = pid;
    b.Append(s);
  }
  return b.Parse();
}

constexpr char kLibraryStack[] =
    "/usr/lib/python3/dist-packages/numpy/core/fromnumeric.py:86 in _wrapreduction\n"
    "/home/u/train.py:12 in step\n"
    "/home/u/train.py:40 in <module>";

TEST(ProcPythonException, MainThreadExceptionFromTheProgramsOwnLine) {
  auto traces = RunOf(Process(kPid, 1, {{format::PyExceptionHow::kMainThread, "ValueError", "bad shape (3,)",
                                         kLibraryStack}},
                              1));
  const auto f = FindingsOf(traces, "proc.python-exception");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kError);
  EXPECT_EQ(f[0].pid, kPid);
  const auto& ev = f[0].evidence;
  EXPECT_EQ(ev["type"].str(), "ValueError");
  EXPECT_EQ(ev["message"].str(), "bad shape (3,)");
  EXPECT_EQ(ev["message_bytes"].as_int(), 14);
  EXPECT_EQ(ev["frames"].as_int(), 3);
  ASSERT_EQ(ev["python_stack"].array().size(), 2u);
  EXPECT_EQ(ev["python_stack"].array()[0].str(), "/home/u/train.py:12 in step");
  EXPECT_EQ(ev["python_stack"].array()[1].str(), "/home/u/train.py:40 in <module>");
  ASSERT_EQ(ev["raised_in"].array().size(), 1u);
  EXPECT_EQ(ev["raised_in"].array()[0].str(),
            "/usr/lib/python3/dist-packages/numpy/core/fromnumeric.py:86 in _wrapreduction");
  EXPECT_FALSE(ev["thread"].boolean());
  EXPECT_EQ(ev.Find("worker"), nullptr);
  EXPECT_EQ(f[0].summary,
            "pid 4242 (python3 train.py) ended on an uncaught ValueError: bad shape (3,) at /home/u/train.py:12 in step");

  // processes[].exception carries the same facts.
  auto report = analyzer::BuildReport(traces, {});
  const auto& row = report->document()["processes"].array()[0];
  ASSERT_NE(row.Find("exception"), nullptr);
  EXPECT_EQ(row["exception"]["type"].str(), "ValueError");
  EXPECT_EQ(row["exception"]["message"].str(), "bad shape (3,)");
  EXPECT_EQ(row["exception"]["python_stack"].array()[0].str(), "/home/u/train.py:12 in step");
}

TEST(ProcPythonException, KeyboardInterruptIsInfo) {
  auto traces = RunOf(Process(kPid, 1, {{format::PyExceptionHow::kMainThread, "KeyboardInterrupt", "",
                                         "/home/u/train.py:7 in <module>"}},
                              std::nullopt));
  const auto f = FindingsOf(traces, "proc.python-exception");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kInfo);
  EXPECT_EQ(f[0].evidence["type"].str(), "KeyboardInterrupt");
  EXPECT_EQ(f[0].summary, "pid 4242 (python3 train.py) ended on an uncaught KeyboardInterrupt at /home/u/train.py:7 in <module>");
}

// A main-thread record in a process that exited 0 ended nothing (an interactive session
// printed it and went on); so did a thread's exception in a process that exited 0.
TEST(ProcPythonException, NoneWhenTheProcessExitedZero) {
  auto traces = RunOf(Process(kPid, 1, {{format::PyExceptionHow::kMainThread, "NameError", "name 'x' is not defined",
                                         "<stdin>:1 in <module>"},
                                        {format::PyExceptionHow::kThread, "OSError", "gone", "/home/u/w.py:3 in run", 9000}},
                              0));
  EXPECT_TRUE(FindingsOf(traces, "proc.python-exception").empty());
  auto report = analyzer::BuildReport(traces, {});
  EXPECT_EQ(report->document()["processes"].array()[0].Find("exception"), nullptr);
}

TEST(ProcPythonException, AThreadsExceptionInAProcessThatThenExitedNonZero) {
  auto traces = RunOf(Process(kPid, 1, {{format::PyExceptionHow::kThread, "OSError", "first", "/home/u/w.py:3 in run"},
                                        {format::PyExceptionHow::kThread, "RuntimeError", "second",
                                         "/home/u/w.py:9 in run", 7000}},
                              1));
  const auto f = FindingsOf(traces, "proc.python-exception");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kError);
  EXPECT_EQ(f[0].evidence["type"].str(), "RuntimeError");  // the last one
  EXPECT_TRUE(f[0].evidence["thread"].boolean());
  EXPECT_EQ(f[0].summary,
            "pid 4242 (python3 train.py) ended on an uncaught RuntimeError: second at /home/u/w.py:9 in run "
            "(in a thread other than the main one)");
}

// A torch.multiprocessing.spawn process: torch's wrapper caught the function's exception,
// passed it to the parent and exited 1. The process ended on it: the finding says so and
// is marked spawned; an exit 0 after one (never torch's path) ends on nothing.
TEST(ProcPythonException, ASpawnedProcesssFunctionRaised) {
  auto traces = RunOf(Process(kPid, 1, {{format::PyExceptionHow::kSpawned, "ValueError", "bad sample at step 4",
                                         "/home/u/spawn_train.py:22 in worker\n"
                                         "/usr/lib/python3/dist-packages/torch/multiprocessing/spawn.py:69 in _wrap"}},
                              1));
  const auto f = FindingsOf(traces, "proc.python-exception");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kError);
  EXPECT_TRUE(f[0].evidence["spawned"].boolean());
  EXPECT_FALSE(f[0].evidence["thread"].boolean());
  EXPECT_EQ(f[0].evidence["python_stack"].array()[0].str(), "/home/u/spawn_train.py:22 in worker");
  EXPECT_EQ(f[0].summary,
            "pid 4242 (python3 train.py) ended on ValueError: bad sample at step 4 at /home/u/spawn_train.py:22 in "
            "worker (raised in the function torch.multiprocessing.spawn ran: torch's wrapper passed it to the "
            "parent and exited 1)");
  // Not marked where the hook did not see it so.
  auto plain = RunOf(Process(kPid, 1, {{format::PyExceptionHow::kMainThread, "ValueError", "x", "/home/u/t.py:1 in f"}}, 1));
  EXPECT_EQ(FindingsOf(plain, "proc.python-exception").at(0).evidence.Find("spawned"), nullptr);
  auto exited_zero = RunOf(Process(kPid, 1, {{format::PyExceptionHow::kSpawned, "ValueError", "x",
                                               "/home/u/t.py:1 in f"}}, 0));
  EXPECT_TRUE(FindingsOf(exited_zero, "proc.python-exception").empty());
}

constexpr char kReraised[] =
    "Caught ZeroDivisionError in DataLoader worker process 0.\n"
    "Original Traceback (most recent call last):\n"
    "  File \"/usr/lib/python3/dist-packages/torch/utils/data/_utils/worker.py\", line 302, in _worker_loop\n";

TEST(ProcPythonException, AWorkersExceptionReRaisedIsOneFindingOnTheMainProcess) {
  std::vector<ProcessTrace> traces;
  traces.push_back(Process(kPid, 1, {{format::PyExceptionHow::kMainThread, "ZeroDivisionError", kReraised,
                                      "/usr/lib/python3/dist-packages/torch/_utils.py:543 in reraise\n"
                                      "/home/u/train.py:30 in <module>",
                                      9000}},
                           1));
  // The worker's record, passed on; it was then ended by its parent (SIGTERM-like exit 0
  // is not needed: its records make no finding whatever its end).
  traces.push_back(Process(kWorkerPid, kPid, {{format::PyExceptionHow::kPassedOn, "ZeroDivisionError",
                                               "division by zero",
                                               "/home/u/train.py:11 in __getitem__\n"
                                               "/usr/lib/python3/dist-packages/torch/utils/data/_utils/fetch.py:58 in <listcomp>"}},
                           1));
  const auto f = FindingsOf(traces, "proc.python-exception");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].pid, kPid);
  const auto& ev = f[0].evidence;
  EXPECT_EQ(ev["type"].str(), "ZeroDivisionError");
  EXPECT_EQ(ev["message"].str(), kReraised);
  EXPECT_EQ(ev["python_stack"].array()[0].str(), "/home/u/train.py:30 in <module>");
  ASSERT_NE(ev.Find("worker"), nullptr);
  EXPECT_EQ(ev["worker"]["pid"].as_int(), kWorkerPid);
  EXPECT_EQ(ev["worker"]["type"].str(), "ZeroDivisionError");
  EXPECT_EQ(ev["worker"]["message"].str(), "division by zero");
  EXPECT_EQ(ev["worker"]["python_stack"].array()[0].str(), "/home/u/train.py:11 in __getitem__");
  EXPECT_EQ(f[0].summary,
            "pid 4242 (python3 train.py) ended on an uncaught ZeroDivisionError: Caught ZeroDivisionError in "
            "DataLoader worker process 0. at /home/u/train.py:30 in <module>; raised in DataLoader worker pid 4250 "
            "at /home/u/train.py:11 in __getitem__");
}

}  // namespace
}  // namespace colabtrace::testing
