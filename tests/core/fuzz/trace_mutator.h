// A structure-aware mutation of a trace for libFuzzer (LLVMFuzzerCustomMutator): keeps the
// file header, the chunk layout and the record framing ([type][varint len][payload]) valid
// often enough that mutations reach the record decoders instead of dying at the header
// or the first record. One call picks one record chunk and does one of:
//   - mutate one record's payload with libFuzzer's own mutator, re-encoding its length;
//   - give one record another type (a known one, or its ts-back bit flipped);
//   - duplicate, delete or swap records;
//   - change one varint of a payload to an edge value (0, 1, 2^32, 2^63, 2^64 - 1);
//   - shrink the chunk size in the header to 4096 (and cut the file to match), so that
//     inputs stay small and fast.
// An input that is no trace, or a coin flip, gets libFuzzer's plain mutation instead.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "colabtrace/format/codec.h"
#include "colabtrace/format/wire.h"

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace colabtrace::fuzz {

struct RecordSpan {
  size_t at;       // the type byte's offset within the chunk
  size_t payload;  // the payload's offset
  size_t len;      // the payload's length
};

inline bool ReadVarint(const uint8_t* p, size_t end, size_t* at, uint64_t* v) {
  *v = 0;
  for (int shift = 0; *at < end && shift < 64; shift += 7) {
    const uint8_t b = p[(*at)++];
    *v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return true;
  }
  return false;
}

inline void WriteVarint(std::vector<uint8_t>& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<uint8_t>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<uint8_t>(v));
}

// The records of one chunk body (after its 32-byte header), as far as they frame, into
// out (cleared first).
inline void RecordsInto(const uint8_t* chunk, size_t size, std::vector<RecordSpan>& out) {
  out.clear();
  size_t at = sizeof(format::ChunkHeader);
  while (at < size && chunk[at] != 0) {
    const size_t start = at++;
    uint64_t len = 0;
    if (!ReadVarint(chunk, size, &at, &len) || len > size - at) break;
    out.push_back({start, at, static_cast<size_t>(len)});
    at += static_cast<size_t>(len);
  }
}
inline std::vector<RecordSpan> Records(const uint8_t* chunk, size_t size) {
  std::vector<RecordSpan> out;
  RecordsInto(chunk, size, out);
  return out;
}

// One structural mutation of the trace in data[0, size); the new size (0: not applied).
//
// libFuzzer calls this for most inputs, so it allocates nothing once warm: the record
// list, the new body and the one rewritten payload live in buffers kept from call to call
// (a body rebuilt as one vector per record took half of fuzz_decode's time under ASan).
inline size_t MutateTrace(uint8_t* data, size_t size, size_t max_size, unsigned seed) {
  std::minstd_rand rng(seed);
  if (size < format::kHeaderSize || std::memcmp(data, format::kFileMagic, sizeof(format::kFileMagic)) != 0) {
    return 0;
  }
  format::FileHeader h;
  std::memcpy(&h, data, sizeof(h));
  const size_t cs = h.chunk_size;
  if (cs < 4096 || cs > (1u << 24) || (cs & (cs - 1)) != 0 || size <= cs) return 0;
  // The record chunks (CTCK) that hold at least one record.
  static thread_local std::vector<size_t> chunks;
  chunks.clear();
  for (size_t off = cs; off + sizeof(format::ChunkHeader) < size; off += cs) {
    uint32_t magic;
    std::memcpy(&magic, data + off, sizeof(magic));
    if (magic == format::kChunkMagic) chunks.push_back(off);
  }
  if (chunks.empty()) return 0;
  const size_t off = chunks[rng() % chunks.size()];
  const size_t csize = std::min(cs, size - off);
  uint8_t* chunk = data + off;
  static thread_local std::vector<RecordSpan> recs;
  RecordsInto(chunk, csize, recs);
  if (recs.empty()) return 0;
  // The new body is the records in order, with record k changed as drawn: its payload
  // rewritten (into `payload`), its type changed, written twice, left out, or swapped
  // with record j. Then it is written back over the old one, zero-padded.
  static thread_local std::vector<uint8_t> payload, out;
  const size_t n = recs.size();
  const size_t k = rng() % n;
  uint8_t type_k = chunk[recs[k].at];
  bool new_payload = false, twice = false, drop = false;
  size_t j = k;
  switch (rng() % 6) {
    case 0: {  // the payload, mutated by libFuzzer (it may grow a little)
      const size_t len = recs[k].len;
      payload.assign(chunk + recs[k].payload, chunk + recs[k].payload + len);
      payload.resize(len + 16);
      payload.resize(LLVMFuzzerMutate(payload.data(), len, payload.size()));
      new_payload = true;
      break;
    }
    case 1: {  // another type: a neighbour's, a random one below 128, or the ts-back bit
      const uint8_t choices[] = {chunk[recs[rng() % n].at], static_cast<uint8_t>(rng() % 128),
                                 static_cast<uint8_t>(type_k ^ format::kTypeTsBack)};
      type_k = choices[rng() % 3];
      if (type_k == 0) type_k = 1;
      break;
    }
    case 2:
      twice = true;
      break;
    case 3:
      drop = n > 1;
      break;
    case 4:
      j = rng() % n;
      break;
    default: {  // one varint of the payload to an edge value
      const uint8_t* p = chunk + recs[k].payload;
      const size_t len = recs[k].len;
      // The varints' starts: the last one is drawn from those that begin in the payload.
      size_t starts = 0;
      for (size_t at = 0; at < len;) {
        ++starts;
        uint64_t v;
        if (!ReadVarint(p, len, &at, &v)) break;
      }
      if (starts == 0) break;
      const size_t which = rng() % starts;
      size_t s = 0;
      for (size_t i = 0; i < which; ++i) {
        uint64_t v;
        ReadVarint(p, len, &s, &v);
      }
      size_t e = s;
      uint64_t old;
      ReadVarint(p, len, &e, &old);
      const uint64_t edges[] = {0, 1, 1ull << 32, 1ull << 63, UINT64_MAX, old + 1};
      payload.assign(p, p + s);
      WriteVarint(payload, edges[rng() % 6]);
      payload.insert(payload.end(), p + e, p + len);
      new_payload = true;
      break;
    }
  }
  out.clear();
  auto put = [&](uint8_t type, const uint8_t* bytes, size_t len) {
    out.push_back(type);
    WriteVarint(out, len);
    out.insert(out.end(), bytes, bytes + len);
  };
  auto put_record = [&](size_t i) {
    if (i == k && new_payload) {
      put(type_k, payload.data(), payload.size());
    } else {
      put(i == k ? type_k : chunk[recs[i].at], chunk + recs[i].payload, recs[i].len);
    }
  };
  for (size_t i = 0; i < n; ++i) {
    if (i == k && drop) continue;
    // A swap: k's place holds j's record and j's place k's.
    put_record(i == k ? j : i == j ? k : i);
    if (i == k && twice) put_record(k);
  }
  const size_t room = csize - sizeof(format::ChunkHeader);
  if (out.size() > room) out.resize(room);  // cut: the reader must stop cleanly there
  std::memcpy(chunk + sizeof(format::ChunkHeader), out.data(), out.size());
  std::memset(chunk + sizeof(format::ChunkHeader) + out.size(), 0, room - out.size());
  // Now and then, a chunk size of 4096: the first few records of each chunk kept.
  if (rng() % 16 == 0 && cs > 4096) {
    size_t small = 4096;
    for (size_t c : chunks) small += std::min<size_t>(4096, size - c);
    size_t at = 4096;
    if (small <= max_size) {
      // In place, front to back: each chunk's first 4 KiB moves down, never over a chunk
      // not yet moved.
      for (size_t c : chunks) {
        const size_t len = std::min<size_t>(4096, size - c);
        std::memmove(data + at, data + c, len);
        at += len;
      }
      format::FileHeader nh = h;
      nh.chunk_size = 4096;
      std::memcpy(data, &nh, sizeof(nh));
      return at;
    }
  }
  return size;
}

}  // namespace colabtrace::fuzz
