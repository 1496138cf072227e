// The cost of recording one small record with the shim's real writer (TraceFile + Emit
// inside a ShimScope, as every hook does), without any hooked call around it.
// Usage: emit_bench TRACE_PATH RECORDS_PER_BATCH BATCHES  -> prints JSON.
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "clock.h"
#include "writer.h"

using namespace colabtrace;

static uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

int main(int argc, char** argv) {
  if (argc != 4) return 2;
  const int per_batch = std::atoi(argv[2]), batches = std::atoi(argv[3]);
  // The writer takes no chunk in a process whose pid differs from g_pid (a raw clone()
  // child still mapping its parent's trace), so set it as the shim's start-up does.
  shim::g_pid = getpid();
  const uint64_t tps = shim::InitTicks();
  if (!shim::g_trace.Create(argv[1], 1, shim::g_ticks_are_tsc ? format::kFeatureTicksAreTsc : 0,
                            tps, shim::Ticks(), shim::MonotonicNs(), shim::RealtimeNs())) {
    std::perror("create");
    return 1;
  }
  shim::g_recording = true;
  std::vector<double> with_clock, emit_only;
  for (int b = 0; b < batches; ++b) {
    // (1) what a read hook adds around the call: two tick reads + scope + Emit.
    uint64_t t0 = NowNs();
    for (int i = 0; i < per_batch; ++i) {
      const uint64_t a = shim::Ticks();
      const uint64_t z = shim::Ticks();
      shim::ShimScope scope;
      format::IoRead r;
      r.ts = a;
      r.api = 1;
      r.fd = 3;
      r.result = 4096;
      r.dur = z - a;
      shim::Emit(r);
    }
    with_clock.push_back(static_cast<double>(NowNs() - t0) / per_batch);
    // (2) the record alone: a precomputed timestamp, scope + Emit.
    const uint64_t base = shim::Ticks();
    t0 = NowNs();
    for (int i = 0; i < per_batch; ++i) {
      shim::ShimScope scope;
      format::IoRead r;
      r.ts = base + static_cast<uint64_t>(i) * 3000;
      r.api = 1;
      r.fd = 3;
      r.result = 4096;
      r.dur = 900;
      shim::Emit(r);
    }
    emit_only.push_back(static_cast<double>(NowNs() - t0) / per_batch);
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  // Every record must have landed: a writer that drops records would look fast.
  const uint64_t used = shim::g_trace.header()->next_chunk_offset - format::kChunkSize;
  const uint64_t records = 2ull * static_cast<uint64_t>(per_batch) * static_cast<uint64_t>(batches);
  if (used < records * 4) {
    std::fprintf(stderr, "emit_bench: only %llu trace bytes for %llu records: records were dropped\n",
                 static_cast<unsigned long long>(used), static_cast<unsigned long long>(records));
    return 1;
  }
  std::printf("{\"emit_ns\": %.1f, \"hook_overhead_ns\": %.1f, \"tsc\": %s}\n", median(emit_only),
              median(with_clock), shim::g_ticks_are_tsc ? "true" : "false");
  shim::g_trace.Close();
  return 0;
}
