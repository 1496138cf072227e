// TraceBytesBuilder: builds a .ctrace file in memory with the shim's own encoder, for
// unit and golden tests of the analyzer. It owns only the framing (file header, chunks,
// encode and commit); each test area keeps its own timing policy and domain helpers on
// top. Ticks are nanoseconds (ticks_per_sec_hint = 1e9, no Clock records needed).
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "colabtrace/format/codec.h"
#include "colabtrace/format/gpu_live.h"
#include "colabtrace/format/step_agg.h"
#include "colabtrace/format/wire.h"
#include "trace/process_trace.h"

namespace colabtrace::testing {

class TraceBytesBuilder {
 public:
  // A trace of pid whose clock starts at start_ns; `ended` sets the clean-exit flag.
  TraceBytesBuilder(uint32_t pid, uint64_t start_ns, bool ended = true) : pid_(pid) {
    bytes_.resize(format::kChunkSize);
    format::FileHeader h{};
    std::memcpy(h.magic, format::kFileMagic, sizeof(h.magic));
    h.version_major = format::kVersionMajor;
    h.version_minor = format::kVersionMinor;
    h.header_size = format::kHeaderSize;
    h.chunk_size = format::kChunkSize;
    h.pid = pid;
    h.start_ticks = start_ns;
    h.start_mono_ns = start_ns;
    h.ticks_per_sec_hint = 1000000000;
    h.flags = ended ? format::kFlagEnded : 0;
    std::memcpy(bytes_.data(), &h, sizeof(h));
    NewChunk(pid, start_ns);
  }

  // Records after this go to a new chunk of thread tid whose time base is base_ticks.
  void NewChunk(uint32_t tid, uint64_t base_ticks) {
    tid_ = tid;
    chunk_ = bytes_.size();
    bytes_.resize(bytes_.size() + format::kChunkSize);
    format::ChunkHeader ch{};
    ch.magic = format::kChunkMagic;
    ch.tid = tid;
    ch.base_ticks = base_ticks;
    ch.seq = seq_++;
    std::memcpy(&bytes_[chunk_], &ch, sizeof(ch));
    pos_ = chunk_ + sizeof(ch);
    last_ts_ = base_ticks;
  }

  // Appends r (its ts as set) the way the shim's Emit does, continuing in a new chunk of
  // the same thread when this one is full.
  template <class R> void Append(const R& r) {
    uint8_t tmp[8192];
    ASSERT_LE(format::MaxEncodedSize(r), sizeof(tmp));
    size_t n = format::EncodeRecordUncommitted(r, last_ts_, tmp);
    if (pos_ + n + 1 > chunk_ + format::kChunkSize) {
      NewChunk(tid_, last_ts_);
      n = format::EncodeRecordUncommitted(r, last_ts_, tmp);
    }
    tmp[0] = format::CommittedType(r, last_ts_);
    std::memcpy(&bytes_[pos_], tmp, n);
    pos_ += n;
    last_ts_ = r.ts;
  }

  // A String record with the next id, at time ts; returns the id.
  uint64_t AppendString(const std::string& s, uint64_t ts) {
    format::String r;
    r.ts = ts;
    r.id = next_string_id_++;
    r.text = format::Bytes{reinterpret_cast<const uint8_t*>(s.data()), static_cast<uint32_t>(s.size())};
    Append(r);
    return r.id;
  }

  // A Stack record with the next id, at time ts; returns the id.
  uint64_t AppendStack(const std::vector<uint64_t>& frames, uint64_t ts) {
    format::Stack r;
    r.ts = ts;
    r.id = next_stack_id_++;
    r.frames = format::Bytes{reinterpret_cast<const uint8_t*>(frames.data()),
                             static_cast<uint32_t>(frames.size() * sizeof(uint64_t))};
    Append(r);
    return r.id;
  }

  // A state chunk (wire.h) of exec image `image` holding `notes` (at most
  // format::kNotesPerChunk), with its progress block and the device-wide completed
  // synchronisation epoch; records continue where they were.
  void AddStateChunk(const std::vector<format::ThreadNotes>& notes, uint32_t image = 0, uint32_t seq = 0,
                     format::ProgressBlock progress = {}, uint32_t synced_device = 0) {
    const size_t at = AddChunk(format::kStateChunkMagic, image, seq);
    std::memcpy(&bytes_[at + format::kProgressOffset], &progress, sizeof(progress));
    std::memcpy(&bytes_[at + format::kSyncedDeviceOffset], &synced_device, sizeof(synced_device));
    for (size_t i = 0; i < notes.size() && i < format::kNotesPerChunk; ++i) {
      std::memcpy(&bytes_[at + format::kNotesOffset + i * sizeof(format::ThreadNotes)], &notes[i],
                  sizeof(format::ThreadNotes));
    }
  }

  // A ring chunk (wire.h) holding `rings` (at most format::kRingsPerChunk).
  void AddRingChunk(const std::vector<format::LaunchRing>& rings, uint32_t image = 0, uint32_t seq = 0) {
    const size_t at = AddChunk(format::kRingChunkMagic, image, seq);
    for (size_t i = 0; i < rings.size() && i < format::kRingsPerChunk; ++i) {
      std::memcpy(&bytes_[at + format::kRingsOffset + i * sizeof(format::LaunchRing)],
                  static_cast<const void*>(&rings[i]), sizeof(format::LaunchRing));
    }
  }

  // A chunk stamped `magic` whose bytes after the ChunkHeader are `body`'s (the shim's own
  // table functions write such a body: shim/nccl/nccl_table.h, shim/python/coll_table.h).
  void AddChunkBody(uint32_t magic, const std::vector<uint8_t>& body, uint32_t image = 0, uint32_t seq = 0) {
    const size_t at = AddChunk(magic, image, seq);
    const size_t skip = sizeof(format::ChunkHeader);
    for (size_t i = skip; i < body.size() && i < format::kChunkSize; ++i) bytes_[at + i] = body[i];
  }

  // An NCCL chunk (wire.h) whose bytes after the ChunkHeader are `body`'s.
  void AddNcclChunk(const std::vector<uint8_t>& body, uint32_t image = 0) {
    AddChunkBody(format::kNcclChunkMagic, body, image, 0);
  }

  // I/O aggregate chunks (wire.h) holding `slots`, seq 0 with `info`, as the shim lays them
  // out: 1.4's (CTIS: each count's low 16 bits in its slot, and for a slot with a count
  // of 65,536 or more, a high slot with the rest, right after it) or, `as_13`, 1.3's (CTIA:
  // the IoAggSums as they are, kIoAggSlotsPerChunk13 a chunk).
  void AddIoAggChunks(const format::IoAggInfo& info, const std::vector<format::IoAggSums>& slots,
                      uint32_t image = 0, bool as_13 = false) {
    std::vector<std::array<uint8_t, sizeof(format::IoAggSums)>> raw;
    for (const format::IoAggSums& w : slots) {
      if (as_13) {
        std::memcpy(raw.emplace_back().data(), &w, sizeof(w));
        continue;
      }
      const uint64_t n[format::kIoAggCounts] = {
          w.opens, w.open_errors, w.dir_scans, w.data_copies, w.read_errors, w.zero_reads, w.stats,
          w.stat_errors, w.path_stats, w.passes, w.small_reads, w.stdio_reads, w.read_sizes[0],
          w.read_sizes[1], w.read_sizes[2], w.read_sizes[3], w.read_sizes[4], w.read_sizes[5],
          w.read_sizes[6], w.read_sizes[7], w.read_sizes[8], w.read_sizes[9]};
      format::IoAggSlot s{};
      format::IoAggHighSlot h{};
      bool high = false;
      s.hash = w.hash;
      s.path = w.path;
      s.kind = static_cast<uint16_t>(w.kind);
      s.flags = static_cast<uint16_t>(w.flags);
      s.mount = w.mount;
      for (uint32_t k = 0; k < format::kIoAggCounts; ++k) {
        s.counts[k] = static_cast<uint16_t>(n[k]);
        h.high[k] = static_cast<uint32_t>(n[k] >> 16);
        high = high || h.high[k] != 0;
      }
      s.open_ns = w.open_ns, s.read_ns = w.read_ns, s.stat_ns = w.stat_ns, s.bytes_read = w.bytes_read;
      s.size = w.size, s.eof_at = w.eof_at, s.max_end = w.max_end;
      if (high) {
        h.owner = raw.size();
        h.kind = format::kIoAggHigh;
        s.high = static_cast<uint32_t>(raw.size() + 2);
      }
      std::memcpy(raw.emplace_back().data(), &s, sizeof(s));
      if (high) std::memcpy(raw.emplace_back().data(), &h, sizeof(h));
    }
    const size_t width = as_13 ? sizeof(format::IoAggSums) : sizeof(format::IoAggSlot);
    const uint32_t per_chunk = as_13 ? format::kIoAggSlotsPerChunk13 : format::kIoAggSlotsPerChunk;
    uint32_t seq = 0;
    size_t i = 0;
    do {
      const size_t at = AddChunk(as_13 ? format::kIoAggChunkMagic13 : format::kIoAggChunkMagic, image, seq);
      if (seq++ == 0) std::memcpy(&bytes_[at + format::kIoAggInfoOffset], &info, sizeof(info));
      for (uint32_t k = 0; k < per_chunk && i < raw.size(); ++k, ++i) {
        std::memcpy(&bytes_[at + format::kIoAggSlotsOffset + k * width], raw[i].data(), width);
      }
    } while (i < raw.size());
  }

  // The three chunks of a step aggregate series (format/step_agg.h), as the shim lays them
  // out: `info` (its source and tid), the periods, and per histogram part (StepPart below
  // kStepHistParts) the values it counted, in ticks.
  void AddStepAggSeries(const format::StepAggInfo& info, const std::vector<format::StepAggPeriod>& periods,
                        const std::vector<std::vector<uint64_t>>& values, uint32_t image = 0) {
    size_t at[format::kStepAggChunksPerSeries];
    for (uint32_t k = 0; k < format::kStepAggChunksPerSeries; ++k) {
      at[k] = AddChunk(format::kStepAggChunkMagic, image, format::StepAggSeq(info.source, k));
    }
    std::memcpy(&bytes_[at[0] + format::kStepAggInfoOffset], &info, sizeof(info));
    for (size_t i = 0; i < periods.size() && i < format::kStepAggPeriods; ++i) {
      std::memcpy(&bytes_[at[0] + format::kStepAggPeriodsOffset + i * sizeof(format::StepAggPeriod)], &periods[i],
                  sizeof(format::StepAggPeriod));
    }
    for (uint32_t h = 0; h < format::kStepHistParts && h < values.size(); ++h) {
      for (uint64_t v : values[h]) {
        const size_t bucket = at[format::StepAggHistPart(h)] + format::StepAggHistAt(h) +
                              format::StepHistBucket(v) * sizeof(uint32_t);
        uint32_t count;
        std::memcpy(&count, &bytes_[bucket], sizeof(count));
        ++count;
        std::memcpy(&bytes_[bucket], &count, sizeof(count));
      }
    }
  }

  // Cuts the trace to its first n bytes (a file that ends early).
  // A thinned-sample chunk (format/sample_tiers.h) of tier `seq` whose bytes after the
  // ChunkHeader are `chunk`'s (a whole chunk the test filled through format::ThinTiers).
  void AddThinChunk(const uint8_t* chunk, uint32_t seq, uint32_t image = 0) {
    const size_t at = AddChunk(format::kThinChunkMagic, image, seq);
    std::memcpy(&bytes_[at + sizeof(format::ChunkHeader)], chunk + sizeof(format::ChunkHeader),
                format::kChunkSize - sizeof(format::ChunkHeader));
  }

  // Says the window gave up the droppable records up to `ticks` (FileHeader::dropped_until_ticks).
  void SetDroppedUntil(uint64_t ticks) {
    format::FileHeader h;
    std::memcpy(&h, bytes_.data(), sizeof(h));
    h.dropped_until_ticks = ticks;
    std::memcpy(bytes_.data(), &h, sizeof(h));
  }

  void Truncate(size_t n) {
    if (n < bytes_.size()) bytes_.resize(n);
  }

  // Clears the clean-exit flag (a trace whose process was killed).
  void MarkNotEnded() {
    format::FileHeader h;
    std::memcpy(&h, bytes_.data(), sizeof(h));
    h.flags &= ~static_cast<uint32_t>(format::kFlagEnded);
    std::memcpy(bytes_.data(), &h, sizeof(h));
  }

  // The GPU live-set chunks (format/gpu_live.h) of exec image `image`: the info chunk with
  // `info` and `counters` (kGpuLiveEntries), then the table chunks, each slot of `slots`
  // at its home (or the next free one).
  void AddGpuLiveChunks(const format::GpuLiveInfo& info, const std::vector<format::GpuLiveCounters>& counters,
                        const std::vector<format::GpuLiveSlot>& slots, uint32_t image = 0) {
    const size_t info_at = AddChunk(format::kGpuLiveChunkMagic, image, 0);
    std::memcpy(&bytes_[info_at + format::kGpuLiveInfoOffset], &info, sizeof(info));
    for (size_t e = 0; e < counters.size() && e < format::kGpuLiveEntries; ++e) {
      std::memcpy(&bytes_[info_at + format::kGpuLiveCountersOffset + e * sizeof(counters[e])], &counters[e],
                  sizeof(counters[e]));
    }
    size_t at[format::kGpuLiveTableChunks];
    for (uint32_t k = 0; k < format::kGpuLiveTableChunks; ++k) at[k] = AddChunk(format::kGpuLiveChunkMagic, image, k + 1);
    auto slot_at = [&](uint32_t i) -> format::GpuLiveSlot& {
      return *reinterpret_cast<format::GpuLiveSlot*>(&bytes_[at[i / format::kGpuLiveSlotsPerChunk] + format::kGpuLiveSlotsOffset +
                                                             (i % format::kGpuLiveSlotsPerChunk) * sizeof(format::GpuLiveSlot)]);
    };
    format::GpuLiveTable table(slot_at);
    for (const format::GpuLiveSlot& s : slots) {
      format::GpuLiveSlot old;
      bool was_there = false;
      EXPECT_TRUE(table.Insert(s, &old, &was_there));
    }
  }

  // Writes the header as a shim of format 1.`minor` would (an older trace).
  void SetVersionMinor(uint16_t minor) {
    format::FileHeader h;
    std::memcpy(&h, bytes_.data(), sizeof(h));
    h.version_minor = minor;
    std::memcpy(bytes_.data(), &h, sizeof(h));
  }

  uint64_t last_ts() const { return last_ts_; }
  const std::vector<uint8_t>& bytes() const { return bytes_; }

  // Decodes the bytes with the real reader (the test fails if they do not parse).
  analyzer::ProcessTrace Parse() const {
    std::string err;
    auto t = analyzer::ParseTrace(bytes_, "inline-" + std::to_string(pid_), &err);
    EXPECT_TRUE(t.has_value()) << err;
    return t ? std::move(*t) : analyzer::ProcessTrace{};
  }

 private:
  // Appends a zeroed chunk stamped with magic; returns its offset.
  size_t AddChunk(uint32_t magic, uint32_t image, uint32_t seq) {
    const size_t at = bytes_.size();
    bytes_.resize(at + format::kChunkSize);
    format::ChunkHeader ch{};
    ch.magic = magic;
    ch.seq = seq;
    ch.image = image;
    std::memcpy(&bytes_[at], &ch, sizeof(ch));
    return at;
  }

  uint32_t pid_;
  uint32_t tid_ = 0;
  std::vector<uint8_t> bytes_;
  size_t chunk_ = 0, pos_ = 0;
  uint64_t last_ts_ = 0, next_string_id_ = 1, next_stack_id_ = 1;
  uint32_t seq_ = 0;
};

}  // namespace colabtrace::testing
