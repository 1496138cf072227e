// colabtrace trace format: the frozen byte layout of a .ctrace file.
//
// A trace is one file per process, written through a MAP_SHARED mapping so that it
// survives SIGKILL. Layout:
//
//   offset 0           FileHeader (kHeaderSize bytes, then zero padding to kChunkSize)
//   offset kChunkSize  chunk 0, chunk 1, ... each kChunkSize bytes
//
// Each chunk belongs to one thread and starts with a ChunkHeader. After it come framed
// records, back to back, until a zero byte (the rest of the chunk is unused):
//
//   [u8 type][varint payload_len][payload: varint ts_delta, then the record's fields]
//
// The type byte is stored last, so a record is either complete or absent. ts_delta is
// the record's tick count minus the previous record's in the same chunk (the first is
// relative to ChunkHeader::base_ticks). A reader skips record types it does not know by
// payload_len. See docs/trace-format.md for the full description.
//
// This header is dependency-free and shared by the shim and the analyzer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace colabtrace::format {

inline constexpr char kFileMagic[8] = {'C', 'T', 'R', 'A', 'C', 'E', '\r', '\n'};
inline constexpr uint16_t kVersionMajor = 1;
inline constexpr uint16_t kVersionMinor = 0;
inline constexpr uint32_t kHeaderSize = 256;
inline constexpr uint32_t kChunkSize = 32 * 1024;
inline constexpr uint32_t kChunkMagic = 0x4b435443;  // "CTCK" little-endian

// FileHeader::flags bits. The shim updates them in place with atomic operations.
enum HeaderFlag : uint32_t {
  kFlagTruncated = 1u << 0,    // tracing stopped early (disk full, size limit, cap)
  kFlagEnded = 1u << 1,        // the shim wrote its end record and closed cleanly
  kFlagExecPending = 1u << 2,  // an exec is in flight; the next image adopts this file
  kFlagClosing = 1u << 3,      // no new chunks may be allocated
};

// FileHeader::features bits.
enum FeatureBit : uint64_t {
  kFeatureTicksAreTsc = 1u << 0,  // ticks come from rdtsc; else they are CLOCK_MONOTONIC ns
};

// The first kHeaderSize bytes of every trace. Fixed-width fields, explicit padding.
struct FileHeader {
  char magic[8];
  uint16_t version_major;
  uint16_t version_minor;
  uint32_t header_size;  // sizeof(FileHeader) as written; readers honour it
  uint64_t features;
  uint32_t chunk_size;
  uint32_t pid;
  uint64_t start_ticks;         // tick count when the trace was created
  uint64_t start_mono_ns;       // CLOCK_MONOTONIC at start_ticks
  uint64_t start_realtime_ns;   // CLOCK_REALTIME at start_ticks (the one anchor)
  uint64_t ticks_per_sec_hint;  // the shim's estimate; Clock records refine it
  uint64_t next_chunk_offset;   // allocation high-water mark (atomic in the shim)
  uint32_t flags;               // HeaderFlag bits (atomic in the shim)
  uint32_t truncation_errno;    // why tracing stopped, when kFlagTruncated is set
  uint64_t truncated_at_offset;  // high-water mark when truncation happened
  uint32_t image_count;          // 1 + number of execs adopted into this file
  uint32_t reserved0;
  uint64_t next_string_id;       // interning counters, shared by all exec images
  uint64_t next_stack_id;
  uint8_t reserved[144];
};
static_assert(sizeof(FileHeader) == kHeaderSize);

// The first bytes of every chunk. magic is stored last: a chunk without it is unused.
struct ChunkHeader {
  uint32_t magic;
  uint32_t tid;
  uint64_t base_ticks;  // the first record's ts_delta is relative to this
  uint32_t seq;         // per-thread chunk sequence number, for ordering
  uint32_t flags;       // ChunkFlag bits
  uint32_t image;       // which exec image (0-based) wrote this chunk
  uint32_t reserved;
};
static_assert(sizeof(ChunkHeader) == 32);

enum ChunkFlag : uint32_t {
  kChunkFromSignalHandler = 1u << 0,  // written by a fatal-signal handler
};

// ---- varints (LEB128) -------------------------------------------------------------

inline constexpr size_t kMaxVarintBytes = 10;

// Writes v as LEB128 at p; returns the byte after it. p must have kMaxVarintBytes room.
inline uint8_t* PutVarint(uint8_t* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<uint8_t>(v) | 0x80;
    v >>= 7;
  }
  *p++ = static_cast<uint8_t>(v);
  return p;
}

inline constexpr uint64_t ZigZag(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
inline constexpr int64_t UnZigZag(uint64_t v) {
  return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1);
}

// Reads a LEB128 value from [*p, end). Returns false (and leaves *p unspecified) on a
// truncated or over-long encoding; never reads past end.
inline bool GetVarint(const uint8_t** p, const uint8_t* end, uint64_t* out) {
  const uint8_t* q = *p;
  if (q < end && *q < 0x80) {  // most fields are one byte
    *out = *q;
    *p = q + 1;
    return true;
  }
  uint64_t v = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    if (q >= end) return false;
    const uint8_t b = *q++;
    if (shift == 63 && b > 1) return false;
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) {
      *p = q;
      *out = v;
      return true;
    }
  }
  return false;
}

inline bool HasValidMagic(const FileHeader& h) {
  return std::memcmp(h.magic, kFileMagic, sizeof(kFileMagic)) == 0;
}

}  // namespace colabtrace::format
