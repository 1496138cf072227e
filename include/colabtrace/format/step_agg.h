// Step aggregate chunks (format 1.4): exact sums, histograms and per-period sums of every
// step of the run, kept in place so that Step and BatchWait records may give way to the
// window (docs/trace-format.md, "Step aggregate chunks").
//
// The shim keeps one *series* per step source (format::StepSource kMarker and kOptimizer,
// and kStepAggBatchWaits for the batch waits), for the one thread whose boundaries it sums
// (the first that wrote one of that source), in three chunks with magic CTSA: ChunkHeader
// tid the thread, seq StepAggSeq(source, part), image the exec image. Part 0 holds the
// StepAggInfo, the period table and the step time's histogram; parts 1 and 2 two part
// histograms each. Only the owning thread writes a series; every word is stored whole
// (relaxed atomics), and a step's figures go in before `boundaries` is raised, so a
// SIGKILL leaves a series that reads, short of at most the step being written.
#pragma once

#include <cstdint>

#include "colabtrace/format/wire.h"

namespace colabtrace::format {

inline constexpr uint32_t kStepAggChunkMagic = 0x41535443;  // "CTSA"

// The series of batch waits (each recorded wait's start is a boundary).
inline constexpr uint32_t kStepAggBatchWaits = 2;
inline constexpr uint32_t kStepAggSources = 3;

// What a step is split into, as the analyzer's StepTime splits it (analyzer/perf/
// step_model.h); durations in ticks. The first five have histograms.
enum StepPart : uint32_t {
  kStepTotal = 0,      // the step's wall time, boundary to boundary
  kStepInputWait = 1,  // recorded batch waits of the thread
  kStepGpuSync = 2,    // GpuSync records outside them
  kStepIo = 3,         // file calls (records with a duration) outside both
  kStepOther = 4,      // the rest
  kStepWaitIo = 5,     // file calls inside batch waits
  kStepIoCalls = 6,    // file calls of the thread (a count), inside waits or not
  kStepIoCallTicks = 7,  // and their time
};
inline constexpr uint32_t kStepParts = 8;
inline constexpr uint32_t kStepHistParts = 5;

// A log-bucketed histogram of ticks: below 2^13 linear buckets 64 ticks wide, then 128
// buckets per power of two up to 2^43 (each at most 1/128 of its lower bound wide); larger
// values fall in the last bucket (and are counted in StepAggInfo.clamped).
inline constexpr uint32_t kStepHistSubBits = 7;
inline constexpr uint32_t kStepHistLowBits = 13;
inline constexpr uint32_t kStepHistTopBits = 43;
inline constexpr uint32_t kStepHistBuckets =
    (1u << kStepHistSubBits) * (kStepHistTopBits - kStepHistLowBits + 1);  // 3,968

constexpr uint32_t StepHistBucket(uint64_t v) {
  if (v < (uint64_t{1} << kStepHistLowBits)) return static_cast<uint32_t>(v >> (kStepHistLowBits - kStepHistSubBits));
  if (v >= (uint64_t{1} << kStepHistTopBits)) return kStepHistBuckets - 1;
  const uint32_t e = 63u - static_cast<uint32_t>(__builtin_clzll(v));  // 13..42
  const uint32_t sub = static_cast<uint32_t>(v >> (e - kStepHistSubBits)) & ((1u << kStepHistSubBits) - 1);
  return ((e - kStepHistLowBits + 1) << kStepHistSubBits) + sub;
}
// The smallest value of bucket b (b < kStepHistBuckets); the next bucket's is its end.
constexpr uint64_t StepHistBucketLow(uint32_t b) {
  const uint32_t octave = b >> kStepHistSubBits, sub = b & ((1u << kStepHistSubBits) - 1);
  if (octave == 0) return uint64_t{sub} << (kStepHistLowBits - kStepHistSubBits);
  const uint32_t e = octave + kStepHistLowBits - 1;
  return (uint64_t{1} << e) + (uint64_t{sub} << (e - kStepHistSubBits));
}

struct StepAggStep {
  uint64_t start_ticks, end_ticks;
  uint64_t parts[kStepParts];  // [kStepTotal] = end - start
};
static_assert(sizeof(StepAggStep) == 80);

// Sums of a run of consecutive steps. Periods hold kStepAggPeriodSteps steps at first;
// when the table is full, pairs are folded (period_steps doubles).
struct StepAggPeriod {
  uint64_t steps;
  uint64_t start_ticks, end_ticks;  // the first step's start, the last one's end
  uint64_t sums[kStepParts];
};
static_assert(sizeof(StepAggPeriod) == 88);

struct StepAggInfo {
  uint32_t source;        // StepSource, or kStepAggBatchWaits
  uint32_t tid;           // the thread whose boundaries are summed
  uint64_t boundaries;    // boundaries summed (raised last for each)
  uint64_t steps;         // timed steps summed (raised once a step's figures are in)
  uint64_t first_ticks;   // the first boundary
  uint64_t last_ticks;    // the latest boundary summed
  uint64_t period_steps;  // steps per period now
  uint32_t periods;       // periods in use (the last one filling)
  uint32_t folding;       // 1 while pairs of periods are folded: the table is not to be read
  uint64_t folds;         // how often the table was folded
  uint64_t clamped;       // values past the histograms' range
  uint64_t other_threads;  // boundaries of this source on other threads (not summed)
  StepAggStep warmup;     // the first timed step, as it was summed
  uint64_t sums[kStepParts];
};
static_assert(sizeof(StepAggInfo) == 224);

inline constexpr uint32_t kStepAggInfoOffset = 32;
inline constexpr uint32_t kStepAggPeriodsOffset = 256;
inline constexpr uint32_t kStepAggPeriods = 128;
inline constexpr uint64_t kStepAggPeriodSteps = 1000;
// Part 0: the step time's histogram; parts 1 and 2: two part histograms each.
inline constexpr uint32_t kStepAggHist0Offset = 16384;
inline constexpr uint32_t kStepAggHistOffset = 64;
inline constexpr uint32_t kStepAggHistBytes = kStepHistBuckets * sizeof(uint32_t);
inline constexpr uint32_t kStepAggChunksPerSeries = 3;
static_assert(kStepAggInfoOffset + sizeof(StepAggInfo) <= kStepAggPeriodsOffset);
static_assert(kStepAggPeriodsOffset + kStepAggPeriods * sizeof(StepAggPeriod) <= kStepAggHist0Offset);
static_assert(kStepAggHist0Offset + kStepAggHistBytes <= kChunkSize);
static_assert(kStepAggHistOffset + 2 * kStepAggHistBytes <= kChunkSize);

constexpr uint32_t StepAggSeq(uint32_t source, uint32_t part) { return source * 4 + part; }
// Where histogram `hist` (a StepPart below kStepHistParts) lies: its part and offset.
constexpr uint32_t StepAggHistPart(uint32_t hist) { return hist == 0 ? 0 : 1 + (hist - 1) / 2; }
constexpr uint32_t StepAggHistAt(uint32_t hist) {
  return hist == 0 ? kStepAggHist0Offset : kStepAggHistOffset + ((hist - 1) % 2) * kStepAggHistBytes;
}

// Folds pairs of periods into one, in place: periods [2i, 2i + 1] become [i]; an odd last
// one stays alone. Returns the periods left. Used by the shim when the table is full and
// by its tests.
inline uint32_t FoldStepPeriods(StepAggPeriod* p, uint32_t n) {
  uint32_t out = 0;
  for (uint32_t i = 0; i < n; i += 2, ++out) {
    StepAggPeriod m = p[i];
    if (i + 1 < n) {
      m.steps += p[i + 1].steps;
      m.end_ticks = p[i + 1].end_ticks;
      for (uint32_t k = 0; k < kStepParts; ++k) m.sums[k] += p[i + 1].sums[k];
    }
    p[out] = m;
  }
  for (uint32_t i = out; i < n; ++i) p[i] = StepAggPeriod{};
  return out;
}

}  // namespace colabtrace::format
