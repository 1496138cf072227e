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
inline constexpr uint16_t kVersionMinor = 6;  // 1: RingSlot.py_stack; 2: PythonLayoutBlock.code_tag_bits;
                                              // 3: I/O aggregate chunks (CTIA), event
                                              // chunks (CTEV) and the window fields, the
                                              // NCCL chunk (CTNC); 4: 128-byte I/O
                                              // aggregate slots (CTIS), step aggregate
                                              // chunks (CTSA, step_agg.h), Step and
                                              // BatchWait droppable, thinned-sample chunks
                                              // (CTTS, sample_tiers.h), periodic samples in
                                              // event chunks, traces compacted by `colabtrace
                                              // run` (trace_compacted, job_disk); 5:
                                              // `colabtrace run`'s own samples in event
                                              // chunks, thinned into CTRW chunks; exited
                                              // threads' event chunks retired
                                              // (FileHeader::events_retired,
                                              // EventChunkHeader::retired, ChunkHeader::thread);
                                              // collective chunks (CTCG), Collective droppable;
                                              // GPU live-set chunks (CTGL, gpu_live.h), and
                                              // successful GpuAlloc/GpuFree in event chunks;
                                              // 6: I/O heavy-hitter chunks (CTIH, io_heavy.h),
                                              // the CTGL info chunk's GpuLiveHistory
inline constexpr uint32_t kHeaderSize = 256;
inline constexpr uint32_t kChunkSize = 32 * 1024;
inline constexpr uint32_t kChunkMagic = 0x4b435443;  // "CTCK" little-endian

// FileHeader::flags bits. The shim updates them in place with atomic operations.
enum HeaderFlag : uint32_t {
  kFlagTruncated = 1u << 0,    // tracing stopped early (disk full, size limit, cap)
  kFlagEnded = 1u << 1,        // the shim wrote its end record and closed cleanly
  kFlagExecPending = 1u << 2,  // an exec is in flight; the next image adopts this file
  kFlagClosing = 1u << 3,      // no new chunks may be allocated
  kFlagCapped = 1u << 4,       // 1.3: the hard cap (COLABTRACE_MAX_MB) cut the window short
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
  // 1.3: the window (event chunks, below). Zero in older traces.
  uint64_t window_bytes;          // event chunks the window keeps, in bytes
  uint64_t window_ticks;          // how far back the window keeps them, in ticks
  uint64_t max_bytes;             // the hard cap of the file (COLABTRACE_MAX_MB)
  uint64_t dropped_until_ticks;   // the latest record of any event chunk given up (atomic max)
  uint64_t events_lost;           // droppable records never written: no room under the cap
  uint64_t recycled_chunks;       // event chunks rewritten since the trace began
  uint8_t reserved[88];
  // 1.5: the droppable records of threads that exited, counted here when each one's last
  // event chunk was put up for rewriting (EventChunkHeader::retired). Zero before 1.5.
  uint64_t events_retired;
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
  uint32_t thread;      // 1.5: the writing thread's number in its image's trace, from 1 (a
                        // reused tid is another thread); 0 before 1.5 and in shared chunks
};
static_assert(sizeof(ChunkHeader) == 32);

enum ChunkFlag : uint32_t {
  kChunkFromSignalHandler = 1u << 0,  // written by a fatal-signal handler
  kChunkRecycled = 1u << 1,           // 1.3, event chunks: written over an older event chunk
};

// ---- event chunks (1.3): the window ------------------------------------------------------
//
// The records that may give way (format::IsDroppable, records.h: today the file I/O events)
// go into event chunks; every other record into record chunks (CTCK), which are never
// rewritten. Once the window is full (window_bytes of event chunks, or the oldest one left
// by its thread ends before now - window_ticks) the shim rewrites its oldest event chunk
// instead of growing the file. An event chunk is a record chunk with its own magic and a
// longer header (records start at sizeof(EventChunkHeader)); readers that do not know the
// magic skip it as unused. Rewriting: the magic is cleared first, the body zeroed, the
// header written, the magic stored last; a reader never sees a chunk half rewritten.
inline constexpr uint32_t kEventChunkMagic = 0x56455443;  // "CTEV"
struct EventChunkHeader {
  ChunkHeader chunk;       // magic kEventChunkMagic; seq from the thread's one chunk counter
  uint64_t events_before;  // droppable records this thread wrote in its earlier event chunks
  uint64_t order;          // the file's event-chunk count when this one was taken (1-based)
  uint64_t end_ticks;      // the last record's ticks, stored when its thread moves on (0: not yet)
  // 1.5: 0 while its thread lives. When the thread exited and this, its last event chunk,
  // was put up for rewriting: 1 + the FileHeader's events_retired once this chunk's
  // events (events_before + its records) were added there, stored before that header word.
  // So the header counts them iff retired - 1 <= events_retired (else a kill came between).
  uint64_t retired;
};
static_assert(sizeof(EventChunkHeader) == 64);

// ---- state chunks: what each thread is doing now ---------------------------------------
//
// Records say what happened; a state chunk says what is happening. Its fixed-layout
// fields are rewritten in place through the mapping (so a SIGKILL leaves their last
// values in the file): each thread's call note (the call it is blocked in, since when),
// the process's progress (its last step), the synchronisation epochs of its GPU streams,
// and, in ring chunks, each launching thread's last kernel launches. A state chunk has
// the ChunkHeader of a record chunk with another magic (tid 0, seq the chunk's index
// among the image's state chunks); readers that do not know the magic skip it as an
// unused chunk.
inline constexpr uint32_t kStateChunkMagic = 0x54535443;  // "CTST"
inline constexpr uint32_t kRingChunkMagic = 0x47525443;   // "CTRG"

// One call that may block. The writer stores since, object..where, then call last (release
// order); a return stores 0 to call. So a reader that sees call != 0 sees the fields of
// that call, and a note half written when the process died reads as no call.
struct CallNote {
  uint32_t call;    // InFlightCall (records.h); 0: none
  uint32_t api;     // the entry point (IoApi, GpuApi, WaitApi, LibApi by call)
  uint64_t since;   // ticks when the call began
  uint64_t object;  // open/stat/dlopen: the path's String id; read: the fd; GPU sync: the
                    // stream; wait: the pid argument (as int64); collective: its seq
  uint64_t epoch;   // GPU sync: the epoch it covers (launches below it); collective: count
  uint64_t synced;  // GPU sync: the stream's (or device's) completed epoch at the call;
                    // collective: its process group's id
  uint64_t where;   // batch wait, collective: the asking line's String id
  uint32_t flags;   // kNoteDeviceWide
  uint32_t reserved0;
  uint64_t detail;  // collective: its dtype's String id; 0 otherwise (reserved before)
};
static_assert(sizeof(CallNote) == 64);
enum CallNoteFlag : uint32_t { kNoteDeviceWide = 1u << 0 };

// One thread's notes: the innermost hooked call, and the Python-level wait around it.
struct ThreadNotes {
  uint32_t tid;         // 0: unused; stored last when the thread claims it
  uint32_t reserved0;
  uint64_t python_thread;  // the thread's PyThreadState address when known (for an
                           // outside reader of its Python stack), else 0
  uint8_t reserved1[48];
  CallNote call;  // level 0
  CallNote wait;  // level 1
};
static_assert(sizeof(ThreadNotes) == 192);

// The process's progress, for `colabtrace run --hang-timeout`, which reads it live.
struct ProgressBlock {
  uint64_t steps;            // step records written (any source)
  uint64_t last_step_ticks;  // the last one's tick count (0: none yet)
};
static_assert(sizeof(ProgressBlock) == 16);

// A stream's last successful synchronisation: launches on it below epoch completed.
struct SyncedStream {
  uint64_t stream;
  uint32_t epoch;  // 0: entry unused
  uint32_t reserved;
};
inline constexpr size_t kSyncedStreams = 64;

// Where CPython keeps what an outside reader of a thread's Python stack needs (offsets
// into the interpreter's private structures), as the shim found them (0: no Python).
struct PythonLayoutBlock {
  uint32_t version;  // (major << 8) | minor
  uint32_t frame_in_tstate;
  uint32_t tstate_cframe, cframe_current_frame, frame_code, frame_previous,
      frame_prev_instr, frame_owner, code_filename, code_name, code_linetable,
      code_firstlineno, code_instructions, unicode_length, unicode_state, ascii_data,
      compact_data;
  int32_t owner_entry;     // frames whose owner is at least this are the interpreter's own
                           // (entry and base frames), skipped; -1: none (3.11). Before
                           // 1.2 its name was owner_cstack, the one value 3.12 and 3.13 have.
  uint64_t code_type;      // &PyCode_Type in the process
  uint64_t code_tag_bits;  // 1.2: tag bits to clear in a frame's code reference (3.14+);
                           // 0 in older traces, whose CPython had none
};

// The state chunk: ChunkHeader, then these blocks at fixed offsets, then ThreadNotes
// entries from kNotesOffset to the chunk's end. Only the first state chunk of an image
// (seq 0) has meaningful progress, synced and python blocks; later ones (more threads
// than fit) only notes.
inline constexpr uint32_t kProgressOffset = 32;
inline constexpr uint32_t kSyncedDeviceOffset = 48;  // u32: the device-wide completed epoch
inline constexpr uint32_t kPythonLayoutOffset = 64;
inline constexpr uint32_t kSyncedOffset = 256;       // SyncedStream[kSyncedStreams]
inline constexpr uint32_t kNotesOffset = 2048;
inline constexpr uint32_t kNotesPerChunk = (kChunkSize - kNotesOffset) / sizeof(ThreadNotes);
static_assert(sizeof(PythonLayoutBlock) <= kSyncedOffset - kPythonLayoutOffset);
static_assert(kSyncedOffset + kSyncedStreams * sizeof(SyncedStream) <= kNotesOffset);

// One kernel launch in a thread's launch ring.
struct alignas(64) RingSlot {
  uint32_t seq;       // 0 while being written; else the owner's launch count, 1-based
  uint32_t epoch;     // the synchronisation epoch when the launch returned
  uint16_t api;       // GpuApi of the launch entry point
  uint16_t block[3];  // block dimensions (at most 1024 each)
  uint64_t func;      // host stub, cudaKernel_t or CUfunction, as the API takes it
  uint64_t stream;
  uint32_t grid[3];
  uint32_t reserved;
  uint64_t py_stack;  // the launch's Python stack: a String id (0: none). Format 1.0 kept
                      // a code object's address here, which readers ignore
};
static_assert(sizeof(RingSlot) == 64);
inline constexpr uint32_t kRingSlots = 32;  // per launching thread (a power of two)

// A launching thread's ring: its last kRingSlots launches, slot (n % kRingSlots) the
// n-th. A ring chunk holds kRingsPerChunk of them after its ChunkHeader.
struct alignas(64) LaunchRing {
  uint32_t next;   // launches written (only the owner writes)
  int32_t owner;   // the owning thread's tid; 0: free
  RingSlot slots[kRingSlots];
};
static_assert(sizeof(LaunchRing) == 64 + kRingSlots * 64);
inline constexpr uint32_t kRingsOffset = 64;
inline constexpr uint32_t kRingsPerChunk = (kChunkSize - kRingsOffset) / sizeof(LaunchRing);

// ---- I/O aggregate chunks: exact per-file sums for the whole run ------------------------
//
// The file I/O module keeps one IoAggSlot per file the process touched (opened, stat'ed,
// read...), rewritten in place through the mapping with relaxed atomic adds, so a SIGKILL
// leaves the sums of every call that had returned. The sums equal those of the io_*
// records (the same calls, the same values; durations in ticks), so a report can come
// from them alone once old events are gone. Past kIoAggFileSlots files, a file not seen
// before is summed into the slot of its directory (kind kIoAggDirectory) instead: exact
// per directory. An aggregate chunk has a ChunkHeader with magic CTIS (tid 0, seq its index
// among the image's aggregate chunks, image the exec image); the first one (seq 0) holds an
// IoAggInfo at kIoAggInfoOffset; every one holds kIoAggSlotsPerChunk slots from
// kIoAggSlotsOffset. A slot is claimed by storing its hash, path and mount, then its kind
// last (release): kind 0 is an unused slot.
//
// Counts are 16-bit in the slot; the add that wraps one (the thread whose fetch_add
// returned 0xffff) adds 1 to that count's word in the slot's high slot (kind
// kIoAggHigh, claimed then, linked from IoAggSlot::high), so a count is low + 65,536 *
// high, exact to 2^48 calls. Format 1.3's chunks (magic CTIA) hold IoAggSums, 256 bytes
// with 64-bit counts, 127 a chunk; a reader widens both into IoAggSums.
inline constexpr uint32_t kIoAggChunkMagic = 0x53495443;    // "CTIS" (1.4)
inline constexpr uint32_t kIoAggChunkMagic13 = 0x41495443;  // "CTIA" (1.3: IoAggSums slots)

enum IoAggKind : uint16_t {
  kIoAggUnused = 0,
  kIoAggFile = 1,
  kIoAggDirectory = 2,
  kIoAggHigh = 3,  // the high words of another slot's counts (IoAggHighSlot)
};
enum IoAggFlag : uint16_t {
  kIoAggIsDirectory = 1u << 0,  // opened (O_DIRECTORY), stat'ed or scanned as a directory
  kIoAggOutput = 1u << 1,       // opened (or tried) for writing or creation
};

inline constexpr int kIoAggSizeBins = 10;  // Darshan's bins (analyzer/io/file_stats.h)

// A slot's counts, by index (IoAggSlot::counts, IoAggHighSlot::high). The size bins are
// last: kIoAggReadSize + IoAggSizeBin(n).
enum IoAggCount : uint32_t {
  kIoAggOpens,
  kIoAggOpenErrors,
  kIoAggDirScans,     // opendir/scandir calls on the path (successful or not)
  kIoAggDataCopies,   // copy_file_range/sendfile calls out of the file that moved bytes
  kIoAggReadErrors,
  kIoAggZeroReads,
  kIoAggStats,
  kIoAggStatErrors,
  kIoAggPathStats,
  kIoAggPasses,       // descriptors through which at least one byte was read
  kIoAggSmallReads,   // system-call reads (not stdio) that returned 1..4096 bytes
  kIoAggStdioReads,   // fread/fgets/getline calls that returned bytes
  kIoAggReadSize,     // reads that returned > 0 bytes, by size bin (kIoAggSizeBins)
  kIoAggCounts = kIoAggReadSize + kIoAggSizeBins,
};

struct IoAggSlot {  // 128 bytes
  uint64_t hash;    // of the path's bytes (or the directory's, for a directory slot)
  uint64_t path;    // String id of the path (the first one interned for it)
  uint16_t kind;    // IoAggKind, stored last when claimed
  uint16_t flags;   // IoAggFlag bits (atomic or)
  uint32_t mount;   // Mount record id from the first open that knew it (0: unknown)
  uint32_t high;    // 1 + the slot number of its IoAggHighSlot; 0: none yet
  // Counts, low 16 bits (IoAggCount). A file's reads are zero reads plus the size bins.
  uint16_t counts[kIoAggCounts];
  // Sums (durations in ticks, as the records' dur fields).
  uint64_t open_ns, read_ns, stat_ns;  // named as the analyzer's fields
  uint64_t bytes_read;
  uint64_t size;     // 1 + the largest st_size a stat or open measured of it as a regular
                     // file; 0: none
  uint64_t eof_at;   // the largest offset a 0-byte read was made at (known offsets)
  uint64_t max_end;  // the largest offset + bytes a read reached (known offsets)
};
static_assert(sizeof(IoAggSlot) == 128);

// The high words of a slot's counts: kind kIoAggHigh, owner the slot's number.
struct IoAggHighSlot {
  uint64_t zero;
  uint64_t owner;  // the number of the slot whose counts these are
  uint16_t kind;   // kIoAggHigh, stored last when claimed
  uint16_t flags;
  uint32_t reserved;
  uint32_t high[kIoAggCounts];  // count k = counts[k] + 65,536 * high[k]
  uint8_t pad[128 - 24 - 4 * kIoAggCounts];
};
static_assert(sizeof(IoAggHighSlot) == sizeof(IoAggSlot));
static_assert(offsetof(IoAggHighSlot, kind) == offsetof(IoAggSlot, kind));

// A file's sums with 64-bit counts: format 1.3's slot (CTIA chunks, 256 bytes, same
// field order), and what the analyzer's reader widens a 1.4 slot into.
struct IoAggSums {
  uint64_t hash;
  uint64_t path;
  uint32_t kind;
  uint32_t flags;
  uint32_t mount;
  uint32_t dir_scans;
  uint64_t opens, open_errors, open_ns;
  uint64_t data_copies;
  // (A file's reads are zero_reads + the sum of read_sizes: no count of its own.)
  uint64_t read_errors, bytes_read, read_ns, zero_reads;
  uint64_t stats, stat_errors, stat_ns, path_stats;
  uint64_t size, eof_at, max_end;
  uint64_t passes;
  uint64_t small_reads;
  uint64_t stdio_reads;
  uint64_t read_sizes[kIoAggSizeBins];
};
static_assert(sizeof(IoAggSums) == 256);

// The first aggregate chunk's table facts.
struct IoAggInfo {
  uint32_t file_slots;       // how many file slots the shim keeps (kIoAggFileSlots)
  uint32_t dir_slots;        // and directory slots
  uint64_t files;            // file slots claimed (atomic)
  uint64_t directories;      // directory slots claimed (atomic)
  uint64_t files_full_ticks;  // when the first file found the file slots full: from then
                              // on new files are summed per directory (0: never)
  uint64_t unplaced;         // opens, stats and scans that found no slot (the directory
                             // slots full too): their calls are summed nowhere
  // Since 1.4 (0 in 1.3's CTIA chunks):
  uint64_t high_slots;       // high slots claimed (atomic)
  uint64_t carries_lost;     // wraps of a 16-bit count that found no high slot (no chunk
                             // to be had): each leaves its count 65,536 short
};

inline constexpr uint32_t kIoAggInfoOffset = 32;
inline constexpr uint32_t kIoAggSlotsOffset = 256;
inline constexpr uint32_t kIoAggSlotsPerChunk = (kChunkSize - kIoAggSlotsOffset) / sizeof(IoAggSlot);
inline constexpr uint32_t kIoAggSlotsPerChunk13 = (kChunkSize - kIoAggSlotsOffset) / sizeof(IoAggSums);
inline constexpr uint32_t kIoAggFileSlots = 65536;
inline constexpr uint32_t kIoAggDirSlots = 16384;
// Room for a high slot for every file and directory slot (claimed only on a wrap).
inline constexpr uint32_t kIoAggHighSlots = kIoAggFileSlots + kIoAggDirSlots;
static_assert(kIoAggInfoOffset + sizeof(IoAggInfo) <= kIoAggSlotsOffset);

// Darshan's size bin of a read of n bytes (the analyzer's SizeBin).
inline constexpr int IoAggSizeBin(uint64_t n) {
  return n <= 100 ? 0 : n <= 1024 ? 1 : n <= 10240 ? 2 : n <= 102400 ? 3 : n <= 1048576 ? 4
       : n <= 4194304 ? 5 : n <= 10485760 ? 6 : n <= 104857600 ? 7 : n <= 1073741824 ? 8 : 9;
}

// ---- the NCCL chunk: communicators and the last NCCL calls (shim/nccl) ------------------
//
// One chunk per exec image, taken at its first NCCL communicator: a table of the process's
// communicators and a ring of its last kNcclSlots NCCL calls (collectives and send/recv, of
// every thread), rewritten in place like a launch ring, so a SIGKILL leaves them in the file.
// The reader makes nccl_comm_state and nccl_call records of them (records.h).
inline constexpr uint32_t kNcclChunkMagic = 0x434e5443;  // "CTNC"

// A communicator. The shim fills every field, then stores handle last (release); a reader
// takes entries whose handle is set. colls and p2p are rewritten at each call.
struct NcclCommEntry {
  uint64_t handle;  // the ncclComm_t; 0: unused
  uint64_t comm;    // its id (NcclComm.comm)
  uint64_t parent;  // a split's parent id, else 0
  uint64_t colls;   // collectives entered on it: the last seq
  uint64_t p2p;     // sends and receives entered on it
  int32_t nranks, rank;
  uint32_t state;   // NcclCommStateCode
  uint32_t splits;  // splits made from it (NCCL's childCount)
  uint64_t async_noted;  // 1 once its asynchronous error was recorded
};
static_assert(sizeof(NcclCommEntry) == 64);

// One call. n is 0 while the slot is being written (stored first, with a release fence
// after it), then the call's number in the process, stored last.
struct NcclSlot {
  uint32_t n;
  uint8_t op;     // CollectiveOp code
  uint8_t dtype;  // ncclDataType_t
  uint8_t redop;  // ncclRedOp_t; 255: none or custom
  uint8_t group;  // ncclGroupStart depth at the call (saturated at 255)
  uint64_t comm;
  uint64_t seq;
  uint64_t count;
  uint64_t stream;
  uint64_t ticks;  // when it was called
  int32_t peer;    // send/recv peer, or a rooted collective's root; -1 none
  int32_t rc;      // ncclResult_t
  uint64_t py_stack;
};
static_assert(sizeof(NcclSlot) == 64);

inline constexpr uint32_t kNcclCountsOffset = 32;  // u32 calls written (slot n % kNcclSlots), u32 comms used
inline constexpr uint32_t kNcclCommsOffset = 64;
inline constexpr uint32_t kNcclComms = 63;         // communicators kept per image
inline constexpr uint32_t kNcclSlotsOffset = kNcclCommsOffset + kNcclComms * sizeof(NcclCommEntry);
inline constexpr uint32_t kNcclSlots = 256;        // a power of two
static_assert(kNcclSlotsOffset + kNcclSlots * sizeof(NcclSlot) <= kChunkSize);

// ---- collective chunks: each process group's latest collectives and counters (1.5) -----
//
// The Python start-up hook's Collective records lie in event chunks (they give way to the
// window); what the report needs of every collective is kept here, rewritten in place, so
// a SIGKILL leaves it in the file. Group g (the hook's id, 0 unknown) below kCollGroups
// has block g % kCollGroupsPerChunk of the image's collective chunk g / kCollGroupsPerChunk
// (its seq), taken at the group's first collective; a group past them keeps its records
// in record chunks (never dropped). The reader makes collective_group records of the
// counters and collective records of the ring entries the window no longer holds.
inline constexpr uint32_t kCollChunkMagic = 0x47435443;  // "CTCG"

// A group's counters. Each is changed with an atomic add or raise (threads of one group
// may end collectives at once); `written` first, so it counts one being written.
struct CollGroupInfo {
  uint64_t written;    // collectives ended: ring positions claimed (from 1)
  uint64_t raised;     // those that raised (CollectiveStatus::kRaised)
  uint64_t async_ops;  // those that returned their Work (kIssued)
  uint64_t ticks;      // their total dur, in ticks
  uint64_t entered;    // the highest seq + seqs - 1 of those with a seq (0: none)
  uint64_t returned;   // the same over those that did not raise
  uint64_t reserved[2];
};
static_assert(sizeof(CollGroupInfo) == 64);

// One collective of the group's ring, the Collective record's fields. n is 0 while the
// slot is written (stored first, then a release fence), then its position, stored last.
struct CollSlot {
  uint64_t n;
  uint64_t ts;   // when it was called (ticks)
  uint64_t dur;  // ticks
  uint64_t seq;
  uint64_t count;
  uint32_t seqs;
  uint32_t dtype;  // String ids (the hook's are below 2^31)
  uint32_t where;
  uint32_t tid;    // the thread that wrote its record
  uint8_t op;      // CollectiveOp
  uint8_t status;  // CollectiveStatus
  uint16_t reserved0;
  uint32_t reserved1;
};
static_assert(sizeof(CollSlot) == 64);

inline constexpr uint32_t kCollRing = 64;  // latest collectives per group, a power of two
struct CollGroupBlock {
  CollGroupInfo info;
  CollSlot ring[kCollRing];  // position n in slot (n - 1) % kCollRing
};
inline constexpr uint32_t kCollGroupsOffset = 64;
inline constexpr uint32_t kCollGroupsPerChunk = (kChunkSize - kCollGroupsOffset) / sizeof(CollGroupBlock);
inline constexpr uint32_t kCollGroups = 64;  // groups kept per image: ids 0 to 63
inline constexpr uint32_t kCollChunks = (kCollGroups + kCollGroupsPerChunk - 1) / kCollGroupsPerChunk;
static_assert(kCollGroupsPerChunk == 7 && kCollChunks == 10);

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
