// proc.hang (error): the job stopped making progress with a thread stuck in a call.
// Golden traces: a step loop (pid 100) of 5 iterations fed by two DataLoader workers
// (101, 102) on a FUSE mount; after step 5 worker 0 never returns from a read, and the
// main process waits for its batch. The main process keeps polling its workers (its
// periodic sample, 14.5 s in), then the whole job is killed. The notes are state chunks as
// the shim leaves them (wire.h), read back by the real reader. Near misses: killed 5 s in
// (below 10 s), a loop that kept stepping, a process killed while busy in no call, a
// note half written, and a GPU synchronisation waiting for kernels that never finished.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "report/report.h"
#include "report_findings.h"
#include "step_trace_builder.h"

namespace colabtrace::testing {
namespace {

using analyzer::ProcessTrace;
using analyzer::Severity;
using steptest::TraceBuilder;
namespace ctf = colabtrace::format;

constexpr uint64_t kMs = 1'000'000;

ctf::ThreadNotes Notes(uint32_t tid) {
  ctf::ThreadNotes n{};
  n.tid = tid;
  return n;
}

// The main process: 5 iterations (10 ms wait, 40 ms compute), then a batch wait that
// never ends (since 265 ms). Its last record: a sample at last_ms. keep_stepping: the loop
// instead goes on stepping until last_ms (a worker stuck, the others serving).
ProcessTrace MainProcess(uint64_t last_ms, bool keep_stepping = false) {
  TraceBuilder b(100, 1, 1000, /*killed=*/true);
  iotest::Mounts(b);
  b.Mount(6, "fuse.slowfs", "/mnt/slow", "slowfs");
  steptest::Forked(b, 101);
  steptest::Forked(b, 102);
  const uint64_t where = b.Str("train.py:25 in main");
  b.AdvanceTo(10 * kMs);
  for (int i = 0; i < 5; ++i) steptest::Iteration(b, i, 10 * kMs, 40 * kMs, where);
  int n = 5;
  while (keep_stepping && b.now() + 50 * kMs < last_ms * kMs) steptest::Iteration(b, n++, 10 * kMs, 40 * kMs, where);
  const uint64_t wait_since = b.now() + 5 * kMs;
  b.AdvanceTo(last_ms * kMs);
  steptest::CpuSample(b, 100 * kMs);
  ctf::ThreadNotes main = Notes(100);
  main.wait.call = static_cast<uint32_t>(ctf::InFlightCall::kBatchWait);
  main.wait.api = 1;
  main.wait.since = wait_since;
  main.wait.where = where;
  b.raw().AddStateChunk({main});
  return b.Finish();
}

// Worker `id` (pid 101 + id) reads 8 files of the mount; worker 0 then opens a ninth
// (fd 9, at 250 ms) and never returns from its read. busy_killed: no note at all.
ProcessTrace Worker(uint64_t id, bool stuck) {
  TraceBuilder b(static_cast<uint32_t>(101 + id), 100, 5 * kMs, /*killed=*/true);
  iotest::Mounts(b);
  b.Mount(6, "fuse.slowfs", "/mnt/slow", "slowfs");
  steptest::WorkerRole(b, id);
  for (int i = 0; i < 8; ++i) {
    b.ReadWholeFile("/mnt/slow/train/f" + std::to_string(id * 8 + i) + ".bin", 6, 7, 4096, 12 * kMs, kMs);
  }
  if (stuck) {
    b.AdvanceTo(250 * kMs);
    b.Open(b.Str("/mnt/slow/train/f99.bin"), 9, 6, 12 * kMs);
    ctf::ThreadNotes w = Notes(101 + static_cast<uint32_t>(id));
    w.call.call = static_cast<uint32_t>(ctf::InFlightCall::kRead);
    w.call.api = static_cast<uint32_t>(ctf::IoApi::kRead);
    w.call.since = b.now() + 1000;
    w.call.object = 9;
    b.raw().AddStateChunk({w});
  }
  return b.Finish();
}

std::vector<ProcessTrace> Job(uint64_t killed_after_ms, bool keep_stepping = false) {
  std::vector<ProcessTrace> run;
  run.push_back(MainProcess(killed_after_ms, keep_stepping));
  run.push_back(Worker(0, true));
  run.push_back(Worker(1, false));
  return run;
}

TEST(ProcHang, AWorkerStuckOnAFuseReadAndTheLoopWaitingForItsBatch) {
  auto traces = Job(14'500);
  const auto f = FindingsOf(traces, "proc.hang");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kError);
  EXPECT_EQ(f[0].pid, 100);
  EXPECT_EQ(f[0].summary,
            "no step for 14.2 s after step 5 (median step 50.0 ms): the main process (pid 100) waited 14.2 s "
            "for the next batch at train.py:25 in main; DataLoader worker 0 (pid 101) was blocked 14.2 s in "
            "read() of /mnt/slow/train/f99.bin (fuse.slowfs); then the job was killed");
  const auto& ev = f[0].evidence;
  EXPECT_EQ(ev["ended_by"].str(), "killed");
  EXPECT_EQ(ev["threshold_ns"].as_int(), 10'000'000'000);
  EXPECT_EQ(ev["last_step"].as_int(), 5);
  ASSERT_EQ(ev["stuck_pids"].array().size(), 2u);
  EXPECT_EQ(ev["stuck_pids"].array()[0].as_int(), 100);
  EXPECT_EQ(ev["stuck_pids"].array()[1].as_int(), 101);
  // Every process that did not end cleanly, the idle worker too.
  const auto& procs = ev["processes"].array();
  ASSERT_EQ(procs.size(), 3u);
  EXPECT_EQ(procs[0]["role"].str(), "main");
  EXPECT_EQ(procs[1]["role"].str(), "dataloader-worker");
  EXPECT_EQ(procs[1]["worker_id"].as_int(), 0);
  EXPECT_TRUE(procs[1]["stuck"].boolean());
  EXPECT_FALSE(procs[2]["stuck"].boolean());
  EXPECT_TRUE(procs[2]["in_flight"].array().empty());
  const auto& read = procs[1]["in_flight"].array().at(0);
  EXPECT_EQ(read["call"].str(), "read");
  EXPECT_EQ(read["api"].str(), "read");
  EXPECT_EQ(read["fd"].as_int(), 9);
  EXPECT_EQ(read["path"].str(), "/mnt/slow/train/f99.bin");
  EXPECT_EQ(read["mount"].str(), "/mnt/slow");
  EXPECT_EQ(read["fs_type"].str(), "fuse.slowfs");
  // No proc.killed for a process of the hung job.
  EXPECT_TRUE(FindingsOf(traces, "proc.killed").empty());
  // processes[].in_flight: every process has one.
  auto report = analyzer::BuildReport(traces, {});
  const analyzer::Json& doc = report->Finish();
  const auto& rows = doc["processes"].array();
  ASSERT_EQ(rows.size(), 3u);
  ASSERT_EQ(rows[0]["in_flight"].array().size(), 1u);
  EXPECT_EQ(rows[0]["in_flight"].array()[0]["call"].str(), "batch_wait");
  EXPECT_EQ(rows[0]["in_flight"].array()[0]["where"].str(), "train.py:25 in main");
  EXPECT_EQ(rows[1]["in_flight"].array()[0]["blocked_ns"].as_int(), 14'500 * kMs - (262 * kMs + 1001));
  EXPECT_TRUE(rows[2]["in_flight"].array().empty());
}

// Each killed process's proc.killed names the call it was killed inside (found on an
// H200: a hung process killed under plain LD_PRELOAD was told of memory alone); one that
// was in none says nothing of calls.
TEST(ProcHang, KilledFiveSecondsInIsNoHangButAKill) {
  auto traces = Job(5'000);
  EXPECT_TRUE(FindingsOf(traces, "proc.hang").empty());
  const auto f = FindingsOf(traces, "proc.killed");
  ASSERT_EQ(f.size(), 3u);
  std::map<int64_t, const analyzer::Finding*> by_pid;
  for (const auto& k : f) by_pid[k.pid] = &k;
  const std::string main = by_pid.at(100)->summary, stuck = by_pid.at(101)->summary;
  EXPECT_NE(main.find("; it was killed inside the wait for the next batch at train.py:25 in main, entered at +"),
            std::string::npos) << main;
  EXPECT_NE(stuck.find("; it was killed inside read() of /mnt/slow/train/f99.bin (fuse.slowfs), entered at +"),
            std::string::npos) << stuck;
  EXPECT_EQ(by_pid.at(102)->summary.find("killed inside"), std::string::npos) << by_pid.at(102)->summary;
  ASSERT_EQ(by_pid.at(101)->evidence["in_flight"].array().size(), 1u);
  EXPECT_EQ(by_pid.at(101)->evidence["in_flight"].array()[0]["call"].str(), "read");
  EXPECT_TRUE(by_pid.at(102)->evidence["in_flight"].array().empty());
}

TEST(ProcHang, ALoopThatKeptSteppingIsNoHang) {
  auto traces = Job(14'500, /*keep_stepping=*/true);
  EXPECT_TRUE(FindingsOf(traces, "proc.hang").empty());
}

TEST(ProcHang, AProcessKilledWhileBusyInNoCallStaysKilled) {
  TraceBuilder b(300, 1, 1000, /*killed=*/true);
  b.Advance(20'000 * kMs);
  steptest::CpuSample(b, 19'000 * kMs);
  b.raw().AddStateChunk({Notes(300)});
  auto traces = RunOf(b.Finish());
  EXPECT_TRUE(FindingsOf(traces, "proc.hang").empty());
  EXPECT_EQ(FindingsOf(traces, "proc.killed").size(), 1u);
}

// A note whose `call` word was never stored (the process died while writing it) is no call;
// a call code this reader does not know is skipped.
TEST(ProcHang, AHalfWrittenNoteReadsAsNoCall) {
  TraceBuilder b(300, 1, 1000, /*killed=*/true);
  b.Advance(20'000 * kMs);
  steptest::CpuSample(b, 0);
  ctf::ThreadNotes half = Notes(300);
  half.call.api = static_cast<uint32_t>(ctf::IoApi::kRead);
  half.call.since = 2000;
  half.call.object = 3;
  ctf::ThreadNotes unknown = Notes(301);
  unknown.call.call = 200;
  unknown.call.since = 2000;
  b.raw().AddStateChunk({half, unknown});
  const ProcessTrace t = b.Finish();
  EXPECT_TRUE(t.records.InFlight.empty());
  auto traces = RunOf(ProcessTrace(t));
  EXPECT_TRUE(FindingsOf(traces, "proc.hang").empty());
}

// A program blocked in cudaDeviceSynchronize behind kernels that never finished: the
// launch ring left in the trace names them, newest first; the one before the last
// completed synchronisation is not in flight. Format 1.1 slots carry each launch's Python
// stack; format 1.0 ones held an address there, which the reader ignores.
void BuildGpuSyncHang(TraceBuilder& b, uint16_t version_minor) {
  const uint64_t names[] = {b.Str("fill"), b.Str("scale"), b.Str("spin")};
  for (uint64_t k = 0; k < 3; ++k) {
    ctf::GpuFunction g;
    g.api = static_cast<uint64_t>(ctf::GpuApi::kCuModuleGetFunction);
    g.handle = 0x1000 + k;
    g.name = names[k];
    b.Add(g);
  }
  const uint64_t stacks[] = {0, b.Str("train.py:9 in launch\ntrain.py:20 in step\ntrain.py:30 in <module>"),
                             b.Str("/venv/lib/python3.12/site-packages/triton/runtime/jit.py:700 in run\n"
                                   "train.py:21 in step\ntrain.py:30 in <module>")};
  b.Advance(15'000 * kMs);
  steptest::CpuSample(b, 0);
  ctf::ThreadNotes n = Notes(400);
  n.call.call = static_cast<uint32_t>(ctf::InFlightCall::kGpuSync);
  n.call.api = static_cast<uint32_t>(ctf::GpuApi::kCudaDeviceSynchronize);
  n.call.since = 3 * kMs;
  n.call.epoch = 4;
  n.call.flags = ctf::kNoteDeviceWide;
  // A device-wide synchronisation that began at epoch 2 completed "fill".
  b.raw().AddStateChunk({n}, 0, 0, {}, /*synced_device=*/2);
  ctf::LaunchRing ring{};
  ring.owner = 400;
  ring.next = 3;
  const uint32_t epochs[] = {1, 3, 3};
  for (uint32_t k = 0; k < 3; ++k) {
    ctf::RingSlot& s = ring.slots[k + 1];
    s.seq = k + 1;
    s.epoch = epochs[k];
    s.api = static_cast<uint16_t>(ctf::GpuApi::kCuLaunchKernel);
    s.func = 0x1000 + k;
    s.stream = 0x77;
    s.grid[0] = 1, s.grid[1] = 1, s.grid[2] = 1;
    s.block[0] = 32, s.block[1] = 1, s.block[2] = 1;
    s.py_stack = version_minor >= 1 ? stacks[k] : 0x7f0012345678 + k;  // 1.0: a code object's address
  }
  b.raw().AddRingChunk({ring});
  b.raw().SetVersionMinor(version_minor);
}

TEST(ProcHang, AGpuSyncNamesTheKernelsInFlightNewestFirst) {
  TraceBuilder b(400, 1, 1000, /*killed=*/true);
  BuildGpuSyncHang(b, ctf::kVersionMinor);
  auto job = RunOf(b.Finish());
  const auto f = FindingsOf(job, "proc.hang");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].pid, 400);
  const auto& call = f[0].evidence["processes"].array().at(0)["in_flight"].array().at(0);
  EXPECT_EQ(call["call"].str(), "gpu_sync");
  EXPECT_EQ(call["api"].str(), "cudaDeviceSynchronize");
  EXPECT_TRUE(call["device_wide"].boolean());
  const auto& kernels = call["kernels"].array();
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_EQ(kernels[0]["kernel"].str(), "spin");
  EXPECT_EQ(kernels[1]["kernel"].str(), "scale");
  // Each kernel's whole Python stack; its line is the program's own innermost frame
  // (spin was launched through Triton, scale through the program's helper).
  ASSERT_TRUE(kernels[0]["python_stack"].is_array());
  EXPECT_EQ(kernels[0]["python_stack"].array().size(), 3u);
  EXPECT_EQ(kernels[0]["python_stack"].array().at(0).str(),
            "/venv/lib/python3.12/site-packages/triton/runtime/jit.py:700 in run");
  EXPECT_EQ(kernels[0]["python_line"].str(), "train.py:21 in step");
  ASSERT_TRUE(kernels[1]["python_stack"].is_array());
  EXPECT_EQ(kernels[1]["python_stack"].array().at(1).str(), "train.py:20 in step");
  EXPECT_EQ(kernels[1]["python_line"].str(), "train.py:9 in launch");
  EXPECT_NE(f[0].summary.find("was blocked 15.0 s in cudaDeviceSynchronize() waiting for kernel spin (and 1 more "
                              "launched before it)"),
            std::string::npos)
      << f[0].summary;
  EXPECT_TRUE(FindingsOf(job, "proc.killed").empty());
}

TEST(ProcHang, AFormat10RingHasNoPythonStacks) {
  TraceBuilder b(400, 1, 1000, /*killed=*/true);
  BuildGpuSyncHang(b, 0);
  auto job = RunOf(b.Finish());
  const auto f = FindingsOf(job, "proc.hang");
  ASSERT_EQ(f.size(), 1u);
  const auto& kernels = f[0].evidence["processes"].array().at(0)["in_flight"].array().at(0)["kernels"].array();
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_EQ(kernels[0]["kernel"].str(), "spin");
  for (const auto& k : kernels) {
    EXPECT_TRUE(k["python_stack"].is_null());
    EXPECT_TRUE(k["python_line"].is_null());
  }
}

}  // namespace
}  // namespace colabtrace::testing
