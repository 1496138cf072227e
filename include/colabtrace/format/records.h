// colabtrace trace format: the one list of record types.
//
// COLABTRACE_RECORD_TYPES is the single table of record types. Each entry names the
// type code (frozen; never reuse a code), the C++ struct, and the name `colabtrace dump`
// prints. Each struct's fields come from its CT_FIELDS_<Name> list. Both lists expand
// into the RecordType enum, the structs with a Visit() over their fields, the name table,
// and the reader's dispatch (codec.h). Nothing else lists record types.
//
// Field kinds (all integers are LEB128 varints on the wire):
//   U      unsigned integer           I      signed integer (zigzag)
//   Hex    unsigned, printed as hex   Dur    duration in ticks (reader gives ns)
//   Str    id of a String record      Stack  id of a Stack record (0 = none)
//   Bytes  varint length + raw bytes
//
// Compatibility: fields are only ever appended to a record. A reader fills fields a
// writer did not write with zero and ignores trailing fields it does not know.
//
// Type code ranges: 1-31 process and core, 32-63 file I/O, 64-95 GPU memory,
// 96-127 libraries and ABI, 128-159 CUPTI activity.
#pragma once

#include <cstddef>
#include <cstdint>

namespace colabtrace::format {

// ---- record table -----------------------------------------------------------------
#define COLABTRACE_RECORD_TYPES(X)          \
  X(1, String, "string")                    \
  X(2, Stack, "stack")                      \
  X(3, Clock, "clock")                      \
  X(4, ProcessStart, "process_start")       \
  X(5, Argv, "argv")                        \
  X(6, EnvVar, "env")                       \
  X(7, HostInfo, "host_info")               \
  X(8, HostNum, "host_num")                 \
  X(9, ThreadName, "thread_name")           \
  X(10, Sample, "sample")                   \
  X(11, Exit, "exit")                       \
  X(12, Signal, "signal")                   \
  X(13, Fork, "fork")                       \
  X(14, ExecStart, "exec_start")            \
  X(15, ExecFailed, "exec_failed")          \
  X(16, Spawn, "spawn")                     \
  X(17, ShimNote, "shim_note")              \
  X(18, Module, "module")                   \
  X(32, IoOpen, "io_open")                  \
  X(33, IoRead, "io_read")                  \
  X(34, IoReadAt, "io_read_at")             \
  X(35, IoWrite, "io_write")                \
  X(36, IoClose, "io_close")                \
  X(37, IoDup, "io_dup")                    \
  X(38, IoStat, "io_stat")                  \
  X(39, IoDir, "io_dir")                    \
  X(40, IoMmap, "io_mmap")                  \
  X(41, IoCopy, "io_copy")                  \
  X(42, Mount, "mount")                     \
  X(43, IoFsync, "io_fsync")                \
  X(64, GpuAlloc, "gpu_alloc")              \
  X(65, GpuFree, "gpu_free")                \
  X(66, GpuMemInfo, "gpu_mem_info")         \
  X(67, GpuVersion, "gpu_version")          \
  X(68, GpuDevice, "gpu_device")            \
  X(69, GpuPool, "gpu_pool")                \
  X(70, GpuVmm, "gpu_vmm")                  \
  X(71, GpuModule, "gpu_module")            \
  X(72, GpuError, "gpu_error")              \
  X(96, LibLoad, "lib_load")                \
  X(97, LibUnload, "lib_unload")            \
  X(128, GpuActivity, "gpu_activity")

// ---- fields of each record ----------------------------------------------------------
// Every record also carries `ts` (absolute ticks), framed as a delta; it is not listed.

#define CT_FIELDS_String(F) F(U, id) F(Bytes, text)
// frames: little-endian u64 return addresses, innermost first.
#define CT_FIELDS_Stack(F) F(U, id) F(Bytes, frames)
// A (ticks = ts, mono_ns, realtime_ns) triple; readers fit ticks to ns with these.
#define CT_FIELDS_Clock(F) F(U, mono_ns) F(U, realtime_ns)
// origin: ProcessOrigin. One per exec image; the last one names the job.
#define CT_FIELDS_ProcessStart(F) \
  F(U, pid) F(U, ppid) F(U, origin) F(U, image) F(Str, exe) F(Str, cwd) F(U, parent_tid)
#define CT_FIELDS_Argv(F) F(U, index) F(Str, value)
// source: EnvSource. A secret-looking name has redacted=1 and value 0.
#define CT_FIELDS_EnvVar(F) F(Str, name) F(Str, value) F(U, redacted) F(U, source)
#define CT_FIELDS_HostInfo(F) F(Str, key) F(Str, value)
#define CT_FIELDS_HostNum(F) F(Str, key) F(U, value)
#define CT_FIELDS_ThreadName(F) F(U, tid) F(Str, name)
// cgroup_current / oom_kill are UINT64_MAX when unknown.
#define CT_FIELDS_Sample(F) \
  F(U, rss_bytes) F(U, cgroup_current) F(U, oom_kill) F(U, threads) F(U, vm_bytes)
// how: ExitHow.
#define CT_FIELDS_Exit(F) F(I, code) F(U, how)
// A fatal signal caught by the shim. addr is si_addr; shm_mapping names the /dev/shm
// file when a SIGBUS address lies inside one.
#define CT_FIELDS_Signal(F) \
  F(U, signo) F(I, si_code) F(Hex, addr) F(U, tid) F(Stack, stack) F(Str, shm_mapping)
// In the parent. how: ForkHow. child_pid < 0 is -errno.
#define CT_FIELDS_Fork(F) F(I, child_pid) F(U, how)
// Written just before an exec; if it succeeds the next image continues this file.
#define CT_FIELDS_ExecStart(F) F(Str, path) F(U, api)
#define CT_FIELDS_ExecFailed(F) F(Str, path) F(U, err)
#define CT_FIELDS_Spawn(F) F(I, child_pid) F(Str, path) F(U, api)
// Something the shim itself wants the analyzer to know (code: ShimNoteCode).
#define CT_FIELDS_ShimNote(F) F(U, code) F(Str, text) F(U, value)
// Module map entry for offline symbolization.
#define CT_FIELDS_Module(F) F(Str, path) F(Hex, base) F(U, size) F(Bytes, build_id)

// ---- file I/O (issue: I/O tracing) ----
// api: IoApi. fd < 0 is -errno. fs: index of a Mount record's id, or 0 if unknown.
#define CT_FIELDS_IoOpen(F) \
  F(U, api) F(I, fd) F(Str, path) F(U, flags) F(Dur, dur) F(U, mount) F(U, size)
#define CT_FIELDS_IoRead(F) F(U, api) F(I, fd) F(I, result) F(Dur, dur)
#define CT_FIELDS_IoReadAt(F) F(U, api) F(I, fd) F(I, result) F(Dur, dur) F(U, offset)
#define CT_FIELDS_IoWrite(F) F(U, api) F(I, fd) F(I, result) F(Dur, dur)
#define CT_FIELDS_IoClose(F) F(U, api) F(I, fd) F(I, result)
#define CT_FIELDS_IoDup(F) F(U, api) F(I, oldfd) F(I, newfd)
#define CT_FIELDS_IoStat(F) F(U, api) F(Str, path) F(I, fd) F(I, result) F(Dur, dur)
#define CT_FIELDS_IoDir(F) F(U, api) F(Str, path) F(I, fd) F(I, result) F(Dur, dur)
#define CT_FIELDS_IoMmap(F) \
  F(I, fd) F(Hex, addr) F(U, length) F(U, offset) F(U, prot) F(U, flags)
#define CT_FIELDS_IoCopy(F) F(U, api) F(I, in_fd) F(I, out_fd) F(I, result) F(Dur, dur)
#define CT_FIELDS_Mount(F) \
  F(U, id) F(U, dev) F(Str, fstype) F(Str, mountpoint) F(Str, source)
#define CT_FIELDS_IoFsync(F) F(U, api) F(I, fd) F(I, result) F(Dur, dur)

// ---- GPU memory (issue: GPU allocation tracing) ----
// api: GpuApi. layer: 0 runtime, 1 driver. rc is the API's own return code.
#define CT_FIELDS_GpuAlloc(F)                                                          \
  F(U, api) F(U, layer) F(I, device) F(Hex, stream) F(Hex, addr) F(U, size) F(I, rc) \
  F(Dur, dur) F(Stack, stack) F(U, flags) F(Hex, pool)
#define CT_FIELDS_GpuFree(F)                                                \
  F(U, api) F(U, layer) F(I, device) F(Hex, stream) F(Hex, addr) F(I, rc) \
  F(Dur, dur) F(Stack, stack)
// why: 0 startup/first use, 1 after a failed allocation, 2 the program asked.
#define CT_FIELDS_GpuMemInfo(F) F(I, device) F(U, free) F(U, total) F(I, rc) F(U, why)
#define CT_FIELDS_GpuVersion(F) F(I, runtime) F(I, driver)
#define CT_FIELDS_GpuDevice(F) \
  F(U, index) F(Str, name) F(U, cc_major) F(U, cc_minor) F(U, total)
#define CT_FIELDS_GpuPool(F) F(U, api) F(Hex, pool) F(I, device) F(U, value) F(I, rc)
#define CT_FIELDS_GpuVmm(F)                                                         \
  F(U, api) F(Hex, handle) F(Hex, addr) F(U, size) F(U, offset) F(I, rc) F(Dur, dur) \
  F(Stack, stack) F(I, device)
#define CT_FIELDS_GpuModule(F) \
  F(U, api) F(I, rc) F(Hex, handle) F(U, image_size) F(Str, path) F(Str, caller)
#define CT_FIELDS_GpuError(F) F(U, api) F(I, rc) F(Str, caller)

// ---- libraries (issue: library loads and ABI) ----
// api: LibApi. ok=0 means the load failed and error holds the dlerror text.
#define CT_FIELDS_LibLoad(F)                                                        \
  F(U, api) F(Str, requested) F(Str, path) F(Str, requester) F(I, flags) F(I, nsid) \
  F(U, ok) F(Str, error) F(Hex, handle) F(Hex, base) F(U, dev) F(U, ino) F(U, size)  \
  F(U, mtime_ns) F(Bytes, build_id) F(Str, soname)
#define CT_FIELDS_LibUnload(F) F(Str, path) F(Hex, base) F(Hex, handle)

// ---- CUPTI ----
#define CT_FIELDS_GpuActivity(F)                                               \
  F(U, kind) F(I, device) F(U, start_ns) F(U, end_ns) F(U, bytes) F(Str, name) \
  F(Hex, addr) F(U, correlation)

// ---- enums used by fields ---------------------------------------------------------

enum class RecordType : uint8_t {
#define CT_ENUM(code, Name, dumpname) Name = code,
  COLABTRACE_RECORD_TYPES(CT_ENUM)
#undef CT_ENUM
};

enum class ProcessOrigin : uint8_t { kInitial = 0, kForkChild = 1, kExec = 2 };
enum class EnvSource : uint8_t { kStartup = 0, kSetenv = 1, kPutenv = 2, kUnsetenv = 3 };
enum class ExitHow : uint8_t {
  kReturnFromMain = 0, kExit = 1, kUnderscoreExit = 2, kQuickExit = 3, kDestructor = 4
};
enum class ForkHow : uint8_t { kFork = 0, kVfork = 1 };
enum class ShimNoteCode : uint8_t {
  kBadEnvValue = 1,     // a COLABTRACE_* variable had a bad value (text: the message)
  kInternTableFull = 2, // strings are no longer deduplicated
  kStackUnavailable = 3,
  kSignalChained = 4,   // a fatal signal was passed on to the program's own handler
};

// ---- field storage types ------------------------------------------------------------

enum class FieldKind : uint8_t { kU, kI, kHex, kDur, kStr, kStack, kBytes };

// A view of bytes inside a record. In the shim it points at caller memory; in the
// reader it points into the trace buffer and is valid while the buffer is.
struct Bytes {
  const uint8_t* data = nullptr;
  uint32_t size = 0;
};

template <FieldKind K> struct FieldTag { static constexpr FieldKind kind = K; };
template <FieldKind K> struct FieldStorage { using type = uint64_t; };
template <> struct FieldStorage<FieldKind::kI> { using type = int64_t; };
template <> struct FieldStorage<FieldKind::kBytes> { using type = Bytes; };

#define CT_MEMBER(kind, name) \
  typename ::colabtrace::format::FieldStorage<::colabtrace::format::FieldKind::k##kind>::type name{};
#define CT_VISIT(kind, name) \
  v(#name, ::colabtrace::format::FieldTag<::colabtrace::format::FieldKind::k##kind>{}, name);
#define CT_STRUCT(code, Name, dumpname)                            \
  struct Name {                                                    \
    static constexpr RecordType kType = RecordType::Name;          \
    static constexpr const char* kName = dumpname;                 \
    uint64_t ts = 0;                                               \
    CT_FIELDS_##Name(CT_MEMBER)                                    \
    template <class V> void Visit(V&& v) { CT_FIELDS_##Name(CT_VISIT) }       \
    template <class V> void Visit(V&& v) const { CT_FIELDS_##Name(CT_VISIT) } \
  };
COLABTRACE_RECORD_TYPES(CT_STRUCT)
#undef CT_STRUCT
#undef CT_VISIT
#undef CT_MEMBER

// The dump name of a record type, or nullptr if the code is unknown.
constexpr const char* RecordName(uint8_t code) {
  switch (code) {
#define CT_NAME(code, Name, dumpname) \
  case code:                          \
    return dumpname;
    COLABTRACE_RECORD_TYPES(CT_NAME)
#undef CT_NAME
    default:
      return nullptr;
  }
}

// Calls f(Name{}) for the struct of record type `code`; returns false if unknown.
template <class F> bool DispatchRecordType(uint8_t code, F&& f) {
  switch (code) {
#define CT_DISPATCH(code, Name, dumpname) \
  case code:                              \
    f(Name{});                            \
    return true;
    COLABTRACE_RECORD_TYPES(CT_DISPATCH)
#undef CT_DISPATCH
    default:
      return false;
  }
}

}  // namespace colabtrace::format
