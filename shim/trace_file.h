// TraceFile: the crash-safe, memory-mapped trace of one process.
//
// The file is mapped MAP_SHARED, one extent at a time. Disk space is reserved (zeros
// written for the first chunk, fallocate after; both extend the file) before any chunk
// in it is handed out, so a full disk or a file-size limit becomes an error code here
// and never a SIGBUS in the host. Pages
// written through the mapping belong to the kernel's page cache the moment they are
// stored, so a SIGKILL loses nothing that was committed.
//
// Threads take whole chunks with one atomic add on the header's high-water mark; the
// only lock is a spin lock taken when a new extent must be mapped (once per extent).
// Everything here is async-signal-safe except where a comment says otherwise.
#pragma once

#include <cstdint>

#include "colabtrace/format/wire.h"

namespace colabtrace::shim {

class TraceFile {
 public:
  // Creates path, mode 0600, never replacing or following anything at that name. The file becomes visible under that name only once its header
  // is written: it is made with O_TMPFILE and linked in, or, where the filesystem has
  // no O_TMPFILE, written under a hidden temporary name and renamed without replacing.
  // When the disk or RLIMIT_FSIZE has less than one extent free, a smaller first
  // reservation (down to one chunk after the header) is used; tracing then stops,
  // marked truncated, when it is full. Returns false (and leaves the object closed)
  // when no trace could be made; *err says why.
  bool Create(const char* path, uint32_t pid, uint64_t features, uint64_t ticks_per_sec,
              uint64_t start_ticks, uint64_t mono_ns, uint64_t realtime_ns);

  // Why the last Create failed (an errno value; EEXIST: the name is taken).
  int create_error() const { return create_error_; }

  // Takes over the trace that the previous image of this process handed over across
  // exec (PrepareExecHandoff), if there is one. Returns false when there is none.
  bool AdoptInherited(uint32_t pid);

  // Closes a handed-over trace descriptor without adopting it (a shim that will not
  // trace this image, e.g. COLABTRACE_DISABLE=1 in the new environment).
  static void CloseInherited(uint32_t pid);

  // The window (wire.h, "event chunks") and the hard cap, from the configuration: set
  // before Create or AdoptInherited. window_s is converted with the tick rate at Create.
  void SetLimits(uint64_t window_bytes, uint64_t window_s, uint64_t max_bytes);
  // Converts the window's time to ticks at this rate (RefineTickRate's estimate) and
  // writes the window and the cap into the header.
  void SetTickRate(uint64_t ticks_per_sec) {
    if (header_ != nullptr) StoreLimits(header_, ticks_per_sec);
  }

  // Returns a zeroed chunk for records that are never dropped, or nullptr once tracing
  // has stopped. When may_block is false (signal handlers) it fails instead of waiting
  // for another thread's extension. At the hard cap it takes over the oldest event chunk
  // left by its thread (then *own_map is set: the chunk has a mapping of its own, which
  // ReleaseChunk removes); with none left, tracing stops (truncated, EFBIG).
  uint8_t* AllocChunk(bool may_block, bool* own_map = nullptr);

  // Returns a zeroed chunk for droppable records: a new one while the window has room,
  // else the oldest event chunk its thread has left, rewritten (*own_map set). nullptr
  // once tracing has stopped, or when the cap leaves no room and no event chunk is free
  // (the record is counted in the header's events_lost). now: the record's ticks.
  uint8_t* AllocEventChunk(uint64_t now, bool* own_map, uint64_t* offset);

  // Called when a thread moves on from a chunk it filled. Once every chunk of an extent
  // is finished, the extent is unmapped so a long trace does not grow the host's RSS.
  void ReleaseChunk(uint8_t* chunk, bool own_map = false);
  // Says that `chunk` (from AllocChunk) is never released (an I/O aggregate chunk): its
  // extent stays mapped, so each chunk finished in it gives up its pages (MADV_DONTNEED)
  // rather than stay resident until an unmap that never comes.
  void KeepsMapped(const uint8_t* chunk);
  // The same for an event chunk (at file offset `offset`), whose last record has
  // end_ticks: it joins the queue of chunks the window may rewrite.
  void ReleaseEventChunk(uint8_t* chunk, bool own_map, uint64_t offset, uint64_t end_ticks);
  // The same for the last event chunk of a thread that exited, which wrote `events`
  // droppable records in all: they are counted in the header's events_retired (the chunk's
  // `retired` mark stored first, so a kill in between leaves them counted once), then the
  // chunk joins the queue like any other. Once per thread. False when there is no window
  // (nothing is ever rewritten): the chunk then stays, and counts, as its thread's latest.
  bool RetireEventChunk(uint8_t* chunk, bool own_map, uint64_t offset, uint64_t end_ticks, uint64_t events);
  // The pool of record chunks that threads left partly used (at their exit): the next
  // thread that writes a record of no thread (a String or Stack, writer.h's kThreadless)
  // without a record chunk of its own continues one instead of taking a new chunk. Lock-
  // free (a slot is claimed by a compare-and-swap on its state) and async-signal-safe.
  struct LeftRecordChunk {
    uint8_t* chunk = nullptr;
    uint32_t used = 0;     // bytes written, the header included: the next record goes there
    uint64_t last_ts = 0;  // its last record's tick (the next one's time base)
    bool own_map = false;
  };
  // Puts `left` into the pool; false when the pool is full or the chunk could not be given
  // a mapping of its own (then the caller releases it). A chunk outside the first extent is
  // given one (its extent's view released), so that a pooled chunk never keeps an extent
  // mapped.
  bool PoolRecordChunk(const LeftRecordChunk& left);
  // Takes a chunk out of the pool with more than `need` bytes free; false when there is
  // none. A pooled chunk with less room is released (finished) on the way.
  bool TakePooledRecordChunk(size_t need, LeftRecordChunk* out);

  // The next event chunk's order number (EventChunkHeader::order).
  uint64_t NextEventOrder() { return __atomic_add_fetch(&event_order_, 1, __ATOMIC_RELAXED); }

  // Stops tracing: no new chunks; the header says why.
  void MarkTruncated(int err);

  // Ends the trace cleanly: refuses new chunks, trims unused reserved space and sets
  // kFlagEnded. Threads still writing into their chunks stay safe (nothing is unmapped).
  void Close();

  // Hands the trace to the next image across exec: a descriptor without FD_CLOEXEC at
  // or just above HandoverFloor(), and kFlagExecPending in the header. Undo reverses
  // that when the exec failed.
  void PrepareExecHandoff();
  void UndoExecHandoff();

  // Forgets the file without touching it: used in a fork child, which inherited the
  // parent's mapping. Unmaps the parent's range.
  void AbandonInChild();

  bool is_open() const { return header_ != nullptr; }
  format::FileHeader* header() const { return header_; }
  uint32_t image() const { return image_; }
  // The trace's absolute path (as it was when created or adopted).
  const char* path() const { return path_; }
  // The descriptor the shim holds for the trace: only during an exec hand-over, else -1.
  int fd() const { return handoff_fd_; }

  // The lowest descriptor number used for an exec hand-over: 16 below the soft
  // RLIMIT_NOFILE, capped at 1008 (so the kernel's descriptor table never grows past
  // 1024 entries for us).
  static int HandoverFloor();

 private:
  bool MapTo(uint64_t end, bool may_block, bool speculative);
  // Claims a new chunk at the high-water mark (no window logic); nullptr when stopped or
  // past `limit` (then nothing is claimed).
  uint8_t* GrowChunk(bool may_block, uint64_t limit, uint64_t* offset);
  // Takes the oldest event chunk off the queue and maps it on its own, cleared (magic
  // first). nullptr when the queue is empty or busy (may_block false) or mapping fails.
  uint8_t* TakeOldestEventChunk(bool may_block, uint64_t* offset);
  // An event chunk a thread left, on the queue: where it is and its last record's tick.
  struct LeftChunk {
    uint64_t offset = 0, end_ticks = 0;
  };
  // With the queue locked: takes the oldest left chunk off the queue; false when empty.
  static bool PopOldestLocked(LeftChunk* out);
  // The rest of TakeOldestEventChunk, with the queue unlocked: maps the chunk on its own
  // and clears it (magic first), after raising the header's dropped_until_ticks.
  uint8_t* RewriteLeftChunk(const LeftChunk& left, uint64_t* offset);
  void SetCapped();
  // Maps the chunk at `chunk` (in an extent) on its own and releases the extent's view of
  // it; the new address, or nullptr (the chunk then stays as it was).
  uint8_t* MapChunkAlone(uint8_t* chunk);
  bool InFirstExtent(const uint8_t* chunk) const;
  void StoreLimits(format::FileHeader* h, uint64_t ticks_per_sec);
  // Reserves disk space (fallocate) so that [0, end) is backed; marks the trace
  // truncated when the disk is full.
  bool ReserveTo(uint64_t end, bool may_block);
  // Opens the trace file again by path for an extension, checking it is still the
  // same file; returns the descriptor (close-on-exec) or -errno.
  int Reopen();
  // Reserves and maps the first extent of a new file (smaller when the disk or the
  // size limit has less room) and writes the header into it.
  bool WriteHeader(int fd, uint32_t pid, uint64_t features, uint64_t ticks_per_sec,
                   uint64_t start_ticks, uint64_t mono_ns, uint64_t realtime_ns);
  // Maps an existing trace file of `size` bytes (all of them reserved) for an exec'd
  // image: its first extent, and the extents above the previous image's chunks.
  bool MapExisting(int fd, uint64_t size);
  void Reset();

  // No descriptor is held while the program runs: the mapping keeps the file, and
  // extensions reopen it by path. Only an exec hand-over keeps one (handoff_fd_), and
  // an image that cannot reopen the file it adopted (kept_fd_).
  char path_[1200] = {};
  uint64_t dev_ = 0, ino_ = 0;  // identity of the file at path_
  int handoff_fd_ = -1;
  // The handed-over descriptor, kept (close-on-exec, at its high number) when this image
  // may not open the file by path: a previous image created it as another user and then
  // dropped privileges before exec (gosu, su-exec, setpriv, `sudo -u` in a container's
  // entrypoint). Reopen then duplicates it. -1 otherwise.
  int kept_fd_ = -1;
  uint64_t first_extent_bytes_ = 0;  // < kExtentBytes when the disk had less free
  int first_extent_err_ = 0;         // why the first extent is short
  int create_error_ = 0;
  uint64_t mapped_end_ = 0;    // bytes of the file sized and mapped (atomic)
  uint64_t reserved_end_ = 0;  // bytes of the file reserved on disk, <= mapped_end_ (atomic)
  int extend_lock_ = 0;      // spin lock for MapTo (atomic)
  uint32_t image_ = 0;
  format::FileHeader* header_ = nullptr;
  // The window: bytes of event chunks kept, how far back (ticks), the hard cap, and the
  // high-water mark past which event chunks stop growing the file (room set aside for the
  // records never dropped). 0: no window (a trace before SetLimits).
  uint64_t window_bytes_ = 0, window_s_ = 0, window_ticks_ = 0, max_bytes_ = 0, events_limit_ = 0;
  uint64_t event_chunks_ = 0;  // event chunks this image took from the high-water mark
  uint64_t event_order_ = 0;   // event chunks taken, new or rewritten (atomic)
};

}  // namespace colabtrace::shim
