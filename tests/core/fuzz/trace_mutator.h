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

// The records of one chunk body (after its 32-byte header), as far as they frame.
inline std::vector<RecordSpan> Records(const uint8_t* chunk, size_t size) {
  std::vector<RecordSpan> out;
  size_t at = sizeof(format::ChunkHeader);
  while (at < size && chunk[at] != 0) {
    const size_t start = at++;
    uint64_t len = 0;
    if (!ReadVarint(chunk, size, &at, &len) || len > size - at) break;
    out.push_back({start, at, static_cast<size_t>(len)});
    at += static_cast<size_t>(len);
  }
  return out;
}

// One structural mutation of the trace in data[0, size); the new size (0: not applied).
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
  std::vector<size_t> chunks;
  for (size_t off = cs; off + sizeof(format::ChunkHeader) < size; off += cs) {
    uint32_t magic;
    std::memcpy(&magic, data + off, sizeof(magic));
    if (magic == format::kChunkMagic) chunks.push_back(off);
  }
  if (chunks.empty()) return 0;
  const size_t off = chunks[rng() % chunks.size()];
  const size_t csize = std::min(cs, size - off);
  uint8_t* chunk = data + off;
  std::vector<RecordSpan> recs = Records(chunk, csize);
  if (recs.empty()) return 0;
  // The chunk body rebuilt from (type, payload) pairs, then written back zero-padded.
  std::vector<std::pair<uint8_t, std::vector<uint8_t>>> body;
  for (const RecordSpan& r : recs) {
    body.emplace_back(chunk[r.at], std::vector<uint8_t>(chunk + r.payload, chunk + r.payload + r.len));
  }
  const size_t k = rng() % body.size();
  switch (rng() % 6) {
    case 0: {  // the payload, mutated by libFuzzer (it may grow a little)
      std::vector<uint8_t>& p = body[k].second;
      const size_t n = p.size();
      p.resize(n + 16);
      p.resize(LLVMFuzzerMutate(p.data(), n, p.size()));
      break;
    }
    case 1: {  // another type: a neighbour's, a random one below 128, or the ts-back bit
      const uint8_t choices[] = {body[rng() % body.size()].first, static_cast<uint8_t>(rng() % 128),
                                 static_cast<uint8_t>(body[k].first ^ format::kTypeTsBack)};
      body[k].first = choices[rng() % 3];
      if (body[k].first == 0) body[k].first = 1;
      break;
    }
    case 2:
      body.insert(body.begin() + static_cast<std::ptrdiff_t>(k), body[k]);
      break;
    case 3:
      if (body.size() > 1) body.erase(body.begin() + static_cast<std::ptrdiff_t>(k));
      break;
    case 4:
      std::swap(body[k], body[rng() % body.size()]);
      break;
    default: {  // one varint of the payload to an edge value
      std::vector<uint8_t>& p = body[k].second;
      std::vector<size_t> starts;
      for (size_t at = 0; at < p.size();) {
        starts.push_back(at);
        uint64_t v;
        if (!ReadVarint(p.data(), p.size(), &at, &v)) break;
      }
      if (starts.empty()) break;
      const size_t s = starts[rng() % starts.size()];
      size_t e = s;
      uint64_t old;
      ReadVarint(p.data(), p.size(), &e, &old);
      const uint64_t edges[] = {0, 1, 1ull << 32, 1ull << 63, UINT64_MAX, old + 1};
      std::vector<uint8_t> v;
      WriteVarint(v, edges[rng() % 6]);
      p.erase(p.begin() + static_cast<std::ptrdiff_t>(s), p.begin() + static_cast<std::ptrdiff_t>(e));
      p.insert(p.begin() + static_cast<std::ptrdiff_t>(s), v.begin(), v.end());
      break;
    }
  }
  std::vector<uint8_t> out;
  for (const auto& [type, payload] : body) {
    out.push_back(type);
    WriteVarint(out, payload.size());
    out.insert(out.end(), payload.begin(), payload.end());
  }
  const size_t room = csize - sizeof(format::ChunkHeader);
  if (out.size() > room) out.resize(room);  // cut: the reader must stop cleanly there
  std::memset(chunk + sizeof(format::ChunkHeader), 0, room);
  std::memcpy(chunk + sizeof(format::ChunkHeader), out.data(), out.size());
  // Now and then, a chunk size of 4096: the first few records of each chunk kept.
  if (rng() % 16 == 0 && cs > 4096) {
    std::vector<uint8_t> small(data, data + 4096);
    format::FileHeader nh = h;
    nh.chunk_size = 4096;
    std::memcpy(small.data(), &nh, sizeof(nh));
    for (size_t c : chunks) small.insert(small.end(), data + c, data + c + std::min<size_t>(4096, size - c));
    if (small.size() <= max_size) {
      std::memcpy(data, small.data(), small.size());
      return small.size();
    }
  }
  return size;
}

}  // namespace colabtrace::fuzz
