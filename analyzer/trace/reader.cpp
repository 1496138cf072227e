#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cerrno>
#include <functional>
#include <map>
#include <numeric>
#include <queue>
#include <set>
#include <span>
#include <cstring>
#include <filesystem>
#include <cstdio>
#include <cstdlib>
#include <tuple>
#include <type_traits>

#include "colabtrace/format/codec.h"
#include "colabtrace/format/event_tally.h"
#include "colabtrace/format/io_heavy.h"
#include "colabtrace/format/launch_ring.h"
#include "colabtrace/format/run_thin.h"
#include "trace/live_state.h"
#include "trace/parallel_for.h"
#include "trace/process_trace.h"

namespace colabtrace::analyzer {

using format::ChunkHeader;
using format::FileHeader;

std::string_view ProcessTrace::Str(uint64_t id) const {
  if (id < strings_.size()) return strings_[id];
  auto it = sparse_strings_.find(id);
  return it == sparse_strings_.end() ? std::string_view() : it->second;
}

const std::vector<uint64_t>& ProcessTrace::Stack(uint64_t id) const {
  static const std::vector<uint64_t> kEmpty;
  if (id < stacks_.size()) return stacks_[id];
  auto it = sparse_stacks_.find(id);
  return it == sparse_stacks_.end() ? kEmpty : it->second;
}

std::string HostIdentity(const ProcessTrace& t) {
  std::string_view machine_id, boot_id, hostname;
  for (const auto& h : t.records.HostInfo) {
    const std::string_view key = t.Str(h.key);
    if (key == "machine_id") machine_id = t.Str(h.value);
    if (key == "boot_id") boot_id = t.Str(h.value);
    if (key == "hostname") hostname = t.Str(h.value);
  }
  if (!machine_id.empty()) return "machine:" + std::string(machine_id);
  if (!boot_id.empty()) return "boot:" + std::string(boot_id);
  return hostname.empty() ? std::string() : "host:" + std::string(hostname);
}

// The positions of ts's records in stable time order (equal times keep their order). One
// sort for every record type: a std::stable_sort of each type's own records was most of
// this file's compile time (about 20 of g++'s 33 s).
namespace {
std::vector<size_t> StableOrderByTime(const std::vector<uint64_t>& ts) {
  std::vector<size_t> order(ts.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ts[a] < ts[b]; });
  return order;
}
}  // namespace

// Whether records of type R have a Bytes field (String, Stack, Module, LibLoad, ...).
template <class R> bool HasBytesField() {
  static const bool has = [] {
    bool any = false;
    R r{};
    r.Visit([&](const char*, auto tag, const auto&) {
      if (decltype(tag)::kind == format::FieldKind::kBytes) any = true;
    });
    return any;
  }();
  return has;
}

namespace {

// Where the decoder reads a trace's bytes: a buffer in memory (ParseTrace), or a file
// read one chunk at a time (ReadTraceFile), so a big trace is never held whole.
class TraceBytes {
 public:
  virtual ~TraceBytes() = default;
  virtual uint64_t size() const = 0;
  // Up to `len` bytes at `off` (fewer where the data ends); valid until the next Read.
  virtual std::span<const uint8_t> Read(uint64_t off, uint64_t len) = 0;
  // Whether the bytes may change while they are read (a file its process still writes).
  virtual bool may_change() const { return false; }
};

class MemoryBytes final : public TraceBytes {
 public:
  explicit MemoryBytes(const std::vector<uint8_t>& b) : b_(b) {}
  uint64_t size() const override { return b_.size(); }
  std::span<const uint8_t> Read(uint64_t off, uint64_t len) override {
    if (off >= b_.size()) return {};
    return {b_.data() + off, static_cast<size_t>(std::min<uint64_t>(len, b_.size() - off))};
  }

 private:
  const std::vector<uint8_t>& b_;
};

// pread into one chunk-sized buffer. A read error or a file that shrank ends the data
// where it happened (error() says why).
class FileBytes final : public TraceBytes {
 public:
  FileBytes(int fd, uint64_t size) : fd_(fd), size_(size) {}
  uint64_t size() const override { return size_; }
  const std::string& error() const { return error_; }
  bool may_change() const override { return true; }
  std::span<const uint8_t> Read(uint64_t off, uint64_t len) override {
    if (off >= size_) return {};
    len = std::min<uint64_t>(len, size_ - off);
    if (buf_.size() < len) buf_.resize(static_cast<size_t>(len));
    size_t got = 0;
    while (got < len) {
      const ssize_t n = pread(fd_, buf_.data() + got, static_cast<size_t>(len) - got,
                              static_cast<off_t>(off + got));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) error_ = std::strerror(errno);
      if (n <= 0) {
        size_ = off + got;  // what was there
        break;
      }
      got += static_cast<size_t>(n);
    }
    return {buf_.data(), got};
  }

 private:
  int fd_;
  uint64_t size_;
  std::vector<uint8_t> buf_;
  std::string error_;
};

}  // namespace

// The Bytes fields' contents (strings, stacks, build-ids), copied out of the file as they
// are decoded, in blocks that never move.
struct KeptBytes {
  std::vector<std::unique_ptr<uint8_t[]>> blocks;
  size_t used = 0, capacity = 0;

  const uint8_t* Copy(const uint8_t* data, size_t n) {
    if (n == 0) return nullptr;
    if (n > capacity - used) {
      // Blocks grow from one page to 64 KiB: a small trace keeps little.
      capacity = std::max<size_t>(n, std::min<size_t>(64 * 1024, std::max<size_t>(4096, 2 * capacity)));
      blocks.push_back(std::make_unique_for_overwrite<uint8_t[]>(capacity));
      used = 0;
    }
    uint8_t* at = blocks.back().get() + used;
    std::memcpy(at, data, n);
    used += n;
    return at;
  }
};

// Decodes chunks into the record tables, then converts ticks to nanoseconds.
//
// Speed and memory (issue 12): a first pass walks only the record frames (type byte and
// length) to count each type, so every table is reserved once at its final size instead
// of growing by doubling (which copied each table and left the old copy's pages behind).
// Chunks are decoded per thread in sequence order, so each table is a concatenation of
// per-thread runs that are already in time order; a table whose runs interleave is put
// in order by a k-way merge of those runs (ConvertTime), not a sort.
class TraceDecoder {
 public:
  TraceDecoder(ProcessTrace& t, TraceBytes& b) : t_(t), b_(b), kept_(std::make_shared<KeptBytes>()) {}

  void DecodeChunks() {
    const uint64_t cs = t_.header.chunk_size;
    struct ChunkRef {
      uint32_t image, tid, thread, seq;
      uint64_t offset;
      uint32_t header;  // where its records start: sizeof(ChunkHeader) or of EventChunkHeader
    };
    std::vector<ChunkRef> chunks;
    std::array<uint64_t, 256> counts{}, bytes{};
    // The window (wire.h, "event chunks"): per thread of an image, its latest event chunk
    // (by seq) with the droppable records its thread wrote before it and in it.
    format::EventTally tally(t_.header);
    uint64_t in_full = 0, outside_event_chunks = 0;
    for (uint64_t off = cs; off + sizeof(ChunkHeader) <= b_.size(); off += cs) {
      const std::span<const uint8_t> chunk = b_.Read(off, cs);
      if (chunk.size() < sizeof(ChunkHeader)) break;
      ChunkHeader ch;
      std::memcpy(&ch, chunk.data(), sizeof(ch));
      if (std::vector<StateRef>* kept = KeptChunksOf(ch.magic)) {
        kept->push_back({ch.image, ch.magic, ch.seq, off});
        continue;
      }
      const bool event = ch.magic == format::kEventChunkMagic;
      if (!event && ch.magic != format::kChunkMagic) continue;  // never used (or never committed)
      const uint32_t header = event ? sizeof(format::EventChunkHeader) : sizeof(ChunkHeader);
      chunks.push_back({ch.image, ch.tid, ch.thread, ch.seq, off, header});
      if (chunk.size() < header) break;  // the file ends in its header (DecodeChunk says so)
      const uint64_t droppable = CountChunk(chunk, header, counts, bytes);
      in_full += droppable;
      if (!event) {
        outside_event_chunks += droppable;
        continue;
      }
      format::EventChunkHeader eh;
      std::memcpy(&eh, chunk.data(), sizeof(eh));
      tally.Add(eh, droppable);
    }
    TraceWindow& w = t_.window;
    w.events_in_full = in_full;
    w.events_total = SaturatingAdd(SaturatingAdd(outside_event_chunks, t_.header.events_lost), tally.Total());
    w.capped = (t_.header.flags & format::kFlagCapped) != 0;
    w.window_bytes = t_.header.window_bytes;
    w.max_bytes = t_.header.max_bytes;
    w.recycled_chunks = t_.header.recycled_chunks;
    w.events_lost = t_.header.events_lost;
    // Deterministic order: by image, thread and the thread's own chunk sequence (a tid the
    // kernel gave to a later thread is another thread: ChunkHeader::thread, 1.5).
    std::sort(chunks.begin(), chunks.end(), [](const ChunkRef& a, const ChunkRef& b) {
      return std::tie(a.image, a.tid, a.thread, a.seq, a.offset) < std::tie(b.image, b.tid, b.thread, b.seq, b.offset);
    });
    Reserve(counts, bytes);
    for (size_t i = 0; i < chunks.size(); ++i) {
      // A new thread (or image) starts a new time-ordered run in every table.
      if (i == 0 || chunks[i].image != chunks[i - 1].image || chunks[i].tid != chunks[i - 1].tid ||
          chunks[i].thread != chunks[i - 1].thread) {
        ++run_;
      }
      DecodeChunk(chunks[i].offset, chunks[i].header);
    }
    t_.stats.chunks = chunks.size();
    DecodeStateChunks();
    DecodeIoAggregates();
    DecodeThinnedSamples();
    DecodeRunThinnedSamples();
    DecodeGpuLiveSet();
  }

  // The GPU live-set chunks (format/gpu_live.h): the latest image whose info chunk and
  // table chunks are all in the file, whole. Times stay in ticks until ConvertTime.
  void DecodeGpuLiveSet() {
    if (!SortAggregateChunks(gpu_live_chunks_, "GPU live-set chunks of an unknown chunk size are not read")) return;
    const uint64_t cs = t_.header.chunk_size;
    constexpr uint32_t kChunks = 1 + format::kGpuLiveTableChunks;
    for (size_t i = gpu_live_chunks_.size(); i-- > 0;) {
      const StateRef& c = gpu_live_chunks_[i];
      if (c.seq != 0 || i + kChunks > gpu_live_chunks_.size()) continue;
      // (A span from b_.Read is valid until the next Read: each chunk is copied out at once.)
      bool whole = true;
      for (uint32_t k = 0; k < kChunks && whole; ++k) {
        const StateRef& p = gpu_live_chunks_[i + k];
        whole = p.image == c.image && p.seq == k && b_.Read(p.offset, cs).size() == cs;
      }
      if (!whole) {
        Warn(c.offset, "the GPU live-set chunks of an image are not all in the file; they are not read");
        continue;
      }
      GpuLiveSet& g = t_.gpu_live;
      g.present = true;
      g.image = c.image;
      const std::span<const uint8_t> info = b_.Read(c.offset, cs);
      std::memcpy(&g.info, info.data() + format::kGpuLiveInfoOffset, sizeof(g.info));
      std::memcpy(g.counters.data(), info.data() + format::kGpuLiveCountersOffset,
                  sizeof(format::GpuLiveCounters) * g.counters.size());
      format::GpuLiveHistory h;
      std::memcpy(&h, info.data() + format::kGpuLiveHistoryOffset, sizeof(h));
      if (h.magic == format::kGpuLiveHistoryMagic) {
        for (uint32_t k = 0; k < format::kGpuLivePoints; ++k) {
          format::GpuLivePoint p;
          std::memcpy(&p, info.data() + format::kGpuLivePointsOffset + k * sizeof(p), sizeof(p));
          if (p.ticks != 0) g.history.push_back(p);
        }
      }
      for (uint32_t k = 1; k < kChunks; ++k) {
        const std::span<const uint8_t> table = b_.Read(gpu_live_chunks_[i + k].offset, cs);
        for (uint32_t j = 0; j < format::kGpuLiveSlotsPerChunk; ++j) {
          format::GpuLiveSlot s;
          std::memcpy(&s, table.data() + format::kGpuLiveSlotsOffset + j * sizeof(s), sizeof(s));
          if (s.key > format::kGpuLiveBusy) g.slots.push_back(s);
        }
      }
      // The allocations that found no slot are in no counter: the replay cannot start from
      // the set (allocation_timeline.cpp, Seed), and the records the window gave up are gone.
      if (g.info.full != 0 && (t_.header.dropped_until_ticks != 0 || t_.header.events_lost != 0)) {
        Warn(c.offset, "GPU allocations found the live-set table full while the window gave records up: "
                       "the GPU figures are the window's only");
      }
      return;
    }
  }

  // The thinned-sample chunks (format/sample_tiers.h): for each exec image, the run's
  // peaks, and Sample records made of the entries that reach into the part of the run the
  // window gave up (before dropped_until_ticks; all of it when the cap lost events, in a
  // compacted trace, or with COLABTRACE_ANALYZER_THINNED_SAMPLES_ONLY=1, which also leaves out the periodic
  // samples read from event chunks). Entries are read whole or not at all (start_ticks
  // set, start <= peak <= end); every value is kept as the shim wrote it.
  void DecodeThinnedSamples() {
    if (!SortAggregateChunks(thin_chunks_, "thinned-sample chunks of an unknown chunk size are not read")) return;
    const uint64_t cs = t_.header.chunk_size;
    // A trace `colabtrace run` compacted keeps no event chunk: every periodic sample is gone
    // but the tiers' summary.
    const bool all = thinned_only_ || t_.header.events_lost != 0 || !t_.records.TraceCompacted.empty();
    const uint64_t cut = all ? UINT64_MAX : t_.header.dropped_until_ticks;
    // The latest clock and Python sample the records hold (once: a crafted trace may have
    // thousands of thinned-sample chunks).
    auto latest = [](const auto& table) {
      uint64_t ts = 0;
      for (const auto& ev : table) ts = std::max(ts, ev.ts);
      return ts;
    };
    const uint64_t latest_clock = latest(t_.records.Clock), latest_py = latest(t_.records.PySample);
    ThinnedSamples& th = t_.thinned;
    for (const StateRef& c : thin_chunks_) {
      const std::span<const uint8_t> chunk = b_.Read(c.offset, cs);
      if (chunk.size() < cs) {
        Warn(c.offset, "the file ends inside a thinned-sample chunk; its entries are not read");
        continue;
      }
      if (c.seq >= static_cast<uint32_t>(format::kThinTiers)) continue;
      if (th.images.empty() || th.images.back().image != c.image) th.images.emplace_back().image = c.image;
      ThinnedSamples::Image& im = th.images.back();
      format::ThinTier tier;
      std::memcpy(&tier, chunk.data() + format::kThinTierOffset, sizeof(tier));
      im.interval_ns[c.seq] = tier.interval_ns;
      if (c.seq == 2) im.folds = tier.folds;
      if (c.seq == 0) {
        format::ThinRun run;
        std::memcpy(static_cast<void*>(&run), chunk.data() + format::kThinRunOffset, sizeof(run));
        im.run = run.half[run.seq & 1];
        im.run_known = run.seq != 0;
        if (im.run_known) AddLastClockAndPython(im.run, c.image, latest_clock, latest_py);
      }
      for (uint32_t k = 0; k < format::kThinEntriesPerChunk; ++k) {
        format::ThinEntry e;
        std::memcpy(&e, chunk.data() + format::kThinEntriesOffset + k * sizeof(e), sizeof(e));
        if (e.start_ticks == 0 || e.end_ticks < e.start_ticks || e.peak_ticks < e.start_ticks ||
            e.peak_ticks > e.end_ticks) {
          continue;
        }
        ++im.entries[c.seq];
        if (e.start_ticks > cut) continue;
        // Its maxima, at the time RSS peaked (cgroup figures and threads are the interval's
        // maxima too; the working set's maximum gives inactive_file; CPU time and OOM kills
        // unknown there), then its last values at its end.
        format::Sample peak;
        peak.ts = e.peak_ticks;
        peak.rss_bytes = e.max_rss;
        peak.cgroup_current = e.max_cgroup;
        peak.oom_kill = UINT64_MAX;
        peak.threads = e.max_threads;
        peak.vm_bytes = e.max_vm;
        peak.cgroup_inactive_file = e.max_working_set != UINT64_MAX && e.max_cgroup != UINT64_MAX &&
                                            e.max_cgroup >= e.max_working_set
                                        ? e.max_cgroup - e.max_working_set
                                        : UINT64_MAX;
        peak.utime_ns = 0;
        peak.stime_ns = 0;
        format::Sample last;
        last.ts = e.end_ticks;
        last.rss_bytes = e.last_rss;
        last.cgroup_current = e.last_cgroup;
        last.oom_kill = e.last_oom_kill;
        last.threads = e.last_threads;
        last.vm_bytes = e.last_vm;
        last.cgroup_inactive_file = e.last_inactive_file;
        last.utime_ns = e.last_utime_ns;
        last.stime_ns = e.last_stime_ns;
        const uint32_t tid = static_cast<uint32_t>(e.tid);
        if (e.peak_ticks != e.end_ticks) AddMade(t_.records.Sample, peak, tid, c.image);
        AddMade(t_.records.Sample, last, tid, c.image);
        th.made_samples += e.peak_ticks != e.end_ticks ? 2 : 1;
      }
    }
  }

  // `colabtrace run`'s thinned samples (1.5, CTRW chunks: format/run_thin.h): one set
  // of tiers per process it sampled and per cgroup, `image` the set's number. As for the
  // shim's tiers, the entries that reach into the part the window gave up become records:
  // ProcSample or CgroupSample, its maxima at the time RSS (memory.current) peaked, its last
  // values at its end. A set's identity is its tier 0 chunk's; tiers without one are skipped.
  void DecodeRunThinnedSamples() {
    if (!SortAggregateChunks(run_thin_chunks_, "run's thinned-sample chunks of an unknown chunk size are not read")) {
      return;
    }
    const uint64_t cs = t_.header.chunk_size;
    const bool all = thinned_only_ || t_.header.events_lost != 0;
    const uint64_t cut = all ? UINT64_MAX : t_.header.dropped_until_ticks;
    ThinnedSamples& th = t_.thinned;
    uint32_t set = 0;
    format::RunThinIdentity id{};
    bool have_id = false;
    for (const StateRef& c : run_thin_chunks_) {
      const std::span<const uint8_t> chunk = b_.Read(c.offset, cs);
      if (chunk.size() < cs) {
        Warn(c.offset, "the file ends inside a thinned-sample chunk; its entries are not read");
        continue;
      }
      if (c.seq >= static_cast<uint32_t>(format::kThinTiers)) continue;
      if (c.image != set || !have_id) have_id = false, set = c.image;
      if (c.seq == 0) {
        format::ThinRun run;
        std::memcpy(static_cast<void*>(&run), chunk.data() + format::kThinRunOffset, sizeof(run));
        std::memcpy(&id, run.reserved, sizeof(id));
        have_id = id.kind == format::kRunThinProcess || id.kind == format::kRunThinCgroup;
        if (!have_id) continue;
        ThinnedSamples::RunSet& rs = th.run_sets.emplace_back();
        rs.set = c.image;
        rs.kind = id.kind;
        rs.pid = id.pid;
        rs.run = run.half[run.seq & 1];
        rs.run_known = run.seq != 0;
      }
      if (!have_id) continue;
      for (uint32_t k = 0; k < format::kThinEntriesPerChunk; ++k) {
        format::ThinEntry e;
        std::memcpy(&e, chunk.data() + format::kThinEntriesOffset + k * sizeof(e), sizeof(e));
        if (e.start_ticks == 0 || e.end_ticks < e.start_ticks || e.peak_ticks < e.start_ticks ||
            e.peak_ticks > e.end_ticks || e.start_ticks > cut) {
          continue;
        }
        const uint32_t tid = t_.header.pid;
        format::RunThinRecords(
            e, id,
            [&](const format::ProcSample& r) { AddMade(t_.records.ProcSample, r, tid, 0), ++th.made_run_samples; },
            [&](const format::CgroupSample& r) { AddMade(t_.records.CgroupSample, r, tid, 0), ++th.made_run_samples; });
      }
    }
  }

  // The last periodic Clock pair and Python position of an image, as records, when no
  // record of the trace is as late (the window gave them up).
  void AddLastClockAndPython(const format::ThinRunHalf& r, uint32_t image, uint64_t latest_clock,
                             uint64_t latest_py) {
    if (r.clock_ticks != 0 && r.clock_mono_ns != 0 && (thinned_only_ || latest_clock < r.clock_ticks)) {
      format::Clock c;
      c.ts = r.clock_ticks;
      c.mono_ns = r.clock_mono_ns;
      c.realtime_ns = r.clock_realtime_ns;
      AddMade(t_.records.Clock, c, 0, image);
    }
    if (r.py_stack != 0 && (thinned_only_ || latest_py < r.py_ticks)) {
      format::PySample p;
      p.ts = r.py_ticks;
      p.tid = r.py_tid;
      p.py_stack = r.py_stack;
      AddMade(t_.records.PySample, p, static_cast<uint32_t>(r.py_tid), image);
    }
  }

  // Appends a record the reader made (ticks; converted with the rest) as a run of its own.
  template <class R> void AddMade(std::vector<Event<R>>& table, const R& rec, uint32_t tid, uint32_t image) {
    Event<R>& ev = table.emplace_back();
    static_cast<R&>(ev) = rec;
    ev.tid = tid;
    ev.image = image;
    ++run_;
    NoteRun(static_cast<uint8_t>(R::kType), table.size() - 1, ev.ts);
  }

  // Orders the refs of aggregate chunks by (image, seq); false, with the warning
  // `unknown_size`, when the trace's chunks are not of the size they are laid out for.
  // (A template: StateRef is declared further down.)
  template <class Refs> bool SortAggregateChunks(Refs& refs, const char* unknown_size) {
    if (refs.empty()) return false;
    if (t_.header.chunk_size != format::kChunkSize) {
      Warn(refs.front().offset, unknown_size);
      return false;
    }
    std::sort(refs.begin(), refs.end(), [](const auto& a, const auto& b) {
      return std::tie(a.image, a.seq, a.offset) < std::tie(b.image, b.seq, b.offset);
    });
    return true;
  }

  // A 1.4 slot widened into IoAggSums: each 16-bit count plus 65,536 times its high word
  // (high: the slot's high words, or null when it has none). Durations stay in ticks.
  static format::IoAggSums Widened(const format::IoAggSlot& s, const uint32_t* high) {
    format::IoAggSums w{};
    w.hash = s.hash;
    w.path = s.path;
    w.kind = s.kind;
    w.flags = s.flags;
    w.mount = s.mount;
    std::array<uint64_t, format::kIoAggCounts> n;
    for (uint32_t k = 0; k < format::kIoAggCounts; ++k) {
      n[k] = s.counts[k] + (high != nullptr ? uint64_t{high[k]} << 16 : 0);
    }
    w.opens = n[format::kIoAggOpens];
    w.open_errors = n[format::kIoAggOpenErrors];
    w.dir_scans = static_cast<uint32_t>(std::min<uint64_t>(n[format::kIoAggDirScans], UINT32_MAX));
    w.data_copies = n[format::kIoAggDataCopies];
    w.read_errors = n[format::kIoAggReadErrors];
    w.zero_reads = n[format::kIoAggZeroReads];
    w.stats = n[format::kIoAggStats];
    w.stat_errors = n[format::kIoAggStatErrors];
    w.path_stats = n[format::kIoAggPathStats];
    w.passes = n[format::kIoAggPasses];
    w.small_reads = n[format::kIoAggSmallReads];
    w.stdio_reads = n[format::kIoAggStdioReads];
    for (int b = 0; b < format::kIoAggSizeBins; ++b) w.read_sizes[b] = n[format::kIoAggReadSize + b];
    w.open_ns = s.open_ns;
    w.read_ns = s.read_ns;
    w.stat_ns = s.stat_ns;
    w.bytes_read = s.bytes_read;
    w.size = s.size;
    w.eof_at = s.eof_at;
    w.max_end = s.max_end;
    return w;
  }

  // The I/O aggregate chunks: each image's slots in chunk order (seq), its IoAggInfo from
  // the chunk of seq 0. Slots are copied as they are (fixed width, no pointers) and
  // widened into IoAggSums: a 1.4 slot's 16-bit counts plus 65,536 times its high slot's
  // words (a high slot counts only when its kind and owner match the slot linking it);
  // a 1.3 slot (CTIA) is one already. Only claimed file and directory slots are kept.
  // Durations stay in ticks until ConvertTime. A chunk cut short by the file's end is
  // skipped with a warning.
  void DecodeIoAggregates() {
    if (!SortAggregateChunks(agg_chunks_, "I/O aggregate chunks of an unknown chunk size are not read")) return;
    const uint64_t cs = format::kChunkSize;
    IoAggregates& agg = t_.io_aggregates;
    agg.present = true;
    // The current image's 1.4 slots (file and directory: number and slot) and high slots
    // (by number), widened when its last chunk is read.
    std::vector<std::pair<uint64_t, format::IoAggSlot>> slots;
    std::map<uint64_t, format::IoAggHighSlot> highs;
    uint32_t agg_image = 0;  // the image of `slots`
    auto widen = [&] {
      for (const auto& [number, s] : slots) {
        const format::IoAggHighSlot* high = nullptr;
        if (s.high != 0) {
          auto it = highs.find(s.high - 1);
          if (it != highs.end() && it->second.owner == number) high = &it->second;
        }
        format::IoAggSums w = Widened(s, high != nullptr ? high->high : nullptr);
        if (s.kind == format::kIoAggDirectory) dir_paths_[{agg_image, number}] = s.path;
        agg.slots.push_back(w);
      }
      slots.clear();
      highs.clear();
    };
    for (size_t i = 0; i < agg_chunks_.size(); ++i) {
      const StateRef& c = agg_chunks_[i];
      if (i > 0 && c.image != agg_chunks_[i - 1].image) widen();
      agg_image = c.image;
      const std::span<const uint8_t> chunk = b_.Read(c.offset, cs);
      if (chunk.size() < cs) {
        Warn(c.offset, "the file ends inside an I/O aggregate chunk; its sums are not read");
        continue;
      }
      if (c.seq == 0 && (agg.images.empty() || agg.images.back().image != c.image)) {
        IoAggregates::Image& im = agg.images.emplace_back();
        im.image = c.image;
        std::memcpy(&im.info, chunk.data() + format::kIoAggInfoOffset, sizeof(im.info));
        if (c.magic == format::kIoAggChunkMagic13) im.info.high_slots = im.info.carries_lost = 0;
        if (im.info.carries_lost != 0) {
          Warn(c.offset, "I/O aggregate counts that wrapped found no high slot: each of those counts is 65,536 short");
        }
      }
      if (c.magic == format::kIoAggChunkMagic13) {
        for (uint32_t k = 0; k < format::kIoAggSlotsPerChunk13; ++k) {
          format::IoAggSums slot;
          std::memcpy(&slot, chunk.data() + format::kIoAggSlotsOffset + k * sizeof(slot), sizeof(slot));
          if (slot.kind != format::kIoAggFile && slot.kind != format::kIoAggDirectory) continue;
          agg.slots.push_back(slot);
        }
        continue;
      }
      for (uint32_t k = 0; k < format::kIoAggSlotsPerChunk; ++k) {
        const uint8_t* at = chunk.data() + format::kIoAggSlotsOffset + k * sizeof(format::IoAggSlot);
        const uint64_t number = uint64_t{c.seq} * format::kIoAggSlotsPerChunk + k;
        format::IoAggSlot slot;
        std::memcpy(&slot, at, sizeof(slot));
        if (slot.kind == format::kIoAggHigh) {
          format::IoAggHighSlot high;
          std::memcpy(&high, at, sizeof(high));
          highs.emplace(number, high);
        } else if (slot.kind == format::kIoAggFile || slot.kind == format::kIoAggDirectory) {
          slots.emplace_back(number, slot);
        }
      }
    }
    widen();
    DecodeIoHeavy();
  }

  // The heavy-hitter chunks (format 1.6, io_heavy.h), after the aggregate chunks (their
  // directory slots by number, dir_paths_). A held entry is a file slot of its own (and a
  // row of IoAggregates::heavy); an entry being folded is the rest of its directory's
  // row: the fields from `folded` on, which its directory's slot does not hold yet. Free
  // and clearing entries hold nothing. Only entries below kIoHeavyEntries are read.
  void DecodeIoHeavy() {
    if (!SortAggregateChunks(heavy_chunks_, "I/O heavy-hitter chunks of an unknown chunk size are not read")) return;
    IoAggregates& agg = t_.io_aggregates;
    for (const StateRef& c : heavy_chunks_) {
      const std::span<const uint8_t> chunk = b_.Read(c.offset, format::kChunkSize);
      if (chunk.size() < format::kChunkSize) {
        Warn(c.offset, "the file ends inside an I/O heavy-hitter chunk; its entries are not read");
        continue;
      }
      if (c.seq == 0) {
        for (IoAggregates::Image& im : agg.images) {
          if (im.image == c.image) std::memcpy(&im.heavy, chunk.data() + format::kIoAggInfoOffset, sizeof(im.heavy));
        }
      }
      for (uint32_t k = 0; k < format::kIoHeavyPerChunk; ++k) {
        if (uint64_t{c.seq} * format::kIoHeavyPerChunk + k >= format::kIoHeavyEntries) break;
        format::IoHeavyEntry e;
        std::memcpy(&e, chunk.data() + format::kIoHeavyEntriesOffset + k * sizeof(e), sizeof(e));
        const uint32_t state = format::IoHeavyStateOf(e.word);
        if (e.slot.kind != format::kIoAggHeavy || (state != format::kIoHeavyHeld && state != format::kIoHeavyFolding)) {
          continue;
        }
        format::IoAggSums w = Widened(e.slot, e.high);
        if (state == format::kIoHeavyHeld) {
          w.kind = format::kIoAggFile;
          agg.slots.push_back(w);
          agg.heavy.push_back({e.slot.path, e.from_ticks, 0, e.error});
          continue;
        }
        auto dir = dir_paths_.find({c.image, uint64_t{e.dir_slot} - 1});
        if (e.dir_slot == 0 || dir == dir_paths_.end()) {
          Warn(c.offset, "an I/O heavy-hitter entry being folded names no directory slot; its sums are not read");
          continue;
        }
        // The fields its directory's slot holds already (IoHeavyFoldField order).
        uint64_t* counts[format::kIoAggCounts] = {&w.opens, &w.open_errors, nullptr, &w.data_copies,
                                                  &w.read_errors, &w.zero_reads, &w.stats, &w.stat_errors,
                                                  &w.path_stats, &w.passes, &w.small_reads, &w.stdio_reads};
        for (int b = 0; b < format::kIoAggSizeBins; ++b) counts[format::kIoAggReadSize + b] = &w.read_sizes[b];
        uint64_t* sums[] = {&w.open_ns, &w.read_ns, &w.stat_ns, &w.bytes_read};
        for (uint32_t f = 0; f < std::min<uint32_t>(e.folded, format::kIoHeavyFoldFields); ++f) {
          if (f == format::kIoAggDirScans) {
            w.dir_scans = 0;
          } else if (f < format::kIoAggCounts) {
            *counts[f] = 0;
          } else {
            *sums[f - format::kIoAggCounts] = 0;
          }
        }
        w.kind = format::kIoAggDirectory;
        w.path = dir->second;
        agg.slots.push_back(w);
      }
    }
  }

  // The step aggregate chunks (format/step_agg.h): a series per (image, source) whose three
  // chunks are all in the file (a series is published chunk by chunk, its info's last),
  // copied as they are and converted with the trace's clock. Counts are the shim's and
  // untrusted: the histograms are read bucket by bucket, the period table only up to its
  // size, and nothing is indexed by a stored number.
  void DecodeStepAggregates(const TickClock& clock) {
    if (!SortAggregateChunks(step_chunks_, "step aggregate chunks of an unknown chunk size are not read")) return;
    const uint64_t cs = format::kChunkSize;
    StepAggregates& agg = t_.step_aggregates;
    agg.present = true;
    auto span = [&](uint64_t steps, uint64_t start, uint64_t end, const uint64_t* sums) {
      StepSeries::Span out;
      out.steps = steps;
      out.start_ns = clock.ToNs(start);
      out.end_ns = std::max(clock.ToNs(end), out.start_ns);
      for (uint32_t k = 0; k < format::kStepParts; ++k) {
        out.sums[k] = k == format::kStepIoCalls ? sums[k] : clock.DurNs(sums[k]);
      }
      return out;
    };
    for (size_t i = 0; i < step_chunks_.size(); ++i) {
      const StateRef& c = step_chunks_[i];
      if (c.seq % 4 != 0 || c.seq / 4 >= format::kStepAggSources) continue;  // a series' part 0
      // Its parts 1 and 2 follow it in (image, seq) order. Copied: a Read is valid only
      // until the next one.
      std::vector<uint8_t> parts[format::kStepAggChunksPerSeries];
      bool whole = true;
      for (uint32_t k = 0; k < format::kStepAggChunksPerSeries && whole; ++k) {
        whole = i + k < step_chunks_.size() && step_chunks_[i + k].image == c.image &&
                step_chunks_[i + k].seq == c.seq + k;
        if (!whole) break;
        const std::span<const uint8_t> bytes = b_.Read(step_chunks_[i + k].offset, cs);
        parts[k].assign(bytes.begin(), bytes.end());
        whole = parts[k].size() == cs;
      }
      if (!whole) {
        Warn(c.offset, "a step aggregate series is incomplete (chunks missing or cut short); it is not read");
        continue;
      }
      format::StepAggInfo info;
      std::memcpy(&info, parts[0].data() + format::kStepAggInfoOffset, sizeof(info));
      if (info.boundaries == 0) continue;  // taken, nothing summed yet
      StepSeries& s = agg.series.emplace_back();
      s.image = c.image;
      s.source = c.seq / 4;
      s.tid = info.tid;
      s.boundaries = info.boundaries;
      s.steps = info.steps;
      s.other_threads = info.other_threads;
      s.clamped = info.clamped;
      s.folds = info.folds;
      s.period_steps = info.period_steps;
      s.first_ns = clock.ToNs(info.first_ticks);
      s.last_ns = clock.ToNs(info.last_ticks);
      s.all = span(info.steps, info.warmup.start_ticks, info.last_ticks, info.sums);
      if (info.steps > 0) s.warmup = span(1, info.warmup.start_ticks, info.warmup.end_ticks, info.warmup.parts);
      for (uint32_t h = 0; h < format::kStepHistParts; ++h) s.warmup_bucket[h] = format::StepHistBucket(info.warmup.parts[h]);
      s.periods_torn = info.folding != 0;
      const uint32_t n = std::min(info.periods, format::kStepAggPeriods);
      for (uint32_t k = 0; k < n && !s.periods_torn; ++k) {
        format::StepAggPeriod p;
        std::memcpy(&p, parts[0].data() + format::kStepAggPeriodsOffset + k * sizeof(p), sizeof(p));
        s.periods.push_back(span(p.steps, p.start_ticks, p.end_ticks, p.sums));
      }
      for (uint32_t h = 0; h < format::kStepHistParts; ++h) {
        const uint8_t* at = parts[format::StepAggHistPart(h)].data() + format::StepAggHistAt(h);
        for (uint32_t b = 0; b < format::kStepHistBuckets; ++b) {
          uint32_t count;
          std::memcpy(&count, at + b * sizeof(count), sizeof(count));
          if (count == 0) continue;
          const uint64_t low = format::StepHistBucketLow(b);
          const uint64_t high = b + 1 < format::kStepHistBuckets ? format::StepHistBucketLow(b + 1) : low;
          s.hist[h].push_back({b, clock.DurNs(low), clock.DurNs(high), count});
        }
      }
    }
  }

  // The state chunks (wire.h): what each thread of the last exec image was blocked in
  // when the trace was read (in_flight records, ts the call's start), and, for a trace
  // that did not end cleanly, the launches left in its launch rings (gpu_launch_ring
  // records, why 3, ts the trace's last record's). A note is taken only when its `call`
  // word is set (stored last by the writer), so one half written when the process died
  // reads as no call; every field is used only as the call kind says.
  void DecodeStateChunks() {
    if (state_chunks_.empty()) return;
    // The last exec image's: an earlier image's threads ended at the exec (a note another
    // thread left set then is no call of this process's program).
    const uint32_t image = t_.header.image_count > 0 ? t_.header.image_count - 1 : 0;
    std::sort(state_chunks_.begin(), state_chunks_.end(), [](const StateRef& a, const StateRef& b) {
      return std::tie(a.image, a.magic, a.seq, a.offset) < std::tie(b.image, b.magic, b.seq, b.offset);
    });
    const uint64_t cs = t_.header.chunk_size;
    if (cs != format::kChunkSize) return;  // the layout is for the shim's chunk size
    // The first state chunk's synchronisation table: the completed epoch of a stream.
    uint32_t device_epoch = 0;
    std::vector<format::SyncedStream> synced;
    bool have_first = false;
    for (const StateRef& c : state_chunks_) {
      if (c.image != image || c.magic != format::kStateChunkMagic || c.seq != 0) continue;
      const std::span<const uint8_t> chunk = b_.Read(c.offset, cs);
      if (chunk.size() < cs) break;
      std::memcpy(&device_epoch, chunk.data() + format::kSyncedDeviceOffset, sizeof(device_epoch));
      synced.resize(format::kSyncedStreams);
      std::memcpy(synced.data(), chunk.data() + format::kSyncedOffset, synced.size() * sizeof(format::SyncedStream));
      have_first = true;
      break;
    }
    auto completed = [&](uint64_t stream) {
      uint32_t e = device_epoch;
      for (const format::SyncedStream& s : synced) {
        if (s.epoch != 0 && s.stream == stream) e = std::max(e, s.epoch);
      }
      return e;
    };
    (void)have_first;
    // The rings as the shim wrote them at a fault or fatal signal are the ones to keep.
    const bool shim_wrote_rings = !t_.records.GpuLaunchRing.empty();
    uint64_t last_ticks = 0;
    for (uint64_t v : last_ticks_) last_ticks = std::max(last_ticks, v);
    DecodeCollChunks(last_ticks);
    for (const StateRef& c : state_chunks_) {
      if (c.image != image || c.magic == format::kCollChunkMagic) continue;
      const std::span<const uint8_t> chunk = b_.Read(c.offset, cs);
      if (chunk.size() < cs) {
        Warn(c.offset, "the file ends inside a state chunk; its notes are not read");
        continue;
      }
      if (c.magic == format::kStateChunkMagic) {
        // A file's process may still be rewriting its notes: read as live_state.h says.
        std::vector<format::ThreadNotes> notes(format::kNotesPerChunk);
        if (b_.may_change()) {
          notes = ReadLiveNotes([&](uint64_t at, size_t n, uint8_t* dst) {
                    const std::span<const uint8_t> got = b_.Read(c.offset + at, n);
                    if (got.size() < n) return false;
                    std::memcpy(dst, got.data(), n);
                    return true;
                  }).notes;
        } else {
          std::memcpy(static_cast<void*>(notes.data()), chunk.data() + format::kNotesOffset,
                      notes.size() * sizeof(format::ThreadNotes));
        }
        for (const format::ThreadNotes& tn : notes) {
          if (tn.tid == 0) continue;
          AddInFlight(tn, tn.call, 0, image, completed);
          AddInFlight(tn, tn.wait, 1, image, completed);
        }
      } else if (c.magic == format::kNcclChunkMagic) {
        DecodeNcclChunk(chunk, image, last_ticks);
      } else if (!t_.ended && !shim_wrote_rings) {
        for (uint32_t k = 0; k < format::kRingsPerChunk; ++k) {
          format::LaunchRing ring;
          std::memcpy(static_cast<void*>(&ring), chunk.data() + format::kRingsOffset + k * sizeof(ring), sizeof(ring));
          if (ring.owner <= 0) continue;
          for (const format::RingSlot& s : ring.slots) {
            if (s.seq == 0) continue;
            Event<format::GpuLaunchRing>& ev = t_.records.GpuLaunchRing.emplace_back();
            static_cast<format::GpuLaunchRing&>(ev) = format::RingRecordOf(s, ring.owner, 3, completed(s.stream));
            if (t_.header.version_minor < 1) ev.py_stack = 0;  // 1.0: a code object's address
            ev.ts = last_ticks;
            ev.tid = static_cast<uint32_t>(ring.owner);
            ev.image = image;
            ++run_;
            NoteRun(static_cast<uint8_t>(format::RecordType::GpuLaunchRing), t_.records.GpuLaunchRing.size() - 1,
                    ev.ts);
          }
        }
      }
    }
  }

  // The slots of a ring of `size` (a power of two) at `at` whose writer has claimed
  // positions up to `written`: those whose n (stored last) is one of the last `size`
  // positions and lies in its own slot, by position.
  template <class Slot> static std::vector<Slot> RecentSlots(const uint8_t* at, uint64_t written, uint32_t size) {
    std::vector<Slot> slots;
    for (uint32_t i = 0; i < size; ++i) {
      Slot sl;
      std::memcpy(static_cast<void*>(&sl), at + i * sizeof(sl), sizeof(sl));
      const uint64_t n = sl.n;
      if (n != 0 && n <= written && written - n < size && ((n - 1) & (size - 1)) == i) slots.push_back(sl);
    }
    std::sort(slots.begin(), slots.end(), [](const Slot& a, const Slot& b) { return a.n < b.n; });
    return slots;
  }

  // The collective chunks (wire.h), of every image: each used group's counters as a
  // collective_group record (ts: the trace's last record's), and the collectives left in
  // its ring that the window no longer holds as collective records (a ring entry is the
  // record its thread wrote at the same tick: same image, tid and ts). A slot is taken
  // only when its n is set (stored last) and is one of the group's last kCollRing.
  void DecodeCollChunks(uint64_t last_ticks) {
    const uint64_t cs = t_.header.chunk_size;
    std::set<std::tuple<uint32_t, uint32_t, uint64_t>> have;
    bool any = false;
    for (const StateRef& c : state_chunks_) {
      if (c.magic != format::kCollChunkMagic || c.seq >= format::kCollChunks) continue;
      const std::span<const uint8_t> chunk = b_.Read(c.offset, cs);
      if (chunk.size() < cs) {
        Warn(c.offset, "the file ends inside a collective chunk; its groups are not read");
        continue;
      }
      if (!any) {
        for (const auto& r : t_.records.Collective) have.emplace(r.image, r.tid, r.ts);
        any = true;
      }
      for (uint32_t k = 0; k < format::kCollGroupsPerChunk; ++k) {
        const uint64_t group = uint64_t{c.seq} * format::kCollGroupsPerChunk + k;
        if (group >= format::kCollGroups) break;
        const uint8_t* at = chunk.data() + format::kCollGroupsOffset + k * sizeof(format::CollGroupBlock);
        format::CollGroupInfo g;
        std::memcpy(static_cast<void*>(&g), at, sizeof(g));
        if (g.written == 0) continue;
        Event<format::CollectiveGroup>& ev = t_.records.CollectiveGroup.emplace_back();
        ev.ts = last_ticks;
        ev.group = group;
        ev.collectives = g.written;
        ev.raised = g.raised;
        ev.async_ops = g.async_ops;
        ev.time = g.ticks;
        ev.entered = g.entered;
        ev.returned = g.returned;
        ev.image = c.image;
        ++run_;
        NoteRun(static_cast<uint8_t>(format::RecordType::CollectiveGroup), t_.records.CollectiveGroup.size() - 1,
                ev.ts);
        ++run_;
        for (const format::CollSlot& sl : RecentSlots<format::CollSlot>(at + sizeof(g), g.written, format::kCollRing)) {
          if (have.count({c.image, sl.tid, sl.ts}) != 0) continue;
          Event<format::Collective>& r = t_.records.Collective.emplace_back();
          r.ts = sl.ts;
          r.dur = sl.dur;
          r.op = sl.op;
          r.group = group;
          r.seq = sl.seq;
          r.seqs = sl.seqs;
          r.count = sl.count;
          r.dtype = sl.dtype;
          r.where = sl.where;
          r.status = sl.status;
          r.tid = sl.tid;
          r.image = c.image;
          NoteRun(static_cast<uint8_t>(format::RecordType::Collective), t_.records.Collective.size() - 1, r.ts);
        }
      }
    }
  }

  // The NCCL chunk (wire.h): its communicator table as nccl_comm_state records (ts: the
  // trace's last record's) and the calls left in its ring as nccl_call records (ts: when each
  // was called), by call number. A slot is taken only when its n is set (stored last), and
  // only the last kNcclSlots numbers can still be in the ring.
  void DecodeNcclChunk(std::span<const uint8_t> chunk, uint32_t image, uint64_t last_ticks) {
    uint32_t counts[2];
    std::memcpy(counts, chunk.data() + format::kNcclCountsOffset, sizeof(counts));
    const uint32_t comms = std::min(counts[1], format::kNcclComms);
    for (uint32_t i = 0; i < comms; ++i) {
      format::NcclCommEntry e;
      std::memcpy(static_cast<void*>(&e), chunk.data() + format::kNcclCommsOffset + i * sizeof(e), sizeof(e));
      if (e.handle == 0) continue;
      Event<format::NcclCommState>& ev = t_.records.NcclCommState.emplace_back();
      ev.ts = last_ticks;
      ev.handle = e.handle;
      ev.comm = e.comm;
      ev.parent = e.parent;
      ev.colls = e.colls;
      ev.p2p = e.p2p;
      ev.nranks = e.nranks;
      ev.rank = e.rank;
      ev.state = e.state;
      ev.splits = e.splits;
      ev.image = image;
      ++run_;
      NoteRun(static_cast<uint8_t>(format::RecordType::NcclCommState), t_.records.NcclCommState.size() - 1, ev.ts);
    }
    for (const format::NcclSlot& sl :
         RecentSlots<format::NcclSlot>(chunk.data() + format::kNcclSlotsOffset, counts[0], format::kNcclSlots)) {
      Event<format::NcclCall>& ev = t_.records.NcclCall.emplace_back();
      ev.ts = sl.ticks;
      ev.n = sl.n;
      ev.op = sl.op;
      ev.comm = sl.comm;
      ev.seq = sl.seq;
      ev.count = sl.count;
      ev.dtype = sl.dtype;
      ev.redop = sl.redop;
      ev.peer = sl.peer;
      ev.stream = sl.stream;
      ev.group = sl.group;
      ev.rc = sl.rc;
      ev.py_stack = sl.py_stack;
      ev.image = image;
      ++run_;
      NoteRun(static_cast<uint8_t>(format::RecordType::NcclCall), t_.records.NcclCall.size() - 1, ev.ts);
    }
  }

  template <class Completed>
  void AddInFlight(const format::ThreadNotes& tn, const format::CallNote& n, uint64_t level, uint32_t image,
                   Completed& completed) {
    using format::InFlightCall;
    if (n.call == 0 || format::InFlightCallName(n.call) == nullptr) return;
    Event<format::InFlight>& ev = t_.records.InFlight.emplace_back();
    ev.ts = n.since;
    static_cast<format::InFlight&>(ev).tid = tn.tid;
    ev.tid = tn.tid;
    ev.call = n.call;
    ev.level = level;
    ev.api = n.api;
    ev.fd = -1;
    ev.pid = 0;
    switch (static_cast<InFlightCall>(n.call)) {
      case InFlightCall::kOpen:
      case InFlightCall::kStat:
      case InFlightCall::kDlopen:
        ev.path = n.object;
        break;
      case InFlightCall::kRead:
      case InFlightCall::kWrite:
      case InFlightCall::kFsync:
      case InFlightCall::kFstat:
        ev.fd = static_cast<int64_t>(static_cast<int32_t>(n.object));
        break;
      case InFlightCall::kGpuSync:
        ev.stream = n.object;
        ev.device_wide = (n.flags & format::kNoteDeviceWide) != 0 ? 1 : 0;
        ev.epoch = n.epoch;
        ev.synced = completed(n.object);
        break;
      case InFlightCall::kWait:
        ev.pid = static_cast<int64_t>(n.object);
        break;
      case InFlightCall::kBatchWait:
        ev.where = n.where;
        break;
      case InFlightCall::kCollective:
        ev.where = n.where;
        ev.seq = n.object;
        ev.count = n.epoch;
        ev.group = n.synced;
        ev.dtype = n.detail;
        break;
    }
    ev.image = image;
    ++run_;
    NoteRun(static_cast<uint8_t>(format::RecordType::InFlight), t_.records.InFlight.size() - 1, ev.ts);
  }

  static uint64_t SaturatingAdd(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

  // The record frames of one chunk (records from `header` on), counted by type with their
  // payload bytes (up to where a length is damaged). Returns how many are droppable.
  static uint64_t CountChunk(std::span<const uint8_t> chunk, uint32_t header, std::array<uint64_t, 256>& counts,
                             std::array<uint64_t, 256>& bytes) {
    uint64_t droppable = 0;
    if (chunk.size() < header) return 0;
    const uint8_t* p = chunk.data() + header;
    const uint8_t* const end = chunk.data() + chunk.size();
    while (p < end && *p != 0) {
      const uint8_t type = *p & static_cast<uint8_t>(~format::kTypeTsBack);
      const uint8_t* q = p + 1;
      uint64_t len = 0;
      if (!format::GetVarint(&q, end, &len) || len > static_cast<uint64_t>(end - q)) break;
      ++counts[type];
      bytes[type] += len;
      if (format::IsDroppable(type)) ++droppable;
      p = q + len;
    }
    return droppable;
  }

  // Sizes every table for its records. The counts are an upper bound (a damaged payload
  // is counted but not stored); a hostile trace that asks for more memory than there is
  // falls back to growing as records arrive.
  void Reserve(const std::array<uint64_t, 256>& counts, const std::array<uint64_t, 256>& bytes) {
    try {
      auto reserve = [&](auto& table, uint8_t code) {
        if constexpr (requires { table.Reserve(0, 0); }) {
          table.Reserve(counts[code], bytes[code]);  // packed
        } else {
          table.reserve(counts[code]);
        }
      };
#define CT_RESERVE(code, Name, dumpname) reserve(t_.records.Name, code);
      COLABTRACE_RECORD_TYPES(CT_RESERVE)
#undef CT_RESERVE
    } catch (const std::exception&) {  // bad_alloc, length_error
    }
  }

  void DecodeChunk(uint64_t off, uint32_t header) {
    const std::span<const uint8_t> chunk = b_.Read(off, t_.header.chunk_size);
    if (chunk.size() < t_.header.chunk_size) {
      Warn(off, "the file ends inside this chunk; records after the end are lost");
    }
    if (chunk.size() < header) return;
    ChunkHeader ch;
    std::memcpy(&ch, chunk.data(), sizeof(ch));
    // Offsets in warnings are file offsets: base is where the file would start.
    const uint8_t* const base = chunk.data() - off;
    const uint8_t* p = chunk.data() + header;
    const uint8_t* const end = chunk.data() + chunk.size();
    uint64_t prev_ts = ch.base_ticks;
    while (p < end) {
      const uint8_t type_byte = *p;
      if (type_byte == 0) break;  // end of this chunk's records
      const uint8_t type = type_byte & static_cast<uint8_t>(~format::kTypeTsBack);
      const bool ts_back = (type_byte & format::kTypeTsBack) != 0;
      const uint8_t* q = p + 1;
      uint64_t len = 0;
      if (!format::GetVarint(&q, end, &len) || len > static_cast<uint64_t>(end - q)) {
        Warn(static_cast<uint64_t>(p - base), "damaged record length; rest of chunk skipped");
        return;
      }
      const uint8_t* payload_end = q + len;
      bool decoded = false;
      const bool known = format::DispatchRecordType(type, [&](auto tag) {
        using R = decltype(tag);
        auto& table = t_.records.*TableMember<R>();
        if constexpr (kPackedRecord<R>) {
          R rec{};
          if (!format::DecodePayload(q, payload_end, prev_ts, &rec, ts_back)) return;
          table.Append(rec, ch.tid, ch.image);
          prev_ts = rec.ts;
        } else {
          Event<R>& ev = table.emplace_back();
          if (!format::DecodePayload(q, payload_end, prev_ts, static_cast<R*>(&ev), ts_back)) {
            table.pop_back();
            return;
          }
          ev.tid = ch.tid;
          ev.image = ch.image;
          prev_ts = ev.ts;
          if constexpr (std::is_same_v<R, format::Sample> || std::is_same_v<R, format::PySample> ||
                        std::is_same_v<R, format::Clock>) {
            // The periodic samples in the window, left out to test the thinned ones alone.
            if (thinned_only_ && header == sizeof(format::EventChunkHeader)) {
              table.pop_back();
              decoded = true;
              return;
            }
          }
          if (HasBytesField<R>()) Keep(ev);
        }
        NoteRun(type, table.size() - 1, prev_ts);
        decoded = true;
      });
      if (!known) {
        // A newer writer's record: skip it by length, but keep the time base.
        uint64_t delta = 0;
        const uint8_t* d = q;
        if (format::GetVarint(&d, payload_end, &delta)) {
          prev_ts = ts_back ? (delta > prev_ts ? 0 : prev_ts - delta) : prev_ts + delta;
        }
        ++t_.stats.unknown_records;
      } else if (!decoded) {
        Warn(static_cast<uint64_t>(p - base), "damaged record payload; rest of chunk skipped");
        return;
      }
      ++t_.stats.records;
      t_.stats.record_bytes += static_cast<uint64_t>(payload_end - p);
      p = payload_end;
    }
  }

  // Fits ticks to CLOCK_MONOTONIC with the first and last Clock records (the header's
  // anchor and estimate when there are fewer) and rewrites every ts and Dur field (a
  // packed table keeps ticks and converts as it is read, with the same TickClock).
  void ConvertTime() {
    const auto& clocks = t_.records.Clock;
    long double t0 = static_cast<long double>(t_.header.start_ticks);
    long double n0 = static_cast<long double>(t_.header.start_mono_ns);
    long double ns_per_tick = 1.0L;
    if (t_.header.features & format::kFeatureTicksAreTsc) {
      const uint64_t hint = t_.header.ticks_per_sec_hint;
      ns_per_tick = hint > 1000 ? 1e9L / static_cast<long double>(hint) : 1.0L;
    }
    if (!clocks.empty()) {
      auto first = std::min_element(clocks.begin(), clocks.end(),
                                    [](auto& a, auto& b) { return a.ts < b.ts; });
      auto last = std::max_element(clocks.begin(), clocks.end(),
                                   [](auto& a, auto& b) { return a.ts < b.ts; });
      t0 = static_cast<long double>(first->ts);
      n0 = static_cast<long double>(first->mono_ns);
      if (last->ts > first->ts + 1000000 && last->mono_ns > first->mono_ns) {
        ns_per_tick = static_cast<long double>(last->mono_ns - first->mono_ns) /
                      static_cast<long double>(last->ts - first->ts);
      }
    }
    const TickClock clock(t0, n0, ns_per_tick);
    uint64_t latest = 0;
    auto convert = [&](auto& table, uint8_t code) {
      if constexpr (requires { table.SetClock(clock); }) {
        // Packed: converted as it is read; its latest record is its largest tick count
        // converted (the conversion is monotonic).
        table.SetClock(clock);
        if (!table.empty()) latest = std::max(latest, clock.ToNs(table.max_ticks()));
        PutPackedInTimeOrder(table, code);
      } else {
        for (auto& ev : table) {
          clock.Convert(ev);
          latest = std::max(latest, ev.ts);
        }
        PutInTimeOrder(table, code);
      }
    };
#define CT_CONVERT(code, Name, dumpname) convert(t_.records.Name, code);
    COLABTRACE_RECORD_TYPES(CT_CONVERT)
#undef CT_CONVERT
    t_.start_ns_ = clock.ToNs(t_.header.start_ticks);
    t_.end_ns_ = std::max(latest, t_.start_ns_);
    for (format::IoAggSums& s : t_.io_aggregates.slots) {
      s.open_ns = clock.DurNs(s.open_ns);
      s.read_ns = clock.DurNs(s.read_ns);
      s.stat_ns = clock.DurNs(s.stat_ns);
    }
    for (IoAggregates::Image& im : t_.io_aggregates.images) {
      im.files_full_ns = im.info.files_full_ticks == 0 ? 0 : clock.ToNs(im.info.files_full_ticks);
    }
    for (IoAggregates::Heavy& h : t_.io_aggregates.heavy) h.from_ns = clock.ToNs(h.from_ticks);
    DecodeStepAggregates(clock);
    ConvertGpuLiveSet(clock);
    for (ThinnedSamples::Image& im : t_.thinned.images) {
      for (uint64_t* ts : {&im.run.peak_rss_ticks, &im.run.peak_vm_ticks, &im.run.peak_cgroup_ticks,
                           &im.run.peak_threads_ticks, &im.run.clock_ticks, &im.run.py_ticks}) {
        if (*ts != 0) *ts = clock.ToNs(*ts);
      }
    }
    // Every event after the latest record of the event chunks given up is in full.
    const uint64_t dropped = t_.header.dropped_until_ticks;
    t_.window.full_from_ns = dropped == 0 ? t_.start_ns_ : std::max(clock.ToNs(dropped), t_.start_ns_);
    // A trace `colabtrace run` compacted (trace_compaction.h) holds no event chunk: its
    // events are counted in the trace_compacted record, and none is in full.
    uint64_t removed = 0;
    for (const auto& c : t_.records.TraceCompacted) {
      removed = SaturatingAdd(removed, c.events);
      t_.window.compacted = true;
    }
    t_.window.events_total = SaturatingAdd(t_.window.events_total, removed);
    if (removed > 0) t_.window.full_from_ns = t_.end_ns_;
    t_.window.window_ns = t_.header.window_ticks == 0 ? 0 : clock.ToNs(SaturatingAdd(t_.header.start_ticks, t_.header.window_ticks)) - t_.start_ns_;
  }

  // The GPU live set's times, and the allocation times GpuFree records carry (1.5), in ns.
  void ConvertGpuLiveSet(const TickClock& clock) {
    for (auto& f : t_.records.GpuFree) {
      if (f.alloc_ts != 0) f.alloc_ts = clock.ToNs(f.alloc_ts);
    }
    GpuLiveSet& g = t_.gpu_live;
    if (!g.present) return;
    auto ns = [&](uint64_t& ticks) {
      if (ticks != 0) ticks = clock.ToNs(ticks);
    };
    ns(g.info.first_ticks);
    ns(g.info.full_first_ticks);
    ns(g.info.last_free_ticks);
    for (format::GpuLiveCounters& c : g.counters) ns(c.peak_ticks);
    for (format::GpuLiveSlot& s : g.slots) ns(s.ticks);
    for (format::GpuLivePoint& p : g.history) ns(p.ticks);
    // A fold cut short by a kill leaves a point twice.
    std::sort(g.history.begin(), g.history.end(),
              [](const format::GpuLivePoint& a, const format::GpuLivePoint& b) { return a.ticks < b.ticks; });
    g.history.erase(std::unique(g.history.begin(), g.history.end(),
                                [](const format::GpuLivePoint& a, const format::GpuLivePoint& b) {
                                  return a.ticks == b.ticks;
                                }),
                    g.history.end());
    std::sort(g.slots.begin(), g.slots.end(), [](const format::GpuLiveSlot& a, const format::GpuLiveSlot& b) {
      return a.ticks != b.ticks ? a.ticks < b.ticks : a.key < b.key;
    });
  }

  // Orders a table by time, stably (records of equal time keep their decode order). The
  // table is a sequence of runs, one per thread in decode order; when each run is in time
  // order (always, for a shim's trace) they are k-way merged, else the table is sorted.
  template <class E> void PutInTimeOrder(std::vector<E>& table, uint8_t code) {
    auto by_ts = [](const E& a, const E& b) { return a.ts < b.ts; };
    // In tick order as decoded (tracked while decoding): also in ns order, the
    // conversion being monotonic.
    if (!out_of_order_[code]) return;
    if (std::is_sorted(table.begin(), table.end(), by_ts)) return;
    std::vector<size_t> bounds = std::move(run_starts_[code]);
    bounds.push_back(table.size());
    bool runs_sorted = bounds.size() <= 4097;  // a hostile trace's thousands of runs: sort
    for (size_t r = 0; runs_sorted && r + 1 < bounds.size(); ++r) {
      runs_sorted = std::is_sorted(table.begin() + static_cast<std::ptrdiff_t>(bounds[r]),
                                   table.begin() + static_cast<std::ptrdiff_t>(bounds[r + 1]), by_ts);
    }
    if (!runs_sorted) {
      std::vector<uint64_t> ts;
      ts.reserve(table.size());
      for (const E& e : table) ts.push_back(e.ts);
      std::vector<E> sorted;
      sorted.reserve(table.size());
      for (size_t i : StableOrderByTime(ts)) sorted.push_back(std::move(table[i]));
      table = std::move(sorted);
      return;
    }
    // Heap of (next ts, run): the earliest record next, the earlier run on equal times.
    using Head = std::pair<uint64_t, size_t>;
    std::priority_queue<Head, std::vector<Head>, std::greater<Head>> heads;
    std::vector<size_t> at(bounds.begin(), bounds.end() - 1);
    for (size_t r = 0; r + 1 < bounds.size(); ++r) {
      if (at[r] < bounds[r + 1]) heads.push({table[at[r]].ts, r});
    }
    std::vector<E> merged;
    merged.reserve(table.size());
    while (!heads.empty()) {
      const size_t r = heads.top().second;
      heads.pop();
      merged.push_back(table[at[r]++]);
      if (at[r] < bounds[r + 1]) heads.push({table[at[r]].ts, r});
    }
    table = std::move(merged);
  }

  // PutInTimeOrder for a packed table: the same order (by ns, stable, earlier run first on
  // equal times), merged into a new packed table from cursors at each run's start.
  template <class R> void PutPackedInTimeOrder(PackedTable<R>& table, uint8_t code) {
    if (!out_of_order_[code]) return;
    auto sorted_between = [&](size_t from, size_t to) {
      uint64_t prev = 0;
      auto it = table.At(from);
      for (size_t i = from; i < to; ++i, ++it) {
        if (it->ts < prev) return false;
        prev = it->ts;
      }
      return true;
    };
    if (sorted_between(0, table.size())) return;
    std::vector<size_t> bounds = std::move(run_starts_[code]);
    bounds.push_back(table.size());
    bool runs_sorted = bounds.size() <= 4097;  // a hostile trace's thousands of runs: sort
    for (size_t r = 0; runs_sorted && r + 1 < bounds.size(); ++r) {
      runs_sorted = sorted_between(bounds[r], bounds[r + 1]);
    }
    const TickClock& clock = table.clock();
    PackedTable<R> merged;
    merged.Reserve(table.size(), table.byte_size());
    if (!runs_sorted) {
      std::vector<Event<R>> all;
      std::vector<uint64_t> ts;
      all.reserve(table.size());
      ts.reserve(table.size());
      for (auto it = table.RawAt(0); it != table.RawEnd(); ++it) {
        all.push_back(*it);
        ts.push_back(clock.ToNs(it->ts));
      }
      for (size_t i : StableOrderByTime(ts)) merged.Append(all[i], all[i].tid, all[i].image);
    } else {
      // Heap of (next ts, run): the earliest record next, the earlier run on equal times.
      using Head = std::pair<uint64_t, size_t>;
      std::priority_queue<Head, std::vector<Head>, std::greater<Head>> heads;
      std::vector<typename PackedTable<R>::const_iterator> at;
      for (size_t r = 0; r + 1 < bounds.size(); ++r) {
        at.push_back(table.RawAt(bounds[r]));
        if (bounds[r] < bounds[r + 1]) heads.push({clock.ToNs(at[r]->ts), r});
      }
      while (!heads.empty()) {
        const size_t r = heads.top().second;
        heads.pop();
        merged.Append(*at[r], at[r]->tid, at[r]->image);
        ++at[r];
        if (at[r].index() < bounds[r + 1]) heads.push({clock.ToNs(at[r]->ts), r});
      }
    }
    merged.SetClock(clock);
    table = std::move(merged);
  }

  // Copies a record's Bytes fields (strings, stacks, build-ids) out of the chunk being
  // decoded into the block the trace keeps: the file's bytes are never held whole, and a
  // directory of thousands of traces holds only what they say.
  template <class E> void Keep(E& ev) {
    ev.Visit([&](const char*, auto tag, auto& value) {
      if constexpr (decltype(tag)::kind == format::FieldKind::kBytes) {
        value.data = kept_->Copy(value.data, value.size);
      }
    });
  }

  // Hands the kept bytes to the trace.
  void KeepBytesFields() { t_.bytes_ = std::move(kept_); }

  // Indexes String and Stack records by id; a later record of one id replaces an earlier.
  void IndexStrings() {
    const auto& strings = t_.records.String;
    t_.strings_.resize(DenseSize(strings));
    for (const auto& s : strings) {
      const std::string_view text(reinterpret_cast<const char*>(s.text.data), s.text.size);
      if (s.id < t_.strings_.size()) {
        t_.strings_[s.id] = text;
      } else {
        t_.sparse_strings_[s.id] = text;
      }
    }
    const auto& stacks = t_.records.Stack;
    t_.stacks_.resize(DenseSize(stacks));
    for (const auto& s : stacks) {
      std::vector<uint64_t> frames(s.frames.size / sizeof(uint64_t));
      if (!frames.empty()) std::memcpy(frames.data(), s.frames.data, frames.size() * sizeof(uint64_t));
      if (s.id < t_.stacks_.size()) {
        t_.stacks_[s.id] = std::move(frames);
      } else {
        t_.sparse_stacks_[s.id] = std::move(frames);
      }
    }
  }

  // How many ids a dense table covers: up to the highest id, unless ids are sparse (more
  // than twice the records, plus slack), which only a hostile trace writes.
  template <class Table> static size_t DenseSize(const Table& records) {
    uint64_t max_id = 0;
    for (const auto& r : records) max_id = std::max(max_id, r.id);
    const uint64_t limit = 2 * static_cast<uint64_t>(records.size()) + 1024;
    return static_cast<size_t>(std::min(max_id, limit) + 1);
  }

 private:
  // The RecordTables member that holds records of type R.
  template <class R> static constexpr TableOf<R> RecordTables::*TableMember() {
#define CT_PICK(code, Name, dumpname) \
  if constexpr (std::is_same_v<R, format::Name>) return &RecordTables::Name;
    COLABTRACE_RECORD_TYPES(CT_PICK)
#undef CT_PICK
    __builtin_unreachable();
  }

  // Records where each thread's run starts in the table of type `code`.
  // Records where each thread's run starts in the table of type `code`, and whether the
  // table is still in time order.
  void NoteRun(uint8_t code, size_t index, uint64_t ticks) {
    if (ticks < last_ticks_[code]) out_of_order_[code] = true;
    last_ticks_[code] = ticks;
    if (last_run_[code] == run_) return;
    last_run_[code] = run_;
    run_starts_[code].push_back(index);
  }

  void Warn(uint64_t offset, const char* what) {
    if (t_.warnings.size() >= 20) return;
    t_.warnings.push_back(t_.file + ": offset " + std::to_string(offset) + ": " + what);
  }

  struct StateRef {
    uint32_t image, magic, seq;
    uint64_t offset;
  };
  // The list a chunk of state or aggregates goes to, by its magic; nullptr for record and
  // event chunks (and unknown magics).
  std::vector<StateRef>* KeptChunksOf(uint32_t magic) {
    switch (magic) {
      case format::kStateChunkMagic:
      case format::kRingChunkMagic:
      case format::kNcclChunkMagic:
      case format::kCollChunkMagic:
        return &state_chunks_;
      case format::kIoAggChunkMagic:
      case format::kIoAggChunkMagic13:
        return &agg_chunks_;
      case format::kIoHeavyChunkMagic:
        return &heavy_chunks_;
      case format::kStepAggChunkMagic:
        return &step_chunks_;
      case format::kGpuLiveChunkMagic:
        return &gpu_live_chunks_;
      case format::kThinChunkMagic:
        return &thin_chunks_;
      case format::kRunThinChunkMagic:
        return &run_thin_chunks_;
      default:
        return nullptr;
    }
  }

  std::vector<StateRef> state_chunks_;  // state and ring chunks, read after the records
  std::vector<StateRef> agg_chunks_;    // I/O aggregate chunks
  std::vector<StateRef> heavy_chunks_;  // I/O heavy-hitter chunks (1.6)
  std::map<std::pair<uint32_t, uint64_t>, uint64_t> dir_paths_;  // (image, directory slot number): path id
  std::vector<StateRef> step_chunks_;   // step aggregate chunks
  std::vector<StateRef> thin_chunks_;   // thinned-sample chunks
  std::vector<StateRef> run_thin_chunks_;  // `colabtrace run`'s thinned-sample chunks
  std::vector<StateRef> gpu_live_chunks_;  // GPU live-set chunks
  // COLABTRACE_ANALYZER_THINNED_SAMPLES_ONLY=1 (tests): the periodic samples from the
  // thinned tiers alone, as if the window had given up every one.
  const bool thinned_only_ = [] {
    const char* v = std::getenv("COLABTRACE_ANALYZER_THINNED_SAMPLES_ONLY");
    return v != nullptr && std::strcmp(v, "1") == 0;
  }();
  ProcessTrace& t_;
  TraceBytes& b_;
  std::shared_ptr<KeptBytes> kept_;
  uint32_t run_ = 0;                               // the thread run being decoded (1, 2, ...)
  std::array<uint32_t, 256> last_run_{};            // per type: the run of its last record
  std::array<uint64_t, 256> last_ticks_{};          // per type: the ts of its last record
  std::array<bool, 256> out_of_order_{};            // per type: a record before its predecessor
  std::array<std::vector<size_t>, 256> run_starts_;  // per type: where each run starts
};

namespace {

std::optional<ProcessTrace> ParseFrom(TraceBytes& bytes, std::string name, std::string* error) {
  auto fail = [&](std::string why) -> std::optional<ProcessTrace> {
    if (error) *error = name + ": " + why;
    return std::nullopt;
  };
  if (bytes.size() == 0) return fail("empty file (the traced process may not have started)");
  const std::span<const uint8_t> head = bytes.Read(0, sizeof(FileHeader));
  if (head.size() < 8 || std::memcmp(head.data(), format::kFileMagic, 8) != 0) {
    return fail("not a colabtrace trace (bad magic)");
  }
  if (head.size() < sizeof(FileHeader)) return fail("trace header is cut short");
  ProcessTrace t;
  t.file = std::move(name);
  std::memcpy(&t.header, head.data(), sizeof(FileHeader));
  const FileHeader& h = t.header;
  if (h.version_major != format::kVersionMajor) {
    return fail("trace format version " + std::to_string(h.version_major) +
                " is not supported (this colabtrace reads version " +
                std::to_string(format::kVersionMajor) + ")");
  }
  if (h.chunk_size < 4096 || h.chunk_size > (1u << 24) || (h.chunk_size & (h.chunk_size - 1))) {
    return fail("trace header has an invalid chunk size");
  }
  t.truncated = (h.flags & format::kFlagTruncated) != 0;
  t.ended = (h.flags & format::kFlagEnded) != 0;
  t.exec_pending = (h.flags & format::kFlagExecPending) != 0;
  TraceDecoder d(t, bytes);
  d.DecodeChunks();
  d.ConvertTime();
  d.KeepBytesFields();
  d.IndexStrings();
  return t;
}

}  // namespace

std::optional<ProcessTrace> ParseTrace(std::vector<uint8_t> bytes, std::string name,
                                       std::string* error) {
  MemoryBytes source(bytes);
  return ParseFrom(source, std::move(name), error);
}

namespace {

// The end of the file's last data extent (SEEK_DATA/SEEK_HOLE), so that a sparse file
// costs what it holds, not its apparent size; the apparent size where the filesystem
// cannot tell.
uint64_t DataEnd(int fd, uint64_t size) {
  uint64_t end = 0;
  for (off_t at = 0; static_cast<uint64_t>(at) < size;) {
    const off_t data = lseek(fd, at, SEEK_DATA);
    if (data < 0) return errno == ENXIO ? end : size;  // ENXIO: no data past `at`
    const off_t hole = lseek(fd, data, SEEK_HOLE);
    if (hole < 0 || hole <= data) return size;
    end = static_cast<uint64_t>(hole);
    at = hole;
  }
  return std::min(end, size);
}

}  // namespace

std::optional<ProcessTrace> ReadTraceFile(const std::string& path, std::string* error) {
  auto fail = [&](std::string why) -> std::optional<ProcessTrace> {
    if (error) *error = path + ": " + why;
    return std::nullopt;
  };
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail(std::string("cannot open: ") + std::strerror(errno));
  struct stat st {};
  std::vector<uint8_t> bytes;
  std::string read_error;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    // The data the file holds, read a chunk at a time; holes read as the zeros they are.
    // The end is rounded up to a whole chunk: the unwritten tail of a chunk in use is a
    // hole too (reserved but never written, or its zero pages evicted), and is still chunk.
    const uint64_t data_end = DataEnd(fd, static_cast<uint64_t>(st.st_size));
    const uint64_t size = std::min<uint64_t>(
        static_cast<uint64_t>(st.st_size),
        (data_end + format::kChunkSize - 1) / format::kChunkSize * format::kChunkSize);
    FileBytes source(fd, size);
    std::optional<ProcessTrace> t = ParseFrom(source, path, error);
    close(fd);
    if (!source.error().empty()) {
      if (!t) return fail("read error: " + source.error());
      t->warnings.push_back(path + ": read error after " + std::to_string(t->stats.record_bytes) +
                            " record bytes (" + source.error() + "); the rest of the file is lost");
    }
    return t;
  } else if (S_ISDIR(st.st_mode)) {
    close(fd);
    return fail("is a directory");
  } else {  // a pipe or a device: read in pieces
    uint8_t buf[1 << 16];
    for (;;) {
      const ssize_t n = read(fd, buf, sizeof(buf));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) read_error = std::strerror(errno);
      if (n <= 0) break;
      bytes.insert(bytes.end(), buf, buf + n);
    }
  }
  close(fd);
  if (!read_error.empty() && bytes.size() < sizeof(FileHeader)) return fail("read error: " + read_error);
  std::optional<ProcessTrace> t = ParseTrace(std::move(bytes), path, error);
  if (t && !read_error.empty()) {
    t->warnings.push_back(path + ": read error after " + std::to_string(t->stats.record_bytes) +
                          " record bytes (" + read_error + "); the rest of the file is lost");
  }
  return t;
}

TraceSet LoadTraces(const std::vector<std::string>& paths) {
  namespace fs = std::filesystem;
  // The files to read, in report order; `in_dir`: found in a named directory. An input
  // with `error` set is a directory without traces (its error keeps its place).
  struct Input {
    std::string path;
    bool in_dir = false;
    std::string error;
  };
  std::vector<Input> inputs;
  TraceSet set;
  for (const std::string& p : paths) {
    std::error_code ec;
    std::vector<std::string> files;
    const bool dir = fs::is_directory(p, ec);
    if (dir) {
      for (const auto& e : fs::directory_iterator(p, ec)) {
        if (e.path().extension() == ".ctrace") files.push_back(e.path().string());
      }
      std::sort(files.begin(), files.end());
      if (files.empty()) inputs.push_back({p, false, p + ": no .ctrace files in this directory"});
    } else {
      files.push_back(p);
    }
    for (std::string& f : files) inputs.push_back({std::move(f), dir, {}});
  }
  // Traces are independent: a directory of thousands is read and decoded on several
  // threads, each taking the next file; results keep the input order.
  std::vector<std::optional<ProcessTrace>> read(inputs.size());
  std::vector<std::string> errors(inputs.size());
  ParallelFor(inputs.size(), 8, [&](size_t i) {
    if (inputs[i].error.empty()) read[i] = ReadTraceFile(inputs[i].path, &errors[i]);
  });
  set.traces.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (read[i]) {
      set.traces.push_back(std::move(*read[i]));
    } else if (!inputs[i].error.empty()) {
      set.errors.push_back(std::move(inputs[i].error));
    } else {
      (inputs[i].in_dir ? set.skipped : set.errors).push_back(std::move(errors[i]));
    }
  }
  return set;
}

// ---- live state chunks (live_state.h) ----------------------------------------------

bool PreadAll(int fd, void* dst, size_t n, uint64_t offset) {
  auto* p = static_cast<uint8_t*>(dst);
  while (n > 0) {
    const ssize_t r = pread(fd, p, n, static_cast<off_t>(offset));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r, n -= static_cast<size_t>(r), offset += static_cast<uint64_t>(r);
  }
  return true;
}

StateChunkRead PreadStateChunk(int fd, uint64_t chunk_offset) {
  return [fd, chunk_offset](uint64_t at, size_t n, uint8_t* dst) { return PreadAll(fd, dst, n, chunk_offset + at); };
}

namespace {

// Copies of a live state chunk's bytes taken one after another, and attempts at copies
// that agree (live_state.h).
constexpr int kLiveCopies = 5;
constexpr int kLiveAttempts = 4;

// Whether every copy of T at `at` within each copy of `stride` bytes agrees.
template <class T> bool CopiesAgree(const uint8_t* copies, size_t stride, size_t at) {
  for (int c = 1; c < kLiveCopies; ++c) {
    if (std::memcmp(copies + at, copies + c * stride + at, sizeof(T)) != 0) return false;
  }
  return true;
}

}  // namespace

LiveProgress ReadLiveProgress(const StateChunkRead& read) {
  LiveProgress p;
  constexpr size_t kSize = sizeof(format::ProgressBlock);
  uint8_t copies[kLiveCopies * kSize];
  for (int attempt = 0; attempt < kLiveAttempts && !p.settled; ++attempt) {
    for (int c = 0; c < kLiveCopies; ++c) {
      if (!read(format::kProgressOffset, kSize, copies + c * kSize)) return LiveProgress{};
    }
    p.read = true;
    p.settled = CopiesAgree<format::ProgressBlock>(copies, kSize, 0);
  }
  if (p.settled) std::memcpy(&p.block, copies, kSize);
  return p;
}

LiveNotes ReadLiveNotes(const StateChunkRead& read) {
  LiveNotes out;
  constexpr size_t kEntry = sizeof(format::ThreadNotes);
  constexpr size_t kBytes = format::kNotesPerChunk * kEntry;
  std::vector<uint8_t> copies(kLiveCopies * kBytes);
  out.notes.resize(format::kNotesPerChunk);
  // What is settled so far: per entry its tid word (with python_thread), and each level.
  std::vector<uint8_t> settled(format::kNotesPerChunk * 3, 0);
  auto settle_level = [&](size_t i, size_t level_at, format::CallNote format::ThreadNotes::*level) {
    const size_t at = i * kEntry + level_at;
    bool no_call = false;
    for (int c = 0; c < kLiveCopies; ++c) {
      uint32_t call;
      std::memcpy(&call, copies.data() + c * kBytes + at, sizeof(call));
      no_call |= call == 0;
    }
    if (no_call) {
      out.notes[i].*level = {};  // no call at that moment
      return true;
    }
    if (!CopiesAgree<format::CallNote>(copies.data(), kBytes, at)) return false;
    std::memcpy(&(out.notes[i].*level), copies.data() + 2 * kBytes + at, sizeof(format::CallNote));
    return true;
  };
  bool all = false;
  for (int attempt = 0; attempt < kLiveAttempts && !all; ++attempt) {
    for (int c = 0; c < kLiveCopies; ++c) {
      if (!read(format::kNotesOffset, kBytes, copies.data() + c * kBytes)) return LiveNotes{};
    }
    out.read = true;
    all = true;
    for (size_t i = 0; i < format::kNotesPerChunk; ++i) {
      uint8_t* done = &settled[i * 3];
      if (!done[0] && CopiesAgree<uint64_t[2]>(copies.data(), kBytes, i * kEntry)) {
        // tid and python_thread: each stored once, so copies that agree hold them whole.
        std::memcpy(&out.notes[i], copies.data() + i * kEntry, 2 * sizeof(uint64_t));
        done[0] = 1;
      }
      if (!done[1]) done[1] = settle_level(i, offsetof(format::ThreadNotes, call), &format::ThreadNotes::call);
      if (!done[2]) done[2] = settle_level(i, offsetof(format::ThreadNotes, wait), &format::ThreadNotes::wait);
      all &= done[0] && done[1] && done[2];
    }
  }
  // What never held still reads as absent: an entry without its tid, a note without a call.
  for (size_t i = 0; i < format::kNotesPerChunk; ++i) {
    const uint8_t* done = &settled[i * 3];
    if (!done[0]) out.notes[i] = {};
    out.rejected += (done[1] ? 0 : 1) + (done[2] ? 0 : 1);
  }
  return out;
}

}  // namespace colabtrace::analyzer
