// TraceFile: the crash-safe, memory-mapped trace of one process.
//
// The file is mapped MAP_SHARED into a reserved address range, one extent at a time.
// Each extent is reserved on disk with fallocate() *before* it is mapped, so a full disk
// or a file-size limit becomes an error code here and never a SIGBUS in the host. Pages
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
  // Creates path with O_CREAT|O_EXCL|O_NOFOLLOW and mode 0600, writes the header and
  // maps the first extent. Returns false (and leaves the object closed) on failure.
  bool Create(const char* path, uint32_t pid, uint64_t features, uint64_t ticks_per_sec,
              uint64_t start_ticks, uint64_t mono_ns, uint64_t realtime_ns);

  // Takes over a trace that the previous exec image of this process left open on fd
  // with kFlagExecPending set. Returns false if fd is not such a trace.
  bool Adopt(int fd, uint32_t pid);

  // Scans this process's open file descriptors for a trace to adopt after exec.
  // Returns the descriptor, or -1.
  static int FindInheritedTrace(uint32_t pid);

  // Returns a zeroed chunk, already stamped with a ChunkHeader except its magic (see
  // CommitChunkHeader), or nullptr once tracing has stopped. When may_block is false
  // (signal handlers) it fails instead of waiting for another thread's extension.
  uint8_t* AllocChunk(bool may_block);

  // Called when a thread moves on from a chunk it filled. Once every chunk of an extent
  // is finished, the extent is unmapped so a long trace does not grow the host's RSS.
  void ReleaseChunk(uint8_t* chunk);

  // Stops tracing: no new chunks; the header says why.
  void MarkTruncated(int err);

  // Ends the trace cleanly: refuses new chunks, trims unused reserved space and sets
  // kFlagEnded. Threads still writing into their chunks stay safe (nothing is unmapped).
  void Close();

  // Prepares the file to be inherited across exec (clears FD_CLOEXEC, sets
  // kFlagExecPending); Undo reverses that when the exec failed.
  void PrepareExecHandoff();
  void UndoExecHandoff();

  // Forgets the file without touching it: used in a fork child, which inherited the
  // parent's mapping and descriptor. Unmaps the parent's range and closes the fd copy.
  void AbandonInChild();

  bool is_open() const { return header_ != nullptr; }
  format::FileHeader* header() const { return header_; }
  int fd() const { return fd_; }
  uint32_t image() const { return image_; }

 private:
  bool MapTo(uint64_t end, bool may_block);

  int fd_ = -1;
  uint64_t mapped_end_ = 0;  // bytes of the file mapped and reserved on disk (atomic)
  int extend_lock_ = 0;      // spin lock for MapTo (atomic)
  uint32_t image_ = 0;
  format::FileHeader* header_ = nullptr;
};

}  // namespace colabtrace::shim
