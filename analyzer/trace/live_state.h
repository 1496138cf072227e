// Reading a trace's state chunk (wire.h, "state chunks") from outside the process that
// writes it: `colabtrace run --hang-timeout` reads each traced process's progress block
// every poll round and its thread notes when it decides the job hung, and the reader
// (ReadTraceFile) reads the notes of a trace whose process may still run, with pread,
// while that process goes on rewriting them through its mapping. (Defined in reader.cpp.)
//
// Inside the process, the shim's order of stores is enough: a note's fields, then its
// `call` word (release); 0 to `call` when the call returns. A pread from outside copies
// the bytes in whatever order the kernel's copy takes (arm64 moves 16 bytes at a time;
// x86-64 whole lines in practice, but nothing promises it), while the writer stores: one
// copy can hold the `call` of one note and the `since` or `object` of the next, or a
// step count with another step's tick count. So these functions copy the same bytes five
// times, one copy after another (C1..C5), and take a part only where the copies agree:
//   - a note: when its five copies agree, from C3. Every note's `since` is a tick count
//     taken at its call, never the same twice on one thread and level: C1 and C5 agreeing
//     on it means no note began from C1 to C5, and `call` set in C2 and C4 then means
//     the note stayed open in between (ending it stores 0, and only a new note sets it
//     again), so nothing was stored to it while C3 was copied. A note whose `call` is 0
//     in any copy reads as no call: at that moment there was none (`call` is below 256,
//     one byte, so a copy cannot tear it);
//   - an entry's tid and PyThreadState address: each is stored once, so copies that
//     agree hold it whole;
//   - the progress block: when its five copies agree. The step count only grows and the
//     tick counts do not repeat, so both held still from C1 to C5: C3 is what the block
//     held at one moment (the shim stores the step's ticks before it counts the step, so
//     that moment may be between the two stores).
// A part that disagrees is copied again, at most 4 times in all, then rejected whole:
// a note reads as no call, an entry as unused, the progress block as not settled (it
// changed under every copy: steps are being counted right now).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "colabtrace/format/wire.h"

namespace colabtrace::analyzer {

// Copies n bytes at offset `at` of one state chunk into dst; false when they cannot be
// read.
using StateChunkRead = std::function<bool(uint64_t at, size_t n, uint8_t* dst)>;

// Reads n bytes at offset of fd into dst (pread, again after EINTR and short reads);
// false when they are not all there.
bool PreadAll(int fd, void* dst, size_t n, uint64_t offset);

// pread of the state chunk at `chunk_offset` of the trace open at fd.
StateChunkRead PreadStateChunk(int fd, uint64_t chunk_offset);

// The progress block (at format::kProgressOffset).
struct LiveProgress {
  bool read = false;     // the bytes could be read
  bool settled = false;  // block holds what it held at one moment; else it is zero
  format::ProgressBlock block{};
};
LiveProgress ReadLiveProgress(const StateChunkRead& read);

// The chunk's format::kNotesPerChunk ThreadNotes (from format::kNotesOffset).
struct LiveNotes {
  bool read = false;  // the bytes could be read
  std::vector<format::ThreadNotes> notes;
  uint32_t rejected = 0;  // notes that changed while they were read: they read as no call
};
LiveNotes ReadLiveNotes(const StateChunkRead& read);

}  // namespace colabtrace::analyzer
