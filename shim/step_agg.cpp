// The step aggregates: see step_agg.h.
#include "step_agg.h"

#include "clock.h"

namespace colabtrace::shim {

namespace {

using format::StepAggInfo;
using format::StepAggPeriod;

constexpr uint32_t kFailed = UINT32_MAX;  // owner word: no chunks could be had

// A series as its owner keeps it in the shim's memory: its chunks and its last boundary.
struct Series {
  uint32_t owner;  // the owning thread's tid (claimed by compare and swap); 0: none yet
  uint8_t* chunks[format::kStepAggChunksPerSeries];
  bool has_last;
  uint64_t last_ticks;
  ThreadState::StepSums last;
};
Series g_series[format::kStepAggSources] = {};

// One word of a series, stored whole (a reader of the mapping sees the old or the new).
template <class T> inline void Put(T& word, T v) { __atomic_store_n(&word, v, __ATOMIC_RELAXED); }

StepAggInfo* InfoOf(const Series& s) {
  return reinterpret_cast<StepAggInfo*>(s.chunks[0] + format::kStepAggInfoOffset);
}
StepAggPeriod* PeriodsOf(const Series& s) {
  return reinterpret_cast<StepAggPeriod*>(s.chunks[0] + format::kStepAggPeriodsOffset);
}
uint32_t* HistOf(const Series& s, uint32_t hist) {
  return reinterpret_cast<uint32_t*>(s.chunks[format::StepAggHistPart(hist)] + format::StepAggHistAt(hist));
}

// Takes the series' three chunks; the histogram chunks are stamped first and the info's
// chunk last, so a reader that finds the info finds the histograms too.
bool TakeChunks(Series& s, uint32_t source, uint32_t tid) {
  uint8_t* c[format::kStepAggChunksPerSeries];
  for (uint8_t*& chunk : c) {
    chunk = g_recording ? g_trace.AllocChunk(true) : nullptr;
    if (chunk == nullptr) return false;
  }
  auto* info = reinterpret_cast<StepAggInfo*>(c[0] + format::kStepAggInfoOffset);
  info->source = source;
  info->tid = tid;
  info->period_steps = format::kStepAggPeriodSteps;
  for (uint32_t k = format::kStepAggChunksPerSeries; k-- > 0;) {
    auto* ch = reinterpret_cast<format::ChunkHeader*>(c[k]);
    ch->tid = tid;
    ch->base_ticks = Ticks();
    ch->seq = format::StepAggSeq(source, k);
    ch->flags = 0;
    ch->image = g_trace.image();
    __atomic_store_n(&ch->magic, format::kStepAggChunkMagic, __ATOMIC_RELEASE);
  }
  s.chunks[1] = c[1];
  s.chunks[2] = c[2];
  __atomic_store_n(&s.chunks[0], c[0], __ATOMIC_RELEASE);  // other threads look at this one
  return true;
}

// The period the next step goes into: the last one, or a new one once it is full, after
// folding pairs when the table is full (`folding` set meanwhile: a reader that finds it
// set does not read the table).
StepAggPeriod& PeriodFor(const Series& s, StepAggInfo* info, uint64_t start) {
  StepAggPeriod* p = PeriodsOf(s);
  uint32_t n = info->periods;
  if (n > 0 && p[n - 1].steps < info->period_steps) return p[n - 1];
  if (n == format::kStepAggPeriods) {
    __atomic_store_n(&info->folding, 1u, __ATOMIC_RELEASE);
    n = format::FoldStepPeriods(p, n);
    Put(info->period_steps, info->period_steps * 2);
    Put(info->folds, info->folds + 1);
    Put(info->periods, n);
    __atomic_store_n(&info->folding, 0u, __ATOMIC_RELEASE);
    if (p[n - 1].steps < info->period_steps) return p[n - 1];
  }
  Put(p[n].start_ticks, start);
  Put(info->periods, n + 1);
  return p[n];
}

// Sums one timed step [start, end) whose parts (StepPart, kStepTotal and kStepOther not
// yet set) are `parts`.
void AddStep(const Series& s, uint64_t start, uint64_t end, uint64_t* parts) {
  StepAggInfo* info = InfoOf(s);
  parts[format::kStepTotal] = end > start ? end - start : 0;
  const uint64_t split = parts[format::kStepInputWait] + parts[format::kStepGpuSync] + parts[format::kStepIo];
  parts[format::kStepOther] = parts[format::kStepTotal] > split ? parts[format::kStepTotal] - split : 0;
  const uint64_t steps = info->steps;
  if (steps == 0) {
    Put(info->warmup.start_ticks, start);
    Put(info->warmup.end_ticks, end);
    for (uint32_t k = 0; k < format::kStepParts; ++k) Put(info->warmup.parts[k], parts[k]);
  }
  for (uint32_t h = 0; h < format::kStepHistParts; ++h) {
    uint32_t& bucket = HistOf(s, h)[format::StepHistBucket(parts[h])];
    Put(bucket, bucket + 1);
    if (parts[h] >= (uint64_t{1} << format::kStepHistTopBits)) Put(info->clamped, info->clamped + 1);
  }
  for (uint32_t k = 0; k < format::kStepParts; ++k) Put(info->sums[k], info->sums[k] + parts[k]);
  StepAggPeriod& p = PeriodFor(s, info, start);
  for (uint32_t k = 0; k < format::kStepParts; ++k) Put(p.sums[k], p.sums[k] + parts[k]);
  Put(p.end_ticks, end);
  Put(p.steps, p.steps + 1);
  Put(info->steps, steps + 1);
}

// to - from, part by part (the sums only grow).
void Between(const ThreadState::StepSums& from, const ThreadState::StepSums& to, uint64_t* parts) {
  for (uint32_t k = 0; k < format::kStepParts; ++k) parts[k] = to.part[k] - from.part[k];
}

}  // namespace

void StepAggBoundary(uint32_t source, uint64_t at, const ThreadState::StepSums& sums) {
  if (source >= format::kStepAggSources) return;
  Series& s = g_series[source];
  const uint32_t tid = t_thread.tid;
  if (tid == 0) return;  // the thread has written no record: tracing stopped
  uint32_t owner = __atomic_load_n(&s.owner, __ATOMIC_ACQUIRE);
  if (owner == 0 && __atomic_compare_exchange_n(&s.owner, &owner, tid, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    owner = tid;
    if (!TakeChunks(s, source, tid)) {
      __atomic_store_n(&s.owner, kFailed, __ATOMIC_RELEASE);
      return;
    }
  }
  if (owner != tid) {
    // Another thread's series: counted only, once its chunks are there (its owner
    // publishes them before it ever returns from here).
    uint8_t* c = __atomic_load_n(&s.chunks[0], __ATOMIC_ACQUIRE);
    if (owner != kFailed && c != nullptr) {
      __atomic_fetch_add(&reinterpret_cast<StepAggInfo*>(c + format::kStepAggInfoOffset)->other_threads, 1,
                         __ATOMIC_RELAXED);
    }
    return;
  }
  StepAggInfo* info = InfoOf(s);
  uint64_t parts[format::kStepParts];
  if (s.has_last) {
    Between(s.last, sums, parts);
    AddStep(s, s.last_ticks, at, parts);
  } else {
    Put(info->first_ticks, at);
    // An optimizer step ends its iteration: the first one ran from the thread's first
    // recorded batch wait before it, else from the trace's start.
    if (source == static_cast<uint32_t>(format::StepSource::kOptimizer)) {
      ThreadState& t = t_thread;
      const format::FileHeader* h = g_trace.header();
      if (t.first_wait != 0 && t.first_wait < at) {
        Between(t.first_wait_snap, sums, parts);
        AddStep(s, t.first_wait, at, parts);
      } else if (h != nullptr && h->start_ticks < at) {
        Between(ThreadState::StepSums{}, sums, parts);
        AddStep(s, h->start_ticks, at, parts);
      }
    }
  }
  s.has_last = true;
  s.last_ticks = at;
  s.last = sums;
  Put(info->last_ticks, at);
  __atomic_store_n(&info->boundaries, info->boundaries + 1, __ATOMIC_RELEASE);
}

void ResetStepAgg() {
  for (Series& s : g_series) s = Series{};
  ThreadState& t = t_thread;
  t.step = t.wait_snap = t.first_wait_snap = ThreadState::StepSums{};
  t.first_wait = 0;
}

}  // namespace colabtrace::shim
