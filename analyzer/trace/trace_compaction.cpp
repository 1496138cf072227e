#include "trace/trace_compaction.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "colabtrace/format/codec.h"
#include "colabtrace/format/event_tally.h"

namespace colabtrace::analyzer {
namespace {

using format::ChunkHeader;
using format::FileHeader;

// Reads up to n bytes at off; returns how many (fewer at the end of the file, or on an
// error: errno then says which).
size_t ReadAt(int fd, uint8_t* buf, size_t n, uint64_t off) {
  size_t got = 0;
  while (got < n) {
    const ssize_t r = pread(fd, buf + got, n - got, static_cast<off_t>(off + got));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += static_cast<size_t>(r);
  }
  return got;
}

bool WriteAt(int fd, const uint8_t* buf, size_t n, uint64_t off) {
  while (n > 0) {
    const ssize_t w = pwrite(fd, buf, n, static_cast<off_t>(off));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      if (w == 0) errno = ENOSPC;
      return false;
    }
    buf += w, n -= static_cast<size_t>(w), off += static_cast<uint64_t>(w);
  }
  return true;
}

// The droppable records in an event chunk's body (the reader's count: frames up to the
// first zero byte or the first frame that does not fit), and the latest tick of its
// records into *last (ts deltas from `ticks`, the chunk's base_ticks).
uint64_t DroppableIn(const uint8_t* p, const uint8_t* end, uint64_t ticks, uint64_t* last) {
  uint64_t n = 0;
  while (p < end && *p != 0) {
    const bool back = (*p & format::kTypeTsBack) != 0;
    const uint8_t type = *p & static_cast<uint8_t>(~format::kTypeTsBack);
    const uint8_t* q = p + 1;
    uint64_t len = 0;
    if (!format::GetVarint(&q, end, &len) || len > static_cast<uint64_t>(end - q)) break;
    const uint8_t* payload = q;
    uint64_t delta = 0;
    if (format::GetVarint(&payload, q + len, &delta)) {
      ticks = back ? ticks - std::min(ticks, delta) : ticks + delta;
      *last = std::max(*last, ticks);
    }
    if (format::IsDroppable(type)) ++n;
    p = q + len;
  }
  return n;
}

// The length of buf[0, n) without its trailing zeros, rounded up to a 4 KiB block (the
// rest stays a hole in the copy, which reads as the same zeros).
size_t WithoutZeroTail(const uint8_t* buf, size_t n) {
  size_t used = n;
  while (used > 0 && buf[used - 1] == 0) --used;
  constexpr size_t kBlock = 4096;
  return std::min(n, (used + kBlock - 1) / kBlock * kBlock);
}

std::string Errno(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

}  // namespace

uint64_t DiskBytes(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return 0;
  return static_cast<uint64_t>(st.st_blocks) * 512;
}

CompactionResult CompactTrace(const std::string& path, const std::function<void(int)>& before_step) {
  CompactionResult res;
  int step = 0;
  auto next_step = [&] {
    if (before_step) before_step(step);
    ++step;
  };
  const int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    res.error = Errno("cannot open it");
    return res;
  }
  struct Closer {
    int fd;
    ~Closer() { close(fd); }
  } closer{fd};
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    res.error = "not a regular file";
    return res;
  }
  res.bytes_before = res.bytes_after = static_cast<uint64_t>(st.st_blocks) * 512;
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  FileHeader h;
  if (ReadAt(fd, reinterpret_cast<uint8_t*>(&h), sizeof(h), 0) != sizeof(h) || !format::HasValidMagic(h)) {
    res.error = "not a trace";
    return res;
  }
  const uint64_t cs = h.chunk_size;
  if (h.version_major != format::kVersionMajor || h.version_minor < 3 || cs != format::kChunkSize ||
      h.header_size != format::kHeaderSize) {
    return res;  // no event chunks before 1.3; another layout is not ours to rewrite
  }
  // Which chunks stay, and the events of the ones that go: per (image, tid), the latest
  // event chunk's events_before plus its records, and the exited threads' in the header
  // (the reader's events_total, format::EventTally).
  format::EventTally tally(h);
  std::vector<uint64_t> kept, events;  // offsets in the original: chunks kept, event chunks
  bool sums = false;                   // the trace has I/O aggregate chunks
  uint64_t last_ticks = h.start_ticks;  // of the records removed: the trace's end stays
  uint64_t unused = 0;
  std::vector<uint8_t> buf(cs);
  for (uint64_t off = cs; off + sizeof(ChunkHeader) <= size; off += cs) {
    const size_t n = ReadAt(fd, buf.data(), cs, off);
    if (n < sizeof(ChunkHeader)) break;
    ChunkHeader ch;
    std::memcpy(&ch, buf.data(), sizeof(ch));
    if (ch.magic == 0) {
      ++unused;
      continue;
    }
    if (ch.magic != format::kEventChunkMagic) {
      sums = sums || ch.magic == format::kIoAggChunkMagic;
      kept.push_back(off);
      continue;
    }
    events.push_back(off);
    ++res.event_chunks;
    if (n < sizeof(format::EventChunkHeader)) continue;
    format::EventChunkHeader eh;
    std::memcpy(&eh, buf.data(), sizeof(eh));
    tally.Add(eh, DroppableIn(buf.data() + sizeof(eh), buf.data() + n, ch.base_ticks, &last_ticks));
  }
  if (!sums) {
    // No sums stand in for the events (COLABTRACE_IO=0 leaves neither): they stay.
    kept.insert(kept.end(), events.begin(), events.end());
    std::sort(kept.begin(), kept.end());
    res.event_chunks = 0;
    last_ticks = h.start_ticks;
  }
  if (res.event_chunks == 0 && unused == 0) return res;
  // The exited threads' events too: with the event chunks gone, the record counts them.
  if (res.event_chunks != 0) res.events = tally.Total();

  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? std::string(".") : path.substr(0, slash);
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  const std::string tmp = dir + "/." + name + ".compacting";
  next_step();
  unlink(tmp.c_str());  // a copy left by a compaction that was killed
  next_step();
  const int out = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (out < 0) {
    res.error = Errno("cannot create its compacted copy");
    return res;
  }
  bool ok = true;
  auto fail = [&](const char* what) {
    if (ok) res.error = Errno(what);
    ok = false;
  };
  // The kept chunks in their order, then the chunk of the trace_compacted record.
  uint64_t at = cs;
  for (uint64_t off : kept) {
    const size_t n = ReadAt(fd, buf.data(), cs, off);
    next_step();
    if (ok && !WriteAt(out, buf.data(), WithoutZeroTail(buf.data(), n), at)) fail("cannot write its compacted copy");
    at += cs;
  }
  format::TraceCompacted rec;
  rec.ts = last_ticks;
  rec.events = res.events;
  rec.event_chunks = res.event_chunks;
  rec.bytes_before = res.bytes_before;
  std::vector<uint8_t> chunk(cs, 0);
  ChunkHeader ch = {};
  ch.magic = format::kChunkMagic;
  ch.tid = 0;
  ch.base_ticks = h.start_ticks;
  ch.image = h.image_count > 0 ? h.image_count - 1 : 0;
  std::memcpy(chunk.data(), &ch, sizeof(ch));
  const size_t len = format::EncodeRecordUncommitted(rec, ch.base_ticks, chunk.data() + sizeof(ch));
  chunk[sizeof(ch)] = format::CommittedType(rec, ch.base_ticks);
  next_step();
  if (ok && !WriteAt(out, chunk.data(), sizeof(ch) + len, at)) fail("cannot write its compacted copy");
  at += cs;
  FileHeader nh = h;
  nh.next_chunk_offset = at;
  if (res.event_chunks != 0) nh.events_retired = 0;  // in the trace_compacted record now
  std::vector<uint8_t> head(sizeof(FileHeader));
  std::memcpy(head.data(), &nh, sizeof(nh));
  next_step();
  if (ok && !WriteAt(out, head.data(), head.size(), 0)) fail("cannot write its compacted copy");
  next_step();
  if (ok && ftruncate(out, static_cast<off_t>(at)) != 0) fail("cannot size its compacted copy");
  if (close(out) != 0) fail("cannot write its compacted copy");
  if (ok) {
    next_step();
    if (rename(tmp.c_str(), path.c_str()) != 0) fail("cannot rename its compacted copy over it");
  }
  if (!ok) {
    unlink(tmp.c_str());
    return res;
  }
  res.compacted = true;
  res.bytes_after = DiskBytes(path);
  return res;
}

}  // namespace colabtrace::analyzer
