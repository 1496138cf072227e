// ct_gen_job: writes the traces of one generated torchrun job to a folder, for the scale
// test of the multi-rank analysis (tests/dist/test_generated_job.py) and the ranks suite
// of tools/bench (issue 38, "Scale").
//
//   ct_gen_job --ranks N --out DIR [--shape healthy|kill|raise] [--culprit R]
//              [--after-step S] [--steps T] [--per-host H] [--mib M] [--threads K]
//
// One trace per process, encoded by the shim's own encoder (TraceBytesBuilder, the
// framing the analyzer's tests share): N ranks of one job on N / H hosts (H ranks per host,
// default 8), each rank a child of its host's torchrun agent (also traced, with no rank
// variables). A rank carries torchrun's variables (RANK, LOCAL_RANK, WORLD_SIZE,
// LOCAL_WORLD_SIZE, GROUP_RANK, TORCHELASTIC_RUN_ID, TORCHELASTIC_RESTART_COUNT,
// MASTER_ADDR, MASTER_PORT), its host (hostname, boot id, memory), a Clock record tying its
// host's CLOCK_MONOTONIC to wall time (each host's monotonic clock starts elsewhere), its
// GPU and an allocation timeline (a caching allocator's segments, grown in the first step,
// never freed), and per step a DataLoader batch wait, a shard of its own read in 64 KiB
// preads from a local ext4 mount, a GPU synchronisation, a resource sample and the
// optimizer step; the reads fill the trace to about M MiB (default 1). Its state chunk
// holds its main thread's call note.
//
// Shapes (how the real 3-rank job of tests/dist/test_torchrun.py ends):
// - healthy: every rank makes T steps (default 10) and exits 0; the agents exit 0.
// - kill: rank R (default 1) is SIGKILLed (as the OOM killer does) in step S + 1, after S
//   steps (default 5), in a pread whose call note stays set; its trace stops there, with
//   no end record. The others, in step S + 1's all-reduce, lose their peer (gloo's
//   "Connection closed by peer": a RuntimeError) and exit 1 30-80 ms later; every agent
//   exits 1 (torchrun's ChildFailedError) 5 s after.
// - raise: rank R raises ValueError("bad sample at step S + 1") in step S + 1 and exits
//   1; the others and the agents follow as for kill. Across hosts the others' exits come
//   30-80 ms after it, closer than the job model trusts two hosts' wall clocks to order
//   (dist::kCrossHostClockUncertaintyNs), so that job gets no verdict, as documented;
//   with every rank on one host (--per-host N) it names rank R.
//
// Prints a manifest on stdout (JSON): the job string, and per trace its file, pid, host,
// role and rank. Exit 0, or 2 with one line on stderr for a bad argument or a failed write.
#include <fcntl.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "colabtrace/format/codec.h"
#include "host_traces.h"
#include "trace_builder.h"

namespace colabtrace::genjob {
namespace {

namespace ctf = colabtrace::format;
using testing::TraceBytesBuilder;

constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kSec = 1'000 * kMs;
constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kGiB = 1024 * kMiB;
// Wall time (CLOCK_REALTIME ns) when the job starts: 2026-11-29 10:00:00 UTC.
constexpr uint64_t kJobWallStart = 1'796'032'800 * kSec;
constexpr uint64_t kStepNs = 1 * kSec;
constexpr uint64_t kReadBytes = 64 * 1024;
constexpr int kShardFd = 7;

enum class Shape { kHealthy, kKill, kRaise };

struct Options {
  int ranks = 0;
  int per_host = 8;
  Shape shape = Shape::kHealthy;
  int culprit = 1;
  int after_step = 5;
  int steps = 10;
  uint64_t bytes = kMiB;
  int threads = 0;
  std::string out;
};

// Where a process of the job lives and when it runs, on the job's axis (ns from the job's
// start) and on its host's CLOCK_MONOTONIC.
struct Place {
  int host = 0;
  std::string host_name;
  uint32_t pid = 0, ppid = 0;
  uint64_t mono_at_job_start = 0;  // its host's CLOCK_MONOTONIC when the job started

  uint64_t Mono(uint64_t job_ns) const { return mono_at_job_start + job_ns; }
  uint64_t Wall(uint64_t job_ns) const { return kJobWallStart + job_ns; }
};

std::string HostName(int h) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "node%03d", h);
  return buf;
}

Place PlaceOf(int host, uint32_t pid, uint32_t ppid) {
  Place p;
  p.host = host;
  p.host_name = HostName(host);
  p.pid = pid;
  p.ppid = ppid;
  // Each host booted at its own time: its monotonic clock reads differently at one instant.
  p.mono_at_job_start = (1'000 + 37 * static_cast<uint64_t>(host)) * kSec;
  return p;
}

uint32_t AgentPid(const Options& o, int host) { return static_cast<uint32_t>(20'000 + host * (o.per_host + 1)); }
uint32_t RankPid(const Options& o, int rank) {
  return AgentPid(o, rank / o.per_host) + 1 + static_cast<uint32_t>(rank % o.per_host);
}

std::string JobString() { return "ct-gen@" + HostName(0) + ":29500"; }

// The records every traced process starts with: its clock, start, argv, host, memory.
void Start(TraceBytesBuilder& b, const Place& p, uint64_t t, const std::vector<std::string>& argv) {
  ctf::Clock c;
  c.ts = t;
  c.mono_ns = t;
  c.realtime_ns = p.Wall(t - p.mono_at_job_start);
  b.Append(c);
  hosttest::ProcessStartRecords(b, p.pid, p.ppid, argv, t, "/usr/bin/python3.11");
  for (const auto& [key, value] : {std::pair<std::string, std::string>{"hostname", p.host_name},
                                   {"boot_id", "boot-" + p.host_name}, {"kernel", "6.1.0-27-amd64"}}) {
    ctf::HostInfo h;
    h.ts = t;
    h.key = b.AppendString(key, t);
    h.value = b.AppendString(value, t);
    b.Append(h);
  }
  for (const auto& [key, value] : {std::pair<std::string, uint64_t>{"mem_total", 2048 * kGiB},
                                   {"cpu_count", 96}, {"cgroup_memory_max", UINT64_MAX}}) {
    ctf::HostNum h;
    h.ts = t;
    h.key = b.AppendString(key, t);
    h.value = value;
    b.Append(h);
  }
}

// The trace's bytes with the header's start wall time set, as the shim writes it (the
// builder leaves it 0).
std::vector<uint8_t> WithStartWall(const TraceBytesBuilder& b, uint64_t wall_ns) {
  std::vector<uint8_t> bytes = b.bytes();
  ctf::FileHeader h;
  std::memcpy(&h, bytes.data(), sizeof(h));
  h.start_realtime_ns = wall_ns;
  std::memcpy(bytes.data(), &h, sizeof(h));
  return bytes;
}

void Exit(TraceBytesBuilder& b, uint64_t t, int64_t code) {
  ctf::Exit e;
  e.ts = t;
  e.code = code;
  e.how = static_cast<uint64_t>(ctf::ExitHow::kExit);
  b.Append(e);
}

// When rank r's process ends, on the job's axis, and how; steps it completes.
struct RankEnd {
  uint64_t at = 0;          // its exit, or (killed) its last record
  bool killed = false;
  int64_t code = 0;
  int steps = 0;
  bool raised = false;      // its own ValueError
  bool lost_peer = false;   // gloo's RuntimeError: the peer is gone
};

// Its agent starts rank r's process 500 ms into the job, its host's ranks 10 ms apart.
uint64_t RankStart(const Options& o, int rank) {
  return 500 * kMs + static_cast<uint64_t>(rank % o.per_host) * 10 * kMs;
}
// The culprit fails 700 ms into step after_step + 1 (its first step ends 1 s after it
// starts, the next a step later), still reading its shard while the others, their reads
// done by 520 ms, wait for it in the step's all-reduce.
uint64_t FailAt(const Options& o) {
  return RankStart(o, o.culprit) + static_cast<uint64_t>(o.after_step) * kStepNs + 700 * kMs;
}

RankEnd EndOf(const Options& o, int rank) {
  RankEnd e;
  if (o.shape == Shape::kHealthy) {
    e.steps = o.steps;
    e.at = RankStart(o, rank) + static_cast<uint64_t>(o.steps) * kStepNs + 200 * kMs;
    return e;
  }
  e.steps = o.after_step;
  const uint64_t fail = FailAt(o);
  if (rank == o.culprit) {
    e.at = fail;
    e.killed = o.shape == Shape::kKill;
    e.raised = o.shape == Shape::kRaise;
    e.code = 1;
    return e;
  }
  e.lost_peer = true;
  e.code = 1;
  e.at = fail + 30 * kMs + static_cast<uint64_t>(rank % 51) * kMs;
  return e;
}

// The trace of rank `rank`.
std::vector<uint8_t> RankTrace(const Options& o, int rank) {
  const int host = rank / o.per_host, local = rank % o.per_host;
  const Place p = PlaceOf(host, RankPid(o, rank), AgentPid(o, host));
  const RankEnd end = EndOf(o, rank);
  const uint64_t t0 = p.Mono(RankStart(o, rank));
  TraceBytesBuilder b(p.pid, t0, /*ended=*/!end.killed);
  Start(b, p, t0, {"/usr/bin/python3.11", "-u", "train.py", "--data", "/data/shards"});
  const std::vector<std::pair<std::string, std::string>> env = {
      {"RANK", std::to_string(rank)},
      {"LOCAL_RANK", std::to_string(local)},
      {"WORLD_SIZE", std::to_string(o.ranks)},
      {"LOCAL_WORLD_SIZE", std::to_string(o.per_host)},
      {"GROUP_RANK", std::to_string(host)},
      {"TORCHELASTIC_RUN_ID", "ct-gen"},
      {"TORCHELASTIC_RESTART_COUNT", "0"},
      {"MASTER_ADDR", HostName(0)},
      {"MASTER_PORT", "29500"},
      {"CUDA_VISIBLE_DEVICES", "0,1,2,3,4,5,6,7"}};
  for (const auto& [name, value] : env) {
    ctf::EnvVar e;
    e.ts = t0;
    e.name = b.AppendString(name, t0);
    e.value = b.AppendString(value, t0);
    e.source = static_cast<uint64_t>(ctf::EnvSource::kStartup);
    b.Append(e);
  }
  uint64_t t = t0 + 1 * kMs;
  for (const auto& [id, type, mp, src] : {std::tuple<uint64_t, const char*, const char*, const char*>{
                                              1, "ext4", "/", "/dev/nvme0n1p1"},
                                          {2, "ext4", "/data", "/dev/nvme1n1"},
                                          {3, "tmpfs", "/dev/shm", "tmpfs"}}) {
    ctf::Mount m;
    m.ts = t;
    m.id = id;
    m.dev = 0x10300 + id;
    m.fstype = b.AppendString(type, t);
    m.mountpoint = b.AppendString(mp, t);
    m.source = b.AppendString(src, t);
    b.Append(m);
  }
  // The main thread's call note: set (a pread of its shard) where the process was killed
  // in it; the shim clears it at every return, so every other trace has it clear.
  ctf::ThreadNotes notes{};
  notes.tid = p.pid;
  if (end.killed) {
    notes.call.call = static_cast<uint32_t>(ctf::InFlightCall::kRead);
    notes.call.api = static_cast<uint32_t>(ctf::IoApi::kPread64);
    notes.call.since = p.Mono(end.at) - 2 * kMs;
    notes.call.object = kShardFd;
  }
  ctf::ProgressBlock progress{static_cast<uint64_t>(end.steps),
                              p.Mono(RankStart(o, rank) + static_cast<uint64_t>(end.steps) * kStepNs)};
  b.AddStateChunk({notes}, 0, 0, progress);

  // The GPU, and the caching allocator's first segments.
  t += 200 * kMs;
  ctf::GpuDevice d;
  d.ts = t;
  d.index = static_cast<uint64_t>(local);
  d.name = b.AppendString("NVIDIA H100 80GB HBM3", t);
  d.cc_major = 9;
  d.total = 80 * kGiB;
  d.pci_bus = static_cast<uint64_t>(0x18 + local);
  b.Append(d);
  uint64_t addr = 0x7f0000000000ull + static_cast<uint64_t>(local) * (1ull << 40);
  const auto alloc = [&](uint64_t size) {
    ctf::GpuAlloc a;
    a.ts = t;
    a.api = static_cast<uint64_t>(ctf::GpuApi::kCudaMalloc);
    a.device = local;
    a.addr = addr;
    a.size = size;
    a.dur = 200'000;
    b.Append(a);
    addr += size;
    t += 300'000;
  };
  for (int i = 0; i < 12; ++i) alloc(20 * kMiB);  // the model's parameters and gradients

  // The steps. Step n ends at start + n s; the reads fill what the trace's size leaves.
  const uint64_t wait_str = b.AppendString("train.py:41 in main", t);
  const int steps_in_trace = end.steps + (o.shape == Shape::kHealthy ? 0 : 1);
  uint64_t read_offset = 0;
  for (int n = 1; n <= steps_in_trace; ++n) {
    const uint64_t step_start = p.Mono(RankStart(o, rank) + static_cast<uint64_t>(n - 1) * kStepNs) + 300 * kMs;
    const bool last = n > end.steps;  // the step it did not finish
    const uint64_t stop =
        last ? p.Mono(end.at) - 2 * kMs : p.Mono(RankStart(o, rank) + static_cast<uint64_t>(n) * kStepNs);
    t = std::max(t, step_start);
    ctf::BatchWait w;
    w.ts = t;
    w.dur = 8 * kMs;
    w.kind = static_cast<uint64_t>(ctf::BatchWaitKind::kDataLoader);
    w.where = wait_str;
    w.n = static_cast<uint64_t>(n - 1);
    b.Append(w);
    t += 9 * kMs;
    if (n == 1) {
      for (int i = 0; i < 24; ++i) alloc(2 * kMiB << (i % 4));  // activations: grown in the first step
    }
    char shard[96];
    std::snprintf(shard, sizeof(shard), "/data/shards/shard-%05d-%04d.tar", rank, n);
    ctf::IoOpen op;
    op.ts = t;
    op.api = static_cast<uint64_t>(ctf::IoApi::kOpen64);
    op.fd = kShardFd;
    op.path = b.AppendString(shard, t);
    op.flags = O_RDONLY;
    op.dur = 20'000;
    op.mount = 2;
    b.Append(op);
    t += 25'000;
    // Reads until this step's share of the trace's bytes is written (or the step's time
    // for I/O, 500 ms, is spent).
    const uint64_t target = o.bytes * static_cast<uint64_t>(n) / static_cast<uint64_t>(steps_in_trace);
    const uint64_t io_end =
        last && rank == o.culprit ? stop - 2 * kMs : std::min(stop - 60 * kMs, step_start + 520 * kMs);
    while (b.bytes().size() < target && t + 20'000 < io_end) {
      ctf::IoReadAt r;
      r.ts = t;
      r.api = static_cast<uint64_t>(ctf::IoApi::kPread64);
      r.fd = kShardFd;
      r.result = static_cast<int64_t>(kReadBytes);
      r.dur = 9'000 + (read_offset / kReadBytes) % 7 * 500;
      r.offset = read_offset;
      b.Append(r);
      read_offset += kReadBytes;
      t += 14'000;
    }
    if (last) {  // it failed before it closed the shard
      if (end.killed) {
        // Its last record: the periodic sample the shim took 1 ms before the pread it died in.
        ctf::Sample sm;
        sm.ts = p.Mono(end.at) - 3 * kMs;
        sm.rss_bytes = 6 * kGiB + static_cast<uint64_t>(n) * 4 * kMiB;
        sm.cgroup_current = UINT64_MAX;
        sm.oom_kill = UINT64_MAX;
        sm.threads = 24;
        b.Append(sm);
      }
      break;
    }
    ctf::IoClose cl;
    cl.ts = t;
    cl.api = static_cast<uint64_t>(ctf::IoApi::kClose);
    cl.fd = kShardFd;
    b.Append(cl);
    t = std::max(t + kMs, stop - 50 * kMs);
    ctf::GpuSync s;
    s.ts = t;
    s.api = static_cast<uint64_t>(ctf::GpuApi::kCudaStreamSynchronize);
    s.dur = 40 * kMs;
    b.Append(s);
    t += 41 * kMs;
    ctf::Sample sm;
    sm.ts = t;
    sm.rss_bytes = 6 * kGiB + static_cast<uint64_t>(n) * 4 * kMiB;
    sm.cgroup_current = UINT64_MAX;
    sm.oom_kill = UINT64_MAX;
    sm.threads = 24;
    sm.utime_ns = static_cast<uint64_t>(n) * 900 * kMs;
    sm.stime_ns = static_cast<uint64_t>(n) * 60 * kMs;
    b.Append(sm);
    t = std::max(t + kMs, stop);
    ctf::Step st;
    st.ts = t;
    st.n = static_cast<uint64_t>(n);
    st.source = static_cast<uint64_t>(ctf::StepSource::kOptimizer);
    b.Append(st);
    t += kMs;
  }
  const uint64_t at = p.Mono(end.at);
  if (end.raised || end.lost_peer) {
    ctf::PyException x;
    x.ts = at - kMs;
    x.how = static_cast<uint64_t>(ctf::PyExceptionHow::kMainThread);
    const std::string message =
        end.raised ? "bad sample at step " + std::to_string(end.steps + 1)
                   : "[../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection closed by peer [" +
                         HostName(o.culprit / o.per_host) + "]:29500";
    x.type = b.AppendString(end.raised ? "ValueError" : "RuntimeError", x.ts);
    x.message = b.AppendString(message, x.ts);
    x.message_bytes = message.size();
    x.py_stack = b.AppendString(end.raised ? "train.py:38 in sample\ntrain.py:52 in main\ntrain.py:80 in <module>"
                                           : "torch/autograd/__init__.py:197 in backward\n"
                                             "torch/_tensor.py:487 in backward\ntrain.py:57 in main\n"
                                             "train.py:80 in <module>",
                                x.ts);
    x.frames = end.raised ? 3 : 4;
    b.Append(x);
  }
  if (!end.killed) Exit(b, at, end.code);
  return WithStartWall(b, p.Wall(RankStart(o, rank)));
}

// The trace of host `host`'s torchrun agent: it forks the host's ranks and exits when they
// have ended, reaping each (1 when one failed: ChildFailedError), a second after the last.
std::vector<uint8_t> AgentTrace(const Options& o, int host) {
  const Place p = PlaceOf(host, AgentPid(o, host), 1'500);
  const uint64_t t0 = p.Mono(0);
  TraceBytesBuilder b(p.pid, t0);
  const int nodes = (o.ranks + o.per_host - 1) / o.per_host;
  Start(b, p, t0,
        {"/usr/bin/python3.11", "/usr/bin/torchrun", "--nnodes", std::to_string(nodes), "--nproc_per_node",
         std::to_string(o.per_host), "--rdzv_backend", "c10d", "--rdzv_endpoint", HostName(0) + ":29500",
         "--rdzv_id", "ct-gen", "train.py", "--data", "/data/shards"});
  uint64_t last_end = 0;
  bool failed = false;
  // Its polls of its workers reap each 50 ms after it ended (waitpid: the status word).
  std::vector<std::pair<uint64_t, ctf::WaitStatus>> reaps;
  for (int r = host * o.per_host; r < std::min(o.ranks, (host + 1) * o.per_host); ++r) {
    ctf::Fork f;
    f.ts = p.Mono(RankStart(o, r)) - kMs;
    f.child_pid = RankPid(o, r);
    b.Append(f);
    const RankEnd e = EndOf(o, r);
    last_end = std::max(last_end, e.at);
    failed = failed || e.killed || e.code != 0;
    ctf::WaitStatus w;
    w.ts = p.Mono(e.at + 50 * kMs);
    w.pid = RankPid(o, r);
    w.status = e.killed ? 9 : static_cast<uint64_t>(e.code) << 8;
    w.api = static_cast<uint64_t>(ctf::WaitApi::kWaitpid);
    reaps.emplace_back(w.ts, w);
  }
  std::sort(reaps.begin(), reaps.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  size_t next_reap = 0;
  for (uint64_t at = 5 * kSec; at < last_end; at += 5 * kSec) {
    for (; next_reap < reaps.size() && reaps[next_reap].first < p.Mono(at); ++next_reap) {
      b.Append(reaps[next_reap].second);
    }
    ctf::Sample s;
    s.ts = p.Mono(at);
    s.rss_bytes = 180 * kMiB;
    s.cgroup_current = UINT64_MAX;
    s.oom_kill = UINT64_MAX;
    s.threads = 3;
    b.Append(s);
  }
  for (; next_reap < reaps.size(); ++next_reap) b.Append(reaps[next_reap].second);
  Exit(b, p.Mono(last_end + kSec), failed ? 1 : 0);
  return WithStartWall(b, p.Wall(0));
}

std::string TraceFile(uint32_t pid) { return "colabtrace.python3.11." + std::to_string(pid) + ".ctrace"; }

std::string JsonString(const std::string& s) { return "\"" + s + "\""; }  // names made here: no escapes

int Usage(const std::string& why) {
  std::cerr << "ct_gen_job: " << why
            << "\nusage: ct_gen_job --ranks N --out DIR [--shape healthy|kill|raise] [--culprit R] "
               "[--after-step S] [--steps T] [--per-host H] [--mib M] [--threads K]\n";
  return 2;
}

bool Number(const char* s, int lo, int* out) {
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0' || v < lo || v > (1 << 20)) return false;
  *out = static_cast<int>(v);
  return true;
}

int Main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) return Usage(a + " needs a value");
    const char* v = argv[++i];
    int mib = 0;
    bool ok = true;
    if (a == "--ranks") {
      ok = Number(v, 1, &o.ranks);
    } else if (a == "--out") {
      o.out = v;
    } else if (a == "--shape") {
      const std::string s = v;
      ok = s == "healthy" || s == "kill" || s == "raise";
      o.shape = s == "kill" ? Shape::kKill : s == "raise" ? Shape::kRaise : Shape::kHealthy;
    } else if (a == "--culprit") {
      ok = Number(v, 0, &o.culprit);
    } else if (a == "--after-step") {
      ok = Number(v, 0, &o.after_step);
    } else if (a == "--steps") {
      ok = Number(v, 1, &o.steps);
    } else if (a == "--per-host") {
      ok = Number(v, 1, &o.per_host);
    } else if (a == "--mib") {
      ok = Number(v, 1, &mib);
      o.bytes = static_cast<uint64_t>(mib) * kMiB;
    } else if (a == "--threads") {
      ok = Number(v, 1, &o.threads);
    } else {
      return Usage("unknown option " + a);
    }
    if (!ok) return Usage("bad value for " + a + ": " + v);
  }
  if (o.ranks == 0 || o.out.empty()) return Usage("--ranks and --out are required");
  if (o.shape != Shape::kHealthy && o.culprit >= o.ranks) return Usage("--culprit must be below --ranks");
  std::error_code ec;
  std::filesystem::create_directories(o.out, ec);
  if (ec) return Usage("cannot create " + o.out + ": " + ec.message());

  // Work items: the ranks, then the hosts' agents.
  const int hosts = (o.ranks + o.per_host - 1) / o.per_host;
  const int items = o.ranks + hosts;
  std::atomic<int> next{0};
  std::atomic<bool> failed{false};
  const auto worker = [&] {
    for (int i; (i = next.fetch_add(1)) < items;) {
      const bool rank = i < o.ranks;
      const std::vector<uint8_t> bytes = rank ? RankTrace(o, i) : AgentTrace(o, i - o.ranks);
      const uint32_t pid = rank ? RankPid(o, i) : AgentPid(o, i - o.ranks);
      std::ofstream f(o.out + "/" + TraceFile(pid), std::ios::binary | std::ios::trunc);
      f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
      if (!f) failed = true;
    }
  };
  const int threads = o.threads > 0 ? o.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (int k = 1; k < threads; ++k) pool.emplace_back(worker);
  worker();
  for (auto& th : pool) th.join();
  if (failed) {
    std::cerr << "ct_gen_job: cannot write the traces into " << o.out << "\n";
    return 2;
  }
  std::cout << "{\"job\": " << JsonString(JobString()) << ", \"traces\": [";
  for (int i = 0; i < items; ++i) {
    const bool rank = i < o.ranks;
    const int host = rank ? i / o.per_host : i - o.ranks;
    const uint32_t pid = rank ? RankPid(o, i) : AgentPid(o, host);
    std::cout << (i == 0 ? "" : ", ") << "\n  {\"file\": " << JsonString(TraceFile(pid)) << ", \"pid\": " << pid
              << ", \"host\": " << JsonString(HostName(host)) << ", \"role\": " << (rank ? "\"rank\"" : "\"launcher\"")
              << ", \"rank\": " << (rank ? std::to_string(i) : "null") << "}";
  }
  std::cout << "\n]}\n";
  return 0;
}

}  // namespace
}  // namespace colabtrace::genjob

int main(int argc, char** argv) { return colabtrace::genjob::Main(argc, argv); }
