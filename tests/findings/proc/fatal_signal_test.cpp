// proc.fatal-signal (error): a process that died of SIGSEGV, SIGBUS, SIGABRT, SIGILL or
// SIGFPE. Golden traces: a kernel-raised SIGSEGV (si_code > 0: the fault address) in a
// Python process (its Python stack), and a SIGABRT it sent itself (si_code < 0: the
// sender, not an address). A SIGTERM death is no crash.
#include <gtest/gtest.h>

#include <csignal>
#include <cstdint>
#include <string>
#include <vector>

#include "host_traces.h"
#include "report_findings.h"

namespace colabtrace::testing {
namespace {

using analyzer::ProcessTrace;
using analyzer::Severity;

constexpr uint32_t kPid = 4242;
using hosttest::kStart;

// A python3 process that dies of signo (its Signal record, the shim's last).
ProcessTrace DiedOf(uint64_t signo, int64_t si_code, uint64_t addr, const std::string& py_stack) {
  TraceBytesBuilder b(kPid, kStart, /*ended=*/true);
  hosttest::ProcessStartRecords(b, kPid, 1, {"python3", "train.py"});
  format::Signal s;
  s.ts = kStart + 5000;
  s.signo = signo;
  s.si_code = si_code;
  s.addr = addr;
  s.tid = kPid;
  s.py_stack = py_stack.empty() ? 0 : b.AppendString(py_stack, s.ts);
  b.Append(s);
  return b.Parse();
}

TEST(ProcFatalSignal, KernelFaultGivesTheFaultAddressAndThePythonStack) {
  auto traces = RunOf(DiedOf(SIGSEGV, 1 /* SEGV_MAPERR */, 0x10, "train.py:12 in step\ntrain.py:40 in <module>"));
  const auto f = FindingsOf(traces, "proc.fatal-signal");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kError);
  EXPECT_EQ(f[0].pid, kPid);
  const auto& ev = f[0].evidence;
  EXPECT_EQ(ev["signal"].as_int(), SIGSEGV);
  EXPECT_EQ(ev["signal_name"].str(), "SIGSEGV");
  EXPECT_EQ(ev["si_code"].as_int(), 1);
  EXPECT_EQ(ev["tid"].as_int(), kPid);
  EXPECT_EQ(ev["fault_address"].str(), "0x10");
  EXPECT_EQ(ev.Find("sender_pid"), nullptr);
  ASSERT_EQ(ev["python_stack"].array().size(), 2u);
  EXPECT_EQ(ev["python_stack"].array()[0].str(), "train.py:12 in step");
  EXPECT_EQ(ev["python_stack"].array()[1].str(), "train.py:40 in <module>");
  EXPECT_TRUE(ev["stack"].array().empty());
  EXPECT_TRUE(ev["shm_mapping"].is_null());
  EXPECT_TRUE(ev["reaped_by"].is_null());
  EXPECT_EQ(f[0].summary, "pid 4242 (python3 train.py) died of SIGSEGV (fault address 0x10) at train.py:12 in step");
}

TEST(ProcFatalSignal, SentSignalGivesTheSenderInsteadOfAnAddress) {
  std::vector<ProcessTrace> traces;
  // si_code SI_TKILL (raise, abort); si_addr's slot holds si_pid (low) and si_uid (high).
  traces.push_back(DiedOf(SIGABRT, -6, (1000ull << 32) | kPid, ""));
  const auto f = FindingsOf(traces, "proc.fatal-signal");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kError);
  EXPECT_EQ(f[0].pid, kPid);
  const auto& ev = f[0].evidence;
  EXPECT_EQ(ev["signal"].as_int(), SIGABRT);
  EXPECT_EQ(ev["signal_name"].str(), "SIGABRT");
  EXPECT_EQ(ev["sender_pid"].as_int(), kPid);
  EXPECT_EQ(ev["sender_uid"].as_int(), 1000);
  EXPECT_EQ(ev.Find("fault_address"), nullptr);
  EXPECT_TRUE(ev["python_stack"].is_null());  // no Python frame recorded
  EXPECT_EQ(f[0].summary, "pid 4242 (python3 train.py) died of SIGABRT that it sent itself (raise, abort or kill)");
}

// A termination request ends the process "signaled", with no crash finding.
TEST(ProcFatalSignal, SigtermIsNoCrash) {
  auto traces = RunOf(DiedOf(SIGTERM, 0 /* SI_USER */, (1000ull << 32) | 77, ""));
  EXPECT_TRUE(FindingsOf(traces, "proc.fatal-signal").empty());
}

}  // namespace
}  // namespace colabtrace::testing
