// I/O heavy-hitter chunks (format 1.6): a bounded table of the heaviest files that came
// after the I/O aggregates' file slots were full (docs/trace-format.md, "I/O heavy-hitter
// chunks"). Past kIoAggFileSlots files, a new file's calls go to its directory's slot
// (wire.h, "I/O aggregate chunks"), unless the file holds an entry of this table: then
// they go to the entry's slot instead, never to both, so the directory row holds only the
// rest and a file row plus its directory row sum every call exactly once.
//
// Space-Saving (Metwally et al., 2005), set-associative: an entry's weight is its calls
// since it entered plus its `error`; a file not in its set takes the entry of least
// weight among those no descriptor holds (FREE ones first), whose sums are first folded
// into that file's directory slot; the newcomer's `error` is the set's `floor`, the
// largest weight ever folded out of the set, which bounds the calls the newcomer may have
// had before it entered (all of which are in its directory's row).
//
// An entry's `word` holds its state, a generation and the number of holders (descriptors
// and calls in progress that use the slot): only an entry with none is folded, so no
// call adds to a slot after it changed hands. The fold adds the entry's sums to the
// directory slot one field at a time, `folded` counting the fields added, so a reader of
// the file at any instant (a SIGKILL included) takes the fields from `folded` on as still
// the directory's to add; a kill between one field's add and `folded`'s store counts that
// one field twice.
#pragma once

#include <cstddef>
#include <cstdint>

#include "colabtrace/format/wire.h"

namespace colabtrace::format {

inline constexpr uint32_t kIoHeavyChunkMagic = 0x48495443;  // "CTIH"
inline constexpr uint16_t kIoAggHeavy = 4;  // IoAggSlot::kind of a heavy-hitter entry's slot

inline constexpr uint32_t kIoHeavyWays = 16;
inline constexpr uint32_t kIoHeavySets = 64;
inline constexpr uint32_t kIoHeavyEntries = kIoHeavyWays * kIoHeavySets;  // 1,024

// IoHeavyEntry::word: state in bits 56-63, generation in 24-55, holders in 0-23.
enum IoHeavyState : uint32_t {
  kIoHeavyFree = 0,      // never held
  kIoHeavyHeld = 1,      // its slot counts its file's calls from from_ticks
  kIoHeavyFolding = 2,   // being folded into its directory slot (fields < folded done)
  kIoHeavyClearing = 3,  // folded whole; being cleared for its next file
};
inline constexpr uint64_t kIoHeavyHoldersMask = (uint64_t{1} << 24) - 1;
inline constexpr uint32_t IoHeavyStateOf(uint64_t word) { return static_cast<uint32_t>(word >> 56); }
inline constexpr uint64_t IoHeavyWord(uint32_t state, uint64_t gen, uint64_t holders) {
  return uint64_t{state} << 56 | (gen & 0xffffffffu) << 24 | holders;
}

// The fields of a slot a fold adds to the directory slot, in order (the progress that
// IoHeavyEntry::folded counts): the kIoAggCounts counts, then these four sums. The size,
// the furthest offsets and the flags are maxima and bits, merged after them (idempotent).
enum IoHeavyFoldField : uint32_t {
  kIoHeavyFoldOpenNs = kIoAggCounts,
  kIoHeavyFoldReadNs,
  kIoHeavyFoldStatNs,
  kIoHeavyFoldBytesRead,
  kIoHeavyFoldFields,
};

struct IoHeavyEntry {  // 256 bytes
  uint64_t word;        // IoHeavyWord(state, gen, holders)
  uint64_t from_ticks;  // when its file entered (state held)
  uint64_t error;       // calls its file may have had before it entered (in its directory's row)
  uint32_t dir_slot;    // 1 + the number of its directory's IoAggSlot (the fold's target)
  uint32_t folded;      // while folding: fields (IoHeavyFoldField order) already added
  uint64_t set_floor;   // the set's first entry only: the largest weight folded out of the set
  uint32_t high[kIoAggCounts];  // count k = slot.counts[k] + 65,536 * high[k]
  IoAggSlot slot;       // kind kIoAggHeavy; hash, path, mount, flags, counts, sums of its file
};
static_assert(sizeof(IoHeavyEntry) == 256);
static_assert(offsetof(IoHeavyEntry, slot) == 128);

// The first heavy-hitter chunk's facts, at kIoAggInfoOffset.
struct IoHeavyInfo {
  uint32_t entries;    // kIoHeavyEntries
  uint32_t ways;       // kIoHeavyWays
  uint64_t entered;    // files that took an entry (atomic)
  uint64_t folds;      // entries folded into their directory slot for a newcomer (atomic)
  uint64_t missed;     // lookups that found every entry of their set held: the file's calls
                       // went to its directory's row, unseen by the table's weights
};

inline constexpr uint32_t kIoHeavyEntriesOffset = 256;
inline constexpr uint32_t kIoHeavyPerChunk = (kChunkSize - kIoHeavyEntriesOffset) / sizeof(IoHeavyEntry);
inline constexpr uint32_t kIoHeavyChunks = (kIoHeavyEntries + kIoHeavyPerChunk - 1) / kIoHeavyPerChunk;
static_assert(kIoAggInfoOffset + sizeof(IoHeavyInfo) <= kIoHeavyEntriesOffset);

// The set of a file's path hash.
inline constexpr uint32_t IoHeavySetOf(uint64_t hash) { return static_cast<uint32_t>((hash >> 40) % kIoHeavySets); }

// An entry's weight (Space-Saving's count): its calls (opens, failed opens, scans, copies,
// reads and stats: counts that no other count includes) plus its error. counts[k] is the
// widened count k.
inline uint64_t IoHeavyWeight(const uint64_t* counts, uint64_t error) {
  uint64_t w = error;
  for (uint32_t k = 0; k < kIoAggCounts; ++k) {
    if (k == kIoAggStatErrors || k == kIoAggPathStats || k == kIoAggPasses || k == kIoAggSmallReads ||
        k == kIoAggStdioReads) {
      continue;  // parts of other counts
    }
    w += counts[k];
  }
  return w;
}

}  // namespace colabtrace::format
