// TraceBytesBuilder: builds a .ctrace file in memory with the shim's own encoder, for
// unit and golden tests of the analyzer. It owns only the framing (file header, chunks,
// encode and commit); each test area keeps its own timing policy and domain helpers on
// top. Ticks are nanoseconds (ticks_per_sec_hint = 1e9, no Clock records needed).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "colabtrace/format/codec.h"
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

  // An NCCL chunk (wire.h) whose bytes after the ChunkHeader are `body`'s (the shim's own
  // table functions, shim/nccl/nccl_table.h, write such a body).
  void AddNcclChunk(const std::vector<uint8_t>& body, uint32_t image = 0) {
    const size_t at = AddChunk(format::kNcclChunkMagic, image, 0);
    const size_t skip = sizeof(format::ChunkHeader);
    for (size_t i = skip; i < body.size() && i < format::kChunkSize; ++i) bytes_[at + i] = body[i];
  }

  // I/O aggregate chunks (wire.h) holding `slots`, format::kIoAggSlotsPerChunk a chunk,
  // seq 0 with `info`, as the shim lays them out.
  void AddIoAggChunks(const format::IoAggInfo& info, const std::vector<format::IoAggSlot>& slots,
                      uint32_t image = 0) {
    uint32_t seq = 0;
    size_t i = 0;
    do {
      const size_t at = AddChunk(format::kIoAggChunkMagic, image, seq);
      if (seq++ == 0) std::memcpy(&bytes_[at + format::kIoAggInfoOffset], &info, sizeof(info));
      for (uint32_t k = 0; k < format::kIoAggSlotsPerChunk && i < slots.size(); ++k, ++i) {
        std::memcpy(&bytes_[at + format::kIoAggSlotsOffset + k * sizeof(format::IoAggSlot)], &slots[i],
                    sizeof(format::IoAggSlot));
      }
    } while (i < slots.size());
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
