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
// 96-111 libraries, ABI and the Python start-up hook's records, 112-127 CUPTI activity. Codes stay below 128: the type
// byte's high bit is kTypeTsBack (see codec.h).
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
  X(19, ExecUntraced, "exec_untraced")      \
  X(20, ExecArgv, "exec_argv")              \
  X(21, KillSent, "kill_sent")              \
  X(22, HangStop, "hang_stop")              \
  X(23, WaitStatus, "wait_status")          \
  X(24, ProcSample, "proc_sample")          \
  X(25, RunInfo, "run_info")                \
  X(26, CgroupSample, "cgroup_sample")      \
  X(27, BatchWait, "batch_wait")            \
  X(28, ProcessRole, "process_role")        \
  X(29, InFlight, "in_flight")              \
  X(30, ThreadState, "thread_state")        \
  X(31, Step, "step")                       \
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
  X(44, IoSeek, "io_seek")                  \
  X(62, JobDisk, "job_disk")                \
  X(63, TraceCompacted, "trace_compacted")  \
  X(64, GpuAlloc, "gpu_alloc")              \
  X(65, GpuFree, "gpu_free")                \
  X(66, GpuMemInfo, "gpu_mem_info")         \
  X(67, GpuVersion, "gpu_version")          \
  X(68, GpuDevice, "gpu_device")            \
  X(69, GpuPool, "gpu_pool")                \
  X(70, GpuVmm, "gpu_vmm")                  \
  X(71, GpuModule, "gpu_module")            \
  X(72, GpuError, "gpu_error")              \
  X(73, GpuInterpose, "gpu_interpose")      \
  X(74, GpuLaunchFailed, "gpu_launch_failed") \
  X(75, GpuFunction, "gpu_function")        \
  X(76, GpuFault, "gpu_fault")              \
  X(77, GpuLaunchRing, "gpu_launch_ring")   \
  X(78, GpuSync, "gpu_sync")                \
  X(96, LibLoad, "lib_load")                \
  X(97, LibUnload, "lib_unload")            \
  X(98, LibCheck, "lib_check")              \
  X(99, PyPackage, "py_package")            \
  X(100, PySample, "py_sample")             \
  X(101, PyException, "py_exception")       \
  X(102, Collective, "collective")          \
  X(103, DistGroup, "dist_group")           \
  X(104, NcclComm, "nccl_comm")             \
  X(105, NcclCall, "nccl_call")             \
  X(106, NcclCommState, "nccl_comm_state")  \
  X(110, CollectiveGroup, "collective_group") \
  X(112, GpuActivity, "gpu_activity")      \
  X(113, CuptiState, "cupti_state")         \
  X(114, CuptiMemory, "cupti_memory")       \
  X(115, CuptiModule, "cupti_module")

// ---- records that may give way -----------------------------------------------------
// The window (wire.h, "event chunks"): the types in this list go into event chunks, which
// the shim rewrites once the window is full; their sums are kept elsewhere. Every other
// record is never dropped. One list: widen it here.
#define COLABTRACE_DROPPABLE_TYPES(X) \
  X(IoOpen) X(IoRead) X(IoReadAt) X(IoWrite) X(IoClose) X(IoDup) X(IoStat) X(IoDir) \
  X(IoMmap) X(IoCopy) X(IoFsync) X(IoSeek) X(Step) X(BatchWait) X(Collective)

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
// cgroup_current / oom_kill are UINT64_MAX when unknown. cgroup_inactive_file: the
// cgroup's memory.stat inactive_file (v1: total_inactive_file), page cache the kernel
// drops before it OOM kills; read by the periodic samples only (UINT64_MAX in the
// start, fork, exec and exit samples; 0 in older traces). utime_ns / stime_ns: the
// process's CPU time so far in user and kernel mode (/proc/self/stat's utime and stime,
// all threads, clock ticks converted to ns); 0 in older traces.
#define CT_FIELDS_Sample(F) \
  F(U, rss_bytes) F(U, cgroup_current) F(U, oom_kill) F(U, threads) F(U, vm_bytes) \
  F(U, cgroup_inactive_file) F(U, utime_ns) F(U, stime_ns)
// how: ExitHow.
#define CT_FIELDS_Exit(F) F(I, code) F(U, how)
// A fatal signal caught by the shim. addr is si_addr; shm_mapping names the /dev/shm
// file when a SIGBUS address lies inside one, and then: shm_offset, the file offset the
// address maps; shm_file_size, the file's size at the signal; shm_free, the bytes free
// on /dev/shm at the signal; shm_known, which of those were read (ShmFact bits; 0 in
// traces from before these fields).
#define CT_FIELDS_Signal(F) \
  F(U, signo) F(I, si_code) F(Hex, addr) F(U, tid) F(Stack, stack) F(Str, shm_mapping) \
  F(Str, py_stack) F(U, shm_offset) F(U, shm_file_size) F(U, shm_free) F(U, shm_known)
// In the parent. how: ForkHow. child_pid < 0 is -errno.
#define CT_FIELDS_Fork(F) F(I, child_pid) F(U, how)
// Written just before an exec; if it succeeds the next image continues this file.
#define CT_FIELDS_ExecStart(F) F(Str, path) F(U, api)
#define CT_FIELDS_ExecFailed(F) F(Str, path) F(U, err)
// A program that will not load the shim (why: ExecUntracedWhy), so no trace of it
// follows: its executable (the opened file's /proc/self/fd link when the shim could open
// it, else the path as given) and, in ExecArgv records with the same ts, its argv.
// child_pid 0: this process's own exec, written after ExecStart (an ExecFailed after it
// voids it). Else a child this process started that runs the program: by posix_spawn
// (after the Spawn record), or by vfork and exec (written by the parent at its first
// hook after the child exec'd or exited). why kExecFailed: a vfork child whose every
// exec failed (it exited without running another program); exe and argv are the last it
// tried, err that exec's errno (0 otherwise).
#define CT_FIELDS_ExecUntraced(F) F(Str, exe) F(U, why) F(U, child_pid) F(U, err)
#define CT_FIELDS_ExecArgv(F) F(U, index) F(Str, value)
#define CT_FIELDS_Spawn(F) F(I, child_pid) F(Str, path) F(U, api)
// Something the shim itself wants the analyzer to know (code: ShimNoteCode).
#define CT_FIELDS_ShimNote(F) F(U, code) F(Str, text) F(U, value)
// Module map entry for offline symbolization.
#define CT_FIELDS_Module(F) F(Str, path) F(Hex, base) F(U, size) F(Bytes, build_id)
// A child reaped by this process (wait, waitpid, wait3, wait4, waitid; or `colabtrace
// run` reaping its command). ts: when the call returned. status: the wait status word
// (waitid's si_code/si_status are converted to it: exited -> code << 8, killed -> signo,
// dumped -> signo | 0x80). api: WaitApi. Only reaps are recorded: no WNOHANG "nothing
// yet", no WNOWAIT peeks, no stopped/continued reports.
#define CT_FIELDS_WaitStatus(F) F(I, pid) F(U, status) F(U, api)
// A termination signal (SIGKILL, SIGTERM, SIGINT, SIGHUP, SIGQUIT) this process sent to
// another with kill() or killpg() (api: KillApi): target as kill() takes it (> 0 a pid,
// 0 its own group, -1 every process it may signal, < -1 a group), result 0 or -errno.
// ts: the call's start. The sender of a SIGKILL its victim cannot record. A signal to a
// group the sender is in is written before the call (result 0: it may end the sender);
// a failure then adds a second record with the same ts and -errno.
#define CT_FIELDS_KillSent(F) F(I, target) F(U, signo) F(U, api) F(I, result)
// Written by `colabtrace run` only: one process of the traced tree sampled from outside
// (/proc/PID/stat every round, status (swap) every tenth, smaps_rollup when the PSS
// schedule picks the process: then rss, pss and uss all come from that one read; pss and
// uss are UINT64_MAX in every other sample). Bytes; UINT64_MAX when unknown. cgroup: the
// process's cgroup path (a CgroupSample of the same round carries its figures).
// shim: 1 when libcolabtrace.so is mapped in the process (it should write a trace).
// utime_ns / stime_ns: its CPU time so far (/proc/PID/stat), 0 in older traces.
#define CT_FIELDS_ProcSample(F) \
  F(U, pid) F(U, ppid) F(U, rss_bytes) F(U, pss_bytes) F(U, uss_bytes) F(U, swap_bytes) \
  F(U, threads) F(Str, cgroup) F(Str, comm) F(U, shim) F(U, utime_ns) F(U, stime_ns)
// A step boundary (the chunk gives the thread). source: StepSource. kMarker: the
// program's own marker, colabtrace_step(n) from C (include/colabtrace/colabtrace.h) or
// colabtrace.step(n) from Python, n its own step number. kOptimizer: the Python start-up
// hook saw the iteration's optimizer step end (PyTorch's global optimizer step hooks on
// torch >= 2.0, a wrapped Optimizer.step before), n the hook's count from 1; several
// optimizers stepping in one iteration write one record (the hook counts the optimizer
// that stepped first; see python/colabtrace/_startup). ts: when the step ended (an
// optimizer) or began (a marker: the program calls it at the top of its loop).
#define CT_FIELDS_Step(F) F(U, n) F(U, source)
// The step loop waited for its next batch (the Python start-up hook wraps the
// DataLoader iterator's __next__): ts when the wait began, dur how long it took, kind
// BatchWaitKind, where: the Python line that asked for the batch ("train.py:25 in
// main"; 0: unknown), n the batch's index within its iterator (0-based). One record per
// batch, written when it arrived: a wait that never ended leaves none, nor does a
// __next__ that raised (the StopIteration that ends an epoch is no batch, nor an error).
#define CT_FIELDS_BatchWait(F) F(Dur, dur) F(U, kind) F(Str, where) F(U, n)
// What this process is for, as its own code said (role: ProcessRoleKind). kDataLoaderWorker:
// written by the Python start-up hook when a torch DataLoader worker starts its loop
// (fork, spawn or forkserver); worker_id is the DataLoader's id of the worker.
#define CT_FIELDS_ProcessRole(F) F(U, role) F(U, worker_id)
// A call that had not returned when the trace was read: never written as a record by the
// shim, but made by the reader from a thread's call note in the trace's state chunk
// (wire.h, StateChunk), which the thread writes in place with a few stores when a call
// that may block begins and clears when it returns, so a SIGKILL cannot lose it. ts: when
// the call began. tid: the thread. call: InFlightCall. level: 0 the innermost hooked call
// (libc, CUDA, dlopen), 1 the Python-level wait around it (a DataLoader batch). api: the
// entry point (IoApi for file calls, GpuApi for GPU syncs, WaitApi for waits, LibApi for
// dlopen). path: the file (open, stat, dlopen; 0 for a call on a descriptor: the fd's open
// names it). fd: the descriptor of a read, write, fsync or fstat (-1: none). stream, device_wide: what a GPU sync waited on; epoch: the
// synchronisation epoch it covers launches below (gpu_launch_ring's epoch); synced: the
// epoch below which launches on that stream had already completed. pid: what wait waited
// for. where: a batch wait's asking line ("train.py:25 in main"), a collective's calling
// line. A collective (level 1, the Python start-up hook's; api: CollectiveOp): seq, count,
// dtype and group as Collective has them (appended fields; 0 for other calls). Made only
// for the last exec image's threads.
#define CT_FIELDS_InFlight(F)                                                           \
  F(U, tid) F(U, call) F(U, level) F(U, api) F(Str, path) F(I, fd) F(Hex, stream)       \
  F(U, device_wide) F(U, epoch) F(U, synced) F(I, pid) F(Str, where) F(U, seq)          \
  F(U, count) F(Str, dtype) F(U, group)
// Written by `colabtrace run --hang-timeout` into its own trace when the job made no
// progress for the timeout, one per thread of each traced process, read from outside:
// pid, tid, comm (/proc/PID/task/TID/comm), kernel_state (the state letter of its stat:
// 'S' sleeping, 'D' uninterruptible, 'R' running), syscall (the number it is blocked in,
// -1 none, from /proc/PID/task/TID/syscall) and its first argument, and python_stack (its
// Python frames innermost first, one "path:line in function" per line; 0: not a Python
// thread, or unreadable).
#define CT_FIELDS_ThreadState(F)                                                        \
  F(U, pid) F(U, tid) F(Str, comm) F(U, kernel_state) F(I, syscall) F(U, syscall_arg0) \
  F(Str, python_stack)
// Written by `colabtrace run --hang-timeout` when it ends the job for a hang (ts: then):
// timeout the limit, idle how long the job had made no progress (no step of any traced
// process; before the first step, since the job started), steps the steps seen.
#define CT_FIELDS_HangStop(F) F(Dur, timeout) F(Dur, idle) F(U, steps)
// The role marker of a `colabtrace run` wrapper's own trace (never a job process):
// child_pid is the command it ran, sample_ms its sampling period. pss_ms (appended):
// COLABTRACE_PSS_MS, the fixed period of its PSS reads; 0: as their cost budget allows
// (analyzer/model/pss_schedule.h; 0 in older traces, which read PSS at every sample).
#define CT_FIELDS_RunInfo(F) F(U, child_pid) F(U, sample_ms) F(U, pss_ms)
// Written by `colabtrace run`: one cgroup v2 (or v1 memory controller) reading.
// current/max/oom_kill: memory.current, memory.max (UINT64_MAX: no limit) and
// memory.events oom_kill; UINT64_MAX when unknown. inactive_file: memory.stat's
// inactive_file (v1: total_inactive_file), page cache the kernel reclaims before it OOM
// kills; current minus it is the working set. UINT64_MAX when unknown, 0 in older traces.
#define CT_FIELDS_CgroupSample(F) F(Str, path) F(U, current) F(U, max) F(U, oom_kill) F(U, inactive_file)
// 1.4 (issue 39, the job cap; codes 62-63 from the top of the file I/O range).
// Written by `colabtrace run` into its own trace at a check of the output folder (ts:
// then): bytes, the disk space (st_blocks) of every *.ctrace there after the check's
// compactions; max_bytes, COLABTRACE_JOB_MAX_MB in bytes; traces, the trace files;
// compacted, how many run has compacted so far; process_max_mb, the COLABTRACE_MAX_MB it
// gave the command. Written at the first check, at each that compacted or found more
// bytes than any before, and at the last.
#define CT_FIELDS_JobDisk(F) F(U, bytes) F(U, max_bytes) F(U, traces) F(U, compacted) F(U, process_max_mb)
// Written by `colabtrace run` into a trace it compacted (after its process ended), in a
// record chunk of its own (tid 0): events, the droppable records removed with the event
// chunks (their sums are in the I/O aggregates); event_chunks, how many chunks;
// bytes_before, the file's disk space before. ts: the latest of the removed records'
// ticks (the trace's start when none), so the trace ends when it did.
#define CT_FIELDS_TraceCompacted(F) F(U, events) F(U, event_chunks) F(U, bytes_before)

// ---- file I/O (issue: I/O tracing) ----
// api: IoApi (below): which libc entry point the program called. Results are what the
// call returned, or -errno when it failed. ts is when the call started and dur how long
// it took, except IoDup (ts: when it returned). The shim records reads, writes, stats,
// closes and mappings only on descriptors it saw opened (or inherited regular files),
// so pipes and sockets never appear. See docs/trace-format.md, "File I/O".
//
// IoOpen: fd < 0 is -errno. path: absolute when the shim could resolve it. mount: the id
// of the Mount record of the file's filesystem (0: unknown). ftype: S_IFMT >> 12 when
// the shim measured the file (inherited descriptors, dirfd-relative opens), and then
// size is st_size; 0 when it did not (size is 0 then too).
#define CT_FIELDS_IoOpen(F) \
  F(U, api) F(I, fd) F(Str, path) F(U, flags) F(Dur, dur) F(U, mount) F(U, size) F(U, ftype)
#define CT_FIELDS_IoRead(F) F(U, api) F(I, fd) F(I, result) F(Dur, dur)
#define CT_FIELDS_IoReadAt(F) F(U, api) F(I, fd) F(I, result) F(Dur, dur) F(U, offset)
// offset: the explicit offset of pwrite/pwritev (0 for the others).
#define CT_FIELDS_IoWrite(F) F(U, api) F(I, fd) F(I, result) F(Dur, dur) F(U, offset)
#define CT_FIELDS_IoClose(F) F(U, api) F(I, fd) F(I, result)
// newfd < 0 is -errno. For fcntl(F_DUPFD*) newfd is the descriptor returned.
#define CT_FIELDS_IoDup(F) F(U, api) F(I, oldfd) F(I, newfd)
// A path stat has fd -1 (path absolute) or the dirfd its relative path is against; an
// fd stat has path 0. size: st_size and ftype: S_IFMT >> 12 when the call succeeded
// (access/faccessat: 0).
#define CT_FIELDS_IoStat(F) \
  F(U, api) F(Str, path) F(I, fd) F(I, result) F(Dur, dur) F(U, size) F(U, ftype)
// api opendir/fdopendir/scandir: a directory opened (scandir: result = entries).
// api readdir: one scan summary, written when readdir returned NULL (or at closedir):
// result = entries returned since the last summary, dur = time spent inside readdir.
// api getdents64: one call, result = bytes.
#define CT_FIELDS_IoDir(F) F(U, api) F(Str, path) F(I, fd) F(I, result) F(Dur, dur)
// A mapping of a traced file. result: 0 or -errno (addr is then 0).
#define CT_FIELDS_IoMmap(F) \
  F(I, fd) F(Hex, addr) F(U, length) F(U, offset) F(U, prot) F(U, flags) F(I, result)
#define CT_FIELDS_IoCopy(F) F(U, api) F(I, in_fd) F(I, out_fd) F(I, result) F(Dur, dur)
// One per line of /proc/self/mountinfo, at start (and when a new mount is first used).
// id: the mount id (what statx's STATX_MNT_ID reports). dev: st_dev of its files.
#define CT_FIELDS_Mount(F) \
  F(U, id) F(U, dev) F(Str, fstype) F(Str, mountpoint) F(Str, source)
#define CT_FIELDS_IoFsync(F) F(U, api) F(I, fd) F(I, result) F(Dur, dur)
// An lseek that may move the position (pure "tell" queries, offset 0 with SEEK_CUR, are
// not recorded), or api position: the position of an inherited descriptor at start.
// result: the new position or -errno.
#define CT_FIELDS_IoSeek(F) F(U, api) F(I, fd) F(I, offset) F(U, whence) F(I, result)

// The IoApi values (frozen: never reuse one). X(code, Name, "name as in libc").
#define COLABTRACE_IO_APIS(X)                                                              \
  X(1, Open, "open") X(2, Open64, "open64") X(3, Openat, "openat")                         \
  X(4, Openat64, "openat64") X(5, Open2, "__open_2") X(6, Open64_2, "__open64_2")          \
  X(7, Openat2, "__openat_2") X(8, Openat64_2, "__openat64_2") X(9, Creat, "creat")        \
  X(10, Creat64, "creat64") X(11, Fopen, "fopen") X(12, Fopen64, "fopen64")                \
  X(13, Freopen, "freopen") X(14, Freopen64, "freopen64") X(15, Fdopen, "fdopen")          \
  X(16, Inherited, "inherited")                                                            \
  X(20, Read, "read") X(21, Pread, "pread") X(22, Pread64, "pread64") X(23, Readv, "readv") \
  X(24, Preadv, "preadv") X(25, Preadv64, "preadv64") X(26, Preadv2, "preadv2")            \
  X(27, Preadv64v2, "preadv64v2") X(28, ReadChk, "__read_chk")                             \
  X(29, PreadChk, "__pread_chk") X(30, Pread64Chk, "__pread64_chk")                        \
  X(32, Fread, "fread") X(33, FreadUnlocked, "fread_unlocked")                            \
  X(34, FreadChk, "__fread_chk") X(35, Fgets, "fgets") X(36, FgetsChk, "__fgets_chk")      \
  X(37, Getline, "getline") X(38, Getdelim, "getdelim") X(39, GetdelimInternal, "__getdelim") \
  X(40, Write, "write") X(41, Pwrite, "pwrite") X(42, Pwrite64, "pwrite64")                \
  X(43, Writev, "writev") X(44, Pwritev, "pwritev") X(45, Pwritev64, "pwritev64")          \
  X(46, Pwritev2, "pwritev2") X(47, Pwritev64v2, "pwritev64v2") X(48, Fwrite, "fwrite")    \
  X(49, FwriteUnlocked, "fwrite_unlocked") X(50, Fsync, "fsync")                           \
  X(51, Fdatasync, "fdatasync") X(52, Close, "close") X(53, Fclose, "fclose")              \
  X(54, Closedir, "closedir") X(55, CloseRange, "close_range") X(56, Closefrom, "closefrom") \
  X(58, Dup, "dup") X(59, Dup2, "dup2") X(60, Dup3, "dup3") X(61, FcntlDupfd, "F_DUPFD")   \
  X(62, FcntlDupfdCloexec, "F_DUPFD_CLOEXEC") X(64, Stat, "stat") X(65, Stat64, "stat64")  \
  X(66, Lstat, "lstat") X(67, Lstat64, "lstat64") X(68, Fstat, "fstat")                    \
  X(69, Fstat64, "fstat64") X(70, Fstatat, "fstatat") X(71, Fstatat64, "fstatat64")        \
  X(72, Xstat, "__xstat") X(73, Xstat64, "__xstat64") X(74, Lxstat, "__lxstat")            \
  X(75, Lxstat64, "__lxstat64") X(76, Fxstat, "__fxstat") X(77, Fxstat64, "__fxstat64")    \
  X(78, Fxstatat, "__fxstatat") X(79, Fxstatat64, "__fxstatat64") X(80, Statx, "statx")    \
  X(81, Access, "access") X(82, Faccessat, "faccessat") X(83, Euidaccess, "euidaccess")    \
  X(84, Eaccess, "eaccess") X(88, Opendir, "opendir")                                      \
  X(89, Fdopendir, "fdopendir") X(90, Readdir, "readdir") X(91, Readdir64, "readdir64")    \
  X(92, Getdents64, "getdents64") X(93, Scandir, "scandir") X(94, Scandir64, "scandir64")  \
  X(96, Mmap, "mmap") X(97, Mmap64, "mmap64") X(100, CopyFileRange, "copy_file_range")     \
  X(101, Sendfile, "sendfile") X(102, Sendfile64, "sendfile64") X(104, Lseek, "lseek")     \
  X(105, Lseek64, "lseek64") X(106, Position, "position") X(107, Mkstemp, "mkstemp")       \
  X(108, Mkstemp64, "mkstemp64") X(109, Mkostemp, "mkostemp")                              \
  X(110, Mkostemp64, "mkostemp64") X(111, Mkstemps, "mkstemps")                            \
  X(112, Mkstemps64, "mkstemps64") X(113, Mkostemps, "mkostemps")                          \
  X(114, Mkostemps64, "mkostemps64") X(115, FgetsUnlocked, "fgets_unlocked")               \
  X(116, FgetsUnlockedChk, "__fgets_unlocked_chk")                                         \
  X(117, FreadUnlockedChk, "__fread_unlocked_chk")

enum class IoApi : uint8_t {
#define CT_IO_API_ENUM(code, Name, name) k##Name = code,
  COLABTRACE_IO_APIS(CT_IO_API_ENUM)
#undef CT_IO_API_ENUM
};

// The libc name of an IoApi value, or nullptr if unknown.
constexpr const char* IoApiName(uint64_t code) {
  switch (code) {
#define CT_IO_API_NAME(code, Name, name) \
  case code:                             \
    return name;
    COLABTRACE_IO_APIS(CT_IO_API_NAME)
#undef CT_IO_API_NAME
    default:
      return nullptr;
  }
}

// ---- GPU memory (issue: GPU allocation tracing) ----
// api: GpuApi. layer: 0 runtime, 1 driver. rc is the API's own return code. ts is when
// the call started, dur how long it took. device -1: unknown. caller: the return address
// of the API call (where the program called it) when no stack was recorded (otherwise it
// is 0 and the stack's first frame is that address). A runtime call that reached the driver
// is one record: driver_api/driver_rc name the driver call underneath (0: none seen).
// GpuAlloc.size is the requested size (pitch * height for a pitched allocation); addr is
// 0 when the call failed. flags: cudaMallocManaged/cudaHostAlloc/cuMemHostAlloc flags.
#define CT_FIELDS_GpuAlloc(F)                                                          \
  F(U, api) F(U, layer) F(I, device) F(Hex, stream) F(Hex, addr) F(U, size) F(I, rc) \
  F(Dur, dur) F(Stack, stack) F(U, flags) F(Hex, pool) F(U, driver_api) F(I, driver_rc) \
  F(Hex, caller) F(U, pitch) F(Str, py_stack) F(U, windowed)
// 1.5 (gpu_live.h): windowed 1: the record lies in an event chunk and may give way, its
// allocation being in the GPU live set (a GpuAlloc) or taken out of it (a GpuFree, which
// then names the allocation it freed: size, alloc_ts in ticks, and the rest as its
// GpuAlloc had them); 0: the record is never dropped.
#define CT_FIELDS_GpuFree(F)                                                \
  F(U, api) F(U, layer) F(I, device) F(Hex, stream) F(Hex, addr) F(I, rc) \
  F(Dur, dur) F(Stack, stack) F(Hex, caller) F(U, driver_api) F(I, driver_rc) \
  F(Str, py_stack) F(U, windowed) F(U, size) F(U, alloc_ts) F(U, alloc_api) F(U, alloc_layer) \
  F(U, alloc_tid) F(I, alloc_device) F(Stack, alloc_stack) F(Hex, alloc_caller) F(Str, alloc_py_stack)
// why: GpuMemInfoWhy. A reading taken after a failed allocation (why 1) has the same
// tid and ts as the failed call's record. layer: which API answered (0 runtime, 1 driver).
#define CT_FIELDS_GpuMemInfo(F) \
  F(I, device) F(U, free) F(U, total) F(I, rc) F(U, why) F(U, layer)
// One per runtime library per process, at first use. -1: unknown; driver 0 means no
// driver is installed (what cudaDriverGetVersion reports then).
#define CT_FIELDS_GpuVersion(F) F(I, runtime) F(I, driver) F(Str, runtime_lib) F(Str, driver_lib)
// One per device per process, at the first allocation on it.
#define CT_FIELDS_GpuDevice(F) \
  F(U, index) F(Str, name) F(U, cc_major) F(U, cc_minor) F(U, total) F(U, pci_domain) \
  F(U, pci_bus) F(U, pci_device)
// api: cuMemPoolCreate (value: props.maxSize), cuMemPoolDestroy, cuMemPoolTrimTo (value:
// minBytesToKeep), or PoolState, written after a failed stream-ordered allocation:
// value = the pool's reserved bytes, used = its used bytes.
#define CT_FIELDS_GpuPool(F) \
  F(U, api) F(Hex, pool) F(I, device) F(U, value) F(I, rc) F(Dur, dur) F(U, used) F(Hex, caller)
// cuMemCreate: handle (out), size, device. cuMemRelease: handle. cuMemMap: addr, size,
// offset, handle. cuMemUnmap: addr, size. cuMemAddressReserve: addr (out), size,
// offset = alignment, handle = the requested address. cuMemAddressFree: addr, size.
#define CT_FIELDS_GpuVmm(F)                                                         \
  F(U, api) F(Hex, handle) F(Hex, addr) F(U, size) F(U, offset) F(I, rc) F(Dur, dur) \
  F(Stack, stack) F(I, device) F(Hex, caller)
// A module or library loaded at run time. path: the file (cuModuleLoad,
// cuLibraryLoadFromFile); image_size: from the fatbin/ELF header of an in-memory image
// (0: not recognised); caller: the object that loaded it; image_object: the loaded object
// whose mapping holds an in-memory image (the library that carries the device code: a
// program's .nv_fatbin handed over by the runtime it links), "" for heap images.
#define CT_FIELDS_GpuModule(F) \
  F(U, api) F(I, rc) F(Hex, handle) F(U, image_size) F(Str, path) F(Str, caller) \
  F(Str, image_object)
// A failed driver initialisation (cuInit) and other GPU call failures worth knowing.
#define CT_FIELDS_GpuError(F) F(U, api) F(I, rc) F(Str, caller)
// The shim handed out a wrapper for a driver or runtime entry point (once per distinct
// real function). via: GpuInterposeVia. name/version/flags: what was asked for
// (cuGetProcAddress's symbol, cudaVersion and flags; dlsym's name). wrapped 0: it could
// not be wrapped (all wrapper slots taken) and calls through it are not traced.
#define CT_FIELDS_GpuInterpose(F) \
  F(U, api) F(Hex, real) F(U, via) F(Str, name) F(I, version) F(U, flags) F(U, wrapped)
// A kernel launch that failed (successful launches are not recorded). api: the launch
// entry point; layer 0 runtime, 1 driver. func: the runtime's host stub address
// (cudaLaunchKernel*: the analyzer names it from the module map and the object's
// symbols), the cudaKernel_t of nvcc's __cudaLaunchKernel (named through the
// __cudaGetKernel GpuFunction record), or the driver's CUfunction/CUkernel handle. name:
// the kernel name when the shim could learn it (driver: cuFuncGetName through the same
// driver; a failed lookup: the name asked for), else "" (see GpuFunction). module: the
// CUmodule/CUlibrary of func when known. inner_func: at runtime level, the CUfunction (or
// CUkernel) the runtime launched or looked up underneath when that call passed through
// the shim (0: not seen). A driver lookup that failed (cuModuleGetFunction,
// cuLibraryGetKernel, cuKernelGetFunction: the lazy loading that finds no image) is
// recorded here too, with that api: func is the CUkernel asked for (cuKernelGetFunction).
#define CT_FIELDS_GpuLaunchFailed(F)                                                     \
  F(U, api) F(U, layer) F(I, rc) F(Hex, func) F(Str, name) F(Hex, module) F(I, device)  \
  F(Hex, stream) F(Stack, stack) F(Hex, caller) F(Hex, inner_func) F(Str, py_stack)
// A kernel handle and its name, recorded when the program asks the driver for one
// (api: cuModuleGetFunction, cuLibraryGetKernel, cuFuncGetName). module: the CUmodule or
// CUlibrary it came from (0: unknown, cuFuncGetName). Also the handles that name one
// another: nvcc's __cudaGetKernel (handle: the cudaKernel_t, stub: the host stub it
// stands for, name: the kernel's name as the runtime gives it, cudaFuncGetName, "" when
// it gives none) and cuKernelGetFunction (handle: the CUfunction, kernel: the CUkernel it
// was made from, name ""). And the first launch of each host stub in the process through
// cudaLaunchKernel* (api: that launch entry point; handle and stub: the stub; name:
// cudaFuncGetName's), so that every report names every kernel without the program's files.
#define CT_FIELDS_GpuFunction(F) \
  F(U, api) F(Hex, handle) F(Hex, module) F(Str, name) F(Hex, stub) F(Hex, kernel)
// The first sticky (context-corrupting) CUDA error the process saw (order 1), and the
// first later call that failed with one (order 2). api/layer/rc: the call that reported
// it (a synchronising call, a copy, cudaGetLastError, an allocation or a launch). stream:
// that call's stream; device_wide 1: the call waits on (or reports for) the whole device
// (cudaDeviceSynchronize, cudaGetLastError, an allocation...). func: the kernel of a
// launch that reported it (0 otherwise); launch_blocking: CUDA_LAUNCH_BLOCKING=1 was set,
// so a launch that reports it ran the faulting kernel. epoch: the shim's synchronisation
// epoch when it was seen (see GpuLaunchRing). An order-1 record is followed by the
// launch ring.
#define CT_FIELDS_GpuFault(F)                                                          \
  F(U, order) F(U, api) F(U, layer) F(I, rc) F(Hex, stream) F(U, device_wide) F(I, device) \
  F(Stack, stack) F(Hex, caller) F(Str, py_stack) F(Hex, func) F(U, launch_blocking)   \
  F(U, epoch)
// One of the last successful kernel launches, written from the shim's launch ring at
// the first sticky error (why 1) or at a fatal signal (why 2), or made by the reader from
// the rings in the trace's ring chunks (why 3, wire.h RingChunk) of a trace that did not
// end cleanly: the launches a SIGKILL left in the ring, ts the trace's last record's;
// successful launches are never recorded one by one. tid/seq: the launching thread and its launch count (seq
// orders one thread's launches). epoch: the synchronisation epoch the launch returned in;
// synced: the epoch of the last successful synchronisation covering its stream when the
// ring was written (a stream or device synchronisation that began after the launch
// returned has synced > epoch: the kernel completed). func: as in GpuLaunchFailed (host
// stub, cudaKernel_t, or CUfunction for layer 1), named offline: after a sticky error the
// driver answers cuFuncGetName with the error too. py_stack: the innermost Python frame
// of the launch, "path:line in function" (0: none). Launch times are not read (a clock
// read costs more than the launch path's budget); ts is when the ring was written.
#define CT_FIELDS_GpuLaunchRing(F)                                                     \
  F(U, why) F(U, tid) F(U, seq) F(U, epoch) F(U, synced) F(U, api) F(U, layer)        \
  F(Hex, func) F(Hex, stream) F(U, grid_x) F(U, grid_y) F(U, grid_z) F(U, block_x)    \
  F(U, block_y) F(U, block_z) F(Str, py_stack)

// A synchronising call (GpuApi: a stream, device or event synchronisation, a copy to
// the host) of the program's own that blocked at least kGpuSyncRecordNs: ts when it was
// called, dur how long it blocked, stream the stream it waited on (0: the default
// stream or the whole device), device_wide 1 when it waited on the whole device, rc its
// result. Quicker ones are not recorded. The step breakdown's "GPU sync" share.
#define CT_FIELDS_GpuSync(F) F(U, api) F(U, layer) F(Dur, dur) F(Hex, stream) F(U, device_wide) F(I, rc)

// ---- libraries (issue: library loads and ABI) ----
// One record per object that appears in the process (api kStartup, kDependency,
// kDiscovered: fresh=1) and one per dlopen/dlmopen call (api kDlopen, kDlmopen; fresh=1
// when that call mapped its target). ok=0 means the load failed and error holds the
// dlerror text. requester: the calling object (calls) or the object whose DT_NEEDED
// named it (requested = that DT_NEEDED string); "LD_PRELOAD" for preloads. base is the
// load bias (dl_iterate_phdr's dlpi_addr, as in Module); dev/ino/size/mtime_ns are the
// file's identity from a raw stat at load time. dur: time in the real call. caller:
// the call's return address; stack: the call's native stack (0 = none).
#define CT_FIELDS_LibLoad(F)                                                        \
  F(U, api) F(Str, requested) F(Str, path) F(Str, requester) F(I, flags) F(I, nsid) \
  F(U, ok) F(Str, error) F(Hex, handle) F(Hex, base) F(U, dev) F(U, ino) F(U, size)  \
  F(U, mtime_ns) F(Bytes, build_id) F(Str, soname) F(U, fresh) F(Dur, dur)          \
  F(Stack, stack) F(Hex, caller)
// api: LibUnloadApi. A dlclose call (handle, rc, error), or an object that is gone from
// the process (path, base).
#define CT_FIELDS_LibUnload(F) \
  F(Str, path) F(Hex, base) F(Hex, handle) F(U, api) F(I, rc) F(Str, error)
// A loaded object's file no longer has the identity recorded at load time (re-checked at
// later loads and at exit). err is -errno when the stat failed (e.g. -ENOENT: removed).
// when: LibCheckWhen.
#define CT_FIELDS_LibCheck(F) \
  F(Str, path) F(Hex, base) F(U, dev) F(U, ino) F(U, size) F(U, mtime_ns) F(I, err) F(U, when)

// ---- Python (issue: Python-level attribution; codes 99-111, shared with libraries) ----
// py_stack fields (Signal, GpuAlloc, GpuFree, GpuLaunchFailed, GpuFault, GpuLaunchRing, PySample) are
// String ids whose text is the Python stack of the recording thread, one
// "path:line in function" per line, innermost first (GpuLaunchRing: the launch's innermost
// frame only; 0: no Python stack). See shim/python/python_stack.h.
// PyPackage: the distribution behind imported top-level modules, written at exit by the
// start-up hook (python/colabtrace/_startup). modules: the top-level module names it
// provides that were imported, comma-separated.
#define CT_FIELDS_PyPackage(F) F(Str, name) F(Str, version) F(Str, modules)
// PySample: a thread's Python position, taken with each periodic resource sample on the
// thread that took it (for processes that end killed). tid: that thread.
#define CT_FIELDS_PySample(F) F(U, tid) F(Str, py_stack)
// PyException: an uncaught Python exception, written by the start-up hook on the thread
// that raised it (the chunk gives the thread) before the interpreter's own hook prints it.
// how: PyExceptionHow. type: the class as Python's traceback names it ("ValueError",
// "mypkg.errors.BadBatch"). message: str(exc), its first kPyExceptionMessageMax bytes (cut
// at a UTF-8 character boundary); message_bytes: its whole length (more than the cap: it
// was cut). py_stack: its traceback, innermost frame first, one "path:line in function"
// per line (at most kPyExceptionFrames frames, the innermost); frames: the traceback's
// whole depth. SystemExit is never recorded (an exit, not an exception).
#define CT_FIELDS_PyException(F) \
  F(U, how) F(Str, type) F(Str, message) F(U, message_bytes) F(Str, py_stack) F(U, frames)
// Collective: a torch.distributed collective that the Python start-up hook saw, on any
// backend (gloo, NCCL, MPI), written when the call returned or raised. ts: when it was
// called; dur: how long the call took (an async_op call: until it returned its Work).
// op: CollectiveOp. group: the hook's id of the process group (DistGroup.group; 0:
// unknown). seq: the group's sequence number of the first collective the call issued,
// counted from 1 at the group's creation (torch's own per-group counter, which DDP's
// gradient all-reduces advance too; 0: unknown), seqs: how many it issued (0: unknown).
// count, dtype: the first tensor's element count and dtype ("torch.float32"; 0: none).
// where: the Python line that called it ("train.py:73 in main"); for kDdpAllReduce, the
// line that called backward(). status: CollectiveStatus.
#define CT_FIELDS_Collective(F) \
  F(Dur, dur) F(U, op) F(U, group) F(U, seq) F(U, seqs) F(U, count) F(Str, dtype) F(Str, where) F(U, status)
// DistGroup: a process group came to be (init_process_group, or new_group), as the
// Python start-up hook saw it return: group its id in this process (1 the default group,
// then each new group in creation order, which every rank shares); rank and world_size
// this process's place in it; backend ("gloo", "nccl"); base_seq torch's sequence number
// of the group at creation (Collective.seq counts from it; 0: unknown); how:
// DistGroupHow.
#define CT_FIELDS_DistGroup(F) \
  F(U, group) F(I, rank) F(U, world_size) F(Str, backend) F(U, base_seq) F(U, how)
// CollectiveGroup (1.5): a process group's counters as the collective chunk held them when
// the trace was read (wire.h, "collective chunks"; made by the reader, never written by the
// shim; ts: the trace's last record's). group: the hook's id; collectives: the collectives
// that ended on it (Collective records written, the window's given-up ones included);
// raised, async_ops: those with status kRaised, kIssued; time: their total dur; entered: the
// highest sequence number they issued (seq + seqs - 1); returned: the same over those that
// did not raise.
#define CT_FIELDS_CollectiveGroup(F) \
  F(U, group) F(U, collectives) F(U, raised) F(U, async_ops) F(Dur, time) F(U, entered) F(U, returned)

// ---- NCCL (shim/nccl) ----
// NcclComm: a communicator event, written when the call returned. event: NcclCommEvent.
// comm: the communicator's id, NCCL's own commHash computed alike on every rank
// (shim/nccl/nccl_comm_hash.h: the unique id's hash; for a split, from the parent's hash,
// its split count and the color; for a shrink, as a split with count 0 and color 0); 0 when
// the call failed before one existed. parent: the parent's id (kSplit, kShrink). nranks,
// rank: its size and this process's rank in it (-1 unknown; a split with
// NCCL_SPLIT_NOCOLOR: -1, and comm 0). color, split: a split's color and the parent's split
// count it made (1 for its first; a shrink: 0 and 0). handle: the ncclComm_t. rc: ncclResult_t;
// for kAsyncError the error ncclCommGetAsyncError reported (written once per communicator,
// the first time it is not ncclSuccess). dur: how long the call took. device: the CUDA
// device current at the call (-1 unknown).
#define CT_FIELDS_NcclComm(F)                                                             \
  F(U, event) F(Hex, comm) F(Hex, parent) F(I, nranks) F(I, rank) F(I, color) F(U, split) \
  F(Hex, handle) F(I, rc) F(Dur, dur)
// NcclCall: one NCCL collective or send/recv call, never written by the shim but made by
// the reader from the call ring of the trace's NCCL chunk (wire.h, NcclChunk), which holds
// each process's last kNcclSlots calls and survives a SIGKILL. ts: when it was called. n:
// the call's number in the process (from 1). op: CollectiveOp's code (kBroadcast for
// ncclBcast too). comm: the communicator's id (NcclComm.comm). seq: its number among the
// collectives entered on that communicator, from 1 (each call inside a group counts; 0 for
// send and recv, which pair per peer, and for a call that failed). count, dtype
// (ncclDataType_t), redop (ncclRedOp_t; 255 none or custom), peer (send/recv: the peer; a
// rooted collective: its root; -1 none), stream, group (the ncclGroupStart depth it was
// called at), rc (ncclResult_t), py_stack (the innermost Python frame, "path:line in
// function"; 0 none).
#define CT_FIELDS_NcclCall(F)                                                             \
  F(U, n) F(U, op) F(Hex, comm) F(U, seq) F(U, count) F(U, dtype) F(U, redop) F(I, peer)  \
  F(Hex, stream) F(U, group) F(I, rc) F(Str, py_stack)
// NcclCommState: a communicator as the NCCL chunk's table held it when the trace was read
// (made by the reader, like NcclCall; ts: the trace's last record's). colls: collectives
// entered on it (its last seq); p2p: sends and receives; state: NcclCommStateCode; splits:
// the splits made from it.
#define CT_FIELDS_NcclCommState(F)                                                         \
  F(Hex, handle) F(Hex, comm) F(Hex, parent) F(U, colls) F(U, p2p) F(I, nranks) F(I, rank) \
  F(U, state) F(U, splits)

// ---- CUPTI ----
#define CT_FIELDS_GpuActivity(F)                                               \
  F(U, kind) F(I, device) F(U, start_ns) F(U, end_ns) F(U, bytes) F(Str, name) \
  F(Hex, addr) F(U, correlation)
// What the shim's CUPTI subscriber did (COLABTRACE_CUPTI=1). state: CuptiStateCode; rc:
// the CUptiResult behind it. records/dropped: activity records decoded / dropped by
// CUPTI, counted since the previous CuptiState record.
#define CT_FIELDS_CuptiState(F) F(U, state) F(I, rc) F(U, records) F(U, dropped)
// One CUPTI_ACTIVITY_KIND_MEMORY2 or MEMORY_POOL activity record. op: the record's
// memoryOperationType (1 allocation, 2 release) or, for pools, memoryPoolOperationType
// (pool_record 1). memory_kind: CUpti_ActivityMemoryKind (3 device, 5 managed: a program's;
// 6/7 device/managed static: the driver's for a module's variables). start_ns: CUPTI's timestamp
// (the analyzer matches by address and order, not time). source: 1 activity buffer,
// 2 driver-API callback. correlation: CUPTI's correlation id.
#define CT_FIELDS_CuptiMemory(F)                                                      \
  F(U, op) F(U, pool_record) F(Hex, addr) F(U, bytes) F(I, device) F(U, memory_kind) \
  F(U, start_ns) F(Hex, pc) F(U, correlation) F(Hex, pool) F(U, source)
// CUPTI's RESOURCE domain. event: CuptiModuleEvent (1 context created, 2 module loaded,
// 3 module unloading). archs: the SM numbers of the module's cubin(s), comma-separated
// ("80,90"), read from their ELF headers.
#define CT_FIELDS_CuptiModule(F) \
  F(U, event) F(U, module_id) F(U, cubin_size) F(Str, archs) F(I, device) F(U, context_id)

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
// Why an exec's next image is not traced (ExecUntraced.why): its environment does not
// preload the shim; it is a static executable (no loader); or a secure exec (set-user/
// group-ID changing the caller's identity, or file capabilities: ld.so ignores the
// preload). kExecFailed: a vfork child none of whose execs succeeded (no next image).
enum class ExecUntracedWhy : uint8_t { kNoPreload = 1, kStatic = 2, kSecure = 3, kExecFailed = 4 };
// Signal.shm_known bits: which facts about the /dev/shm file behind a SIGBUS were read.
enum ShmFact : uint8_t { kShmOffsetAndSize = 1, kShmFree = 2 };
// The shim writes a Signal record for at most this many signals that a program handler
// took (the JVM takes one per NullPointerException); one that ends the process, always.
constexpr uint32_t kMaxRecordedHandledSignals = 16;
enum class KillApi : uint8_t { kKill = 0, kKillpg = 1 };
// Step.source. The analyzer counts a process's steps from its best source: markers,
// else optimizer steps, else its batch waits (BatchWait), so a program that marks its
// own steps is never counted twice.
enum class StepSource : uint8_t { kMarker = 0, kOptimizer = 1 };
// BatchWait.kind: a torch DataLoader iterator's __next__ (single- or multi-process).
enum class BatchWaitKind : uint8_t { kDataLoader = 1 };
// ProcessRole.role.
enum class ProcessRoleKind : uint8_t { kDataLoaderWorker = 1 };
// PyException.how: which hook saw it.
enum class PyExceptionHow : uint8_t {
  kMainThread = 1,  // sys.excepthook: the main thread's exception ends the process
  kThread = 2,      // threading.excepthook: a thread other than the main one ended on it
                    // (the process may live on)
  kPassedOn = 3,    // a DataLoader worker caught it and passes it to the main process
                    // (torch's ExceptionWrapper), which re-raises it there
  kSpawned = 4,     // a torch.multiprocessing.spawn process's function raised it: torch's
                    // wrapper caught it, passed its traceback to the parent and exited 1.
                    // The process ended on it, as on kMainThread
};
// Whether a PyException of this how is the one its process's main line of execution ended
// on (the main thread's, or a spawned process's function's), not a thread's or a passed-on one.
constexpr bool EndedItsProcess(uint64_t how) {
  return how == static_cast<uint64_t>(PyExceptionHow::kMainThread) ||
         how == static_cast<uint64_t>(PyExceptionHow::kSpawned);
}
// Collective.op: the torch.distributed call. Several entry points share one op:
// all_gather_into_tensor and _all_gather_base are kAllGather, reduce_scatter_tensor and
// _reduce_scatter_base kReduceScatter, all_to_all_single kAllToAll, isend kSend, irecv kRecv.
#define COLABTRACE_COLLECTIVE_OPS(X)                 \
  X(1, kAllReduce, "all_reduce")                    \
  X(2, kBroadcast, "broadcast")                     \
  X(3, kAllGather, "all_gather")                    \
  X(4, kReduceScatter, "reduce_scatter")            \
  X(5, kReduce, "reduce")                           \
  X(6, kGather, "gather")                           \
  X(7, kScatter, "scatter")                         \
  X(8, kAllToAll, "all_to_all")                     \
  X(9, kBarrier, "barrier")                         \
  X(10, kSend, "send")                              \
  X(11, kRecv, "recv")                              \
  X(12, kAllGatherObject, "all_gather_object")      \
  X(13, kBroadcastObjectList, "broadcast_object_list") \
  X(14, kGatherObject, "gather_object")             \
  X(15, kScatterObjectList, "scatter_object_list")  \
  X(16, kMonitoredBarrier, "monitored_barrier")     \
  X(17, kWorkWait, "wait")                          \
  X(18, kDdpAllReduce, "ddp_all_reduce")
enum class CollectiveOp : uint8_t {
#define CT_COLLECTIVE_OP_ENUM(code, id, name) id = code,
  COLABTRACE_COLLECTIVE_OPS(CT_COLLECTIVE_OP_ENUM)
#undef CT_COLLECTIVE_OP_ENUM
};
// "all_reduce"..., nullptr for an unknown code. kWorkWait: Work.wait() on an async_op
// call's Work; kDdpAllReduce: DistributedDataParallel's gradient all-reduce inside
// backward() (issued from C++, one per gradient bucket: seqs counts them).
constexpr const char* CollectiveOpName(uint64_t op) {
  switch (op) {
#define CT_COLLECTIVE_OP_NAME(code, id, name) case code: return name;
    COLABTRACE_COLLECTIVE_OPS(CT_COLLECTIVE_OP_NAME)
#undef CT_COLLECTIVE_OP_NAME
    default: return nullptr;
  }
}
// Collective.status.
enum class CollectiveStatus : uint8_t {
  kReturned = 0,  // the call returned (a blocking collective completed)
  kRaised = 1,    // it raised (gloo's timeout, a lost peer, NCCL's watchdog...)
  kIssued = 2,    // async_op=True: it returned a Work; Work.wait() is a kWorkWait of its own
};
// DistGroup.how.
enum class DistGroupHow : uint8_t { kInitProcessGroup = 1, kNewGroup = 2 };
// NcclComm.event: the call that made or ended a communicator, or its async error.
enum class NcclCommEvent : uint8_t {
  kInitRank = 1, kInitRankConfig = 2, kInitRankScalable = 3, kInitAll = 4, kSplit = 5,
  kFinalize = 6, kDestroy = 7, kAbort = 8, kAsyncError = 9, kShrink = 10, kRevoke = 11
};
// NcclCall.dtype: ncclDataType_t's name without its prefix ("float32"), nullptr past the last.
constexpr const char* NcclDataTypeName(uint64_t t) {
  constexpr const char* kNames[] = {"int8",    "uint8",   "int32",   "uint32",   "int64",      "uint64",
                                    "float16", "float32", "float64", "bfloat16", "float8e4m3", "float8e5m2"};
  return t < sizeof(kNames) / sizeof(kNames[0]) ? kNames[t] : nullptr;
}
// NcclCommState.state.
enum class NcclCommStateCode : uint8_t { kLive = 1, kFinalized = 2, kDestroyed = 3, kAborted = 4, kRevoked = 5 };
// PyException.message keeps at most this many bytes of str(exc).
constexpr uint64_t kPyExceptionMessageMax = 512;
// PyException.py_stack keeps at most this many frames (the innermost).
constexpr uint64_t kPyExceptionFrames = 64;
// InFlight.call: what a thread was blocked in.
enum class InFlightCall : uint8_t {
  kOpen = 1, kRead = 2, kStat = 3, kGpuSync = 4, kDlopen = 5, kWait = 6, kBatchWait = 7,
  kWrite = 8, kFsync = 9, kFstat = 10, kCollective = 11
};
constexpr const char* InFlightCallName(uint64_t call) {
  switch (call) {
    case 1: return "open";
    case 2: return "read";
    case 3: return "stat";
    case 4: return "gpu_sync";
    case 5: return "dlopen";
    case 6: return "wait";
    case 7: return "batch_wait";
    case 8: return "write";
    case 9: return "fsync";
    case 10: return "fstat";
    case 11: return "collective";
    default: return nullptr;
  }
}
// GpuSync: synchronising calls that blocked at least this long are recorded.
constexpr uint64_t kGpuSyncRecordNs = 50'000;
enum class WaitApi : uint8_t {
  kWait = 0, kWaitpid = 1, kWait3 = 2, kWait4 = 3, kWaitid = 4, kRun = 5  // kRun: colabtrace run
};
enum class LibApi : uint8_t {
  kStartup = 0,     // mapped before the program ran (executable, DT_NEEDED, preloads)
  kDlopen = 1,      // a dlopen call
  kDlmopen = 2,     // a dlmopen call
  kDependency = 3,  // mapped later because a new object's DT_NEEDED named it
  kDiscovered = 4,  // mapped later by a path the shim does not hook (libc internals)
  kColabtrace = 5,  // a load colabtrace itself made (libcupti for COLABTRACE_CUPTI=1), not the
                    // program's: requester is the shim's path
};
enum class LibUnloadApi : uint8_t { kDlclose = 0, kUnmapped = 1 };
enum class LibCheckWhen : uint8_t { kLaterLoad = 0, kExit = 1 };
enum class ShimNoteCode : uint8_t {
  kBadEnvValue = 1,     // a COLABTRACE_* variable had a bad value (text: the message)
  kInternTableFull = 2, // strings are no longer deduplicated
  kStackUnavailable = 3,
  kSignalChained = 4,   // a fatal signal was passed on to the program's own handler
  // The process runs a CPython whose frames the shim cannot read, so its records carry
  // no Python stack: value (major << 8) | minor, text the interpreter's version
  // ("3.10.13"). Once per process (again in a fork child, whose trace is its own).
  kPythonStacksUnavailable = 5,
  // The same for a version in the layout table whose frames did not fit it (a build the
  // table does not describe): the first stack walk found no code object where the table
  // said; stacks are off from there on.
  kPythonLayoutMismatch = 6,
};

// ---- GPU API ids (GpuAlloc, GpuFree, GpuMemInfo, GpuPool, GpuVmm, GpuModule, GpuError,
// GpuInterpose .api). Codes are frozen. 1-63 runtime, 64-159 driver, 250+ pseudo-APIs.
// The identifiers carry a k prefix because cuda.h #defines some of the bare names
// (cuGetProcAddress -> cuGetProcAddress_v2).
#define COLABTRACE_GPU_APIS(X) \
  X(1, kCudaMalloc, "cudaMalloc")                                      \
  X(2, kCudaFree, "cudaFree")                                          \
  X(3, kCudaMallocAsync, "cudaMallocAsync")                            \
  X(4, kCudaMallocAsync_ptsz, "cudaMallocAsync_ptsz")                  \
  X(5, kCudaFreeAsync, "cudaFreeAsync")                                \
  X(6, kCudaFreeAsync_ptsz, "cudaFreeAsync_ptsz")                      \
  X(7, kCudaMallocFromPoolAsync, "cudaMallocFromPoolAsync")            \
  X(8, kCudaMallocFromPoolAsync_ptsz, "cudaMallocFromPoolAsync_ptsz")  \
  X(9, kCudaMallocManaged, "cudaMallocManaged")                        \
  X(10, kCudaMallocPitch, "cudaMallocPitch")                           \
  X(11, kCudaMallocHost, "cudaMallocHost")                             \
  X(12, kCudaHostAlloc, "cudaHostAlloc")                               \
  X(13, kCudaFreeHost, "cudaFreeHost")                                 \
  X(14, kCudaMemGetInfo, "cudaMemGetInfo")                             \
  X(15, kCudaRuntimeGetVersion, "cudaRuntimeGetVersion")               \
  X(16, kCudaDriverGetVersion, "cudaDriverGetVersion")                 \
  X(17, kCudaLaunchKernel, "cudaLaunchKernel")                         \
  X(18, kCudaLaunchKernel_ptsz, "cudaLaunchKernel_ptsz")               \
  X(19, kCudaLaunchKernelExC, "cudaLaunchKernelExC")                   \
  X(20, kCudaLaunchKernelExC_ptsz, "cudaLaunchKernelExC_ptsz")         \
  X(21, kCudaLaunchCooperativeKernel, "cudaLaunchCooperativeKernel")   \
  X(22, kCudaLaunchCooperativeKernel_ptsz, "cudaLaunchCooperativeKernel_ptsz") \
  X(23, kNvccLaunchKernel, "__cudaLaunchKernel")                       \
  X(24, kNvccLaunchKernel_ptsz, "__cudaLaunchKernel_ptsz")             \
  X(25, kNvccGetKernel, "__cudaGetKernel")                             \
  X(26, kCudaDeviceSynchronize, "cudaDeviceSynchronize")               \
  X(27, kCudaStreamSynchronize, "cudaStreamSynchronize")               \
  X(28, kCudaStreamSynchronize_ptsz, "cudaStreamSynchronize_ptsz")     \
  X(29, kCudaStreamQuery, "cudaStreamQuery")                           \
  X(30, kCudaStreamQuery_ptsz, "cudaStreamQuery_ptsz")                 \
  X(31, kCudaEventSynchronize, "cudaEventSynchronize")                 \
  X(32, kCudaEventQuery, "cudaEventQuery")                             \
  X(33, kCudaMemcpy, "cudaMemcpy")                                     \
  X(34, kCudaMemcpy_ptds, "cudaMemcpy_ptds")                           \
  X(35, kCudaMemcpyAsync, "cudaMemcpyAsync")                           \
  X(36, kCudaMemcpyAsync_ptsz, "cudaMemcpyAsync_ptsz")                 \
  X(37, kCudaGetLastError, "cudaGetLastError")                         \
  X(38, kCudaPeekAtLastError, "cudaPeekAtLastError")                   \
  X(64, kCuMemAlloc_v2, "cuMemAlloc_v2")                               \
  X(65, kCuMemFree_v2, "cuMemFree_v2")                                 \
  X(66, kCuMemAllocManaged, "cuMemAllocManaged")                       \
  X(67, kCuMemAllocPitch_v2, "cuMemAllocPitch_v2")                     \
  X(68, kCuMemAllocAsync, "cuMemAllocAsync")                           \
  X(69, kCuMemAllocAsync_ptsz, "cuMemAllocAsync_ptsz")                 \
  X(70, kCuMemFreeAsync, "cuMemFreeAsync")                             \
  X(71, kCuMemFreeAsync_ptsz, "cuMemFreeAsync_ptsz")                   \
  X(72, kCuMemAllocFromPoolAsync, "cuMemAllocFromPoolAsync")           \
  X(73, kCuMemAllocFromPoolAsync_ptsz, "cuMemAllocFromPoolAsync_ptsz") \
  X(74, kCuMemPoolCreate, "cuMemPoolCreate")                           \
  X(75, kCuMemPoolDestroy, "cuMemPoolDestroy")                         \
  X(76, kCuMemPoolTrimTo, "cuMemPoolTrimTo")                           \
  X(77, kCuMemCreate, "cuMemCreate")                                   \
  X(78, kCuMemRelease, "cuMemRelease")                                 \
  X(79, kCuMemMap, "cuMemMap")                                         \
  X(80, kCuMemUnmap, "cuMemUnmap")                                     \
  X(81, kCuMemAddressReserve, "cuMemAddressReserve")                   \
  X(82, kCuMemAddressFree, "cuMemAddressFree")                         \
  X(83, kCuMemGetInfo_v2, "cuMemGetInfo_v2")                           \
  X(84, kCuMemAllocHost_v2, "cuMemAllocHost_v2")                       \
  X(85, kCuMemHostAlloc, "cuMemHostAlloc")                             \
  X(86, kCuMemFreeHost, "cuMemFreeHost")                               \
  X(87, kCuModuleLoad, "cuModuleLoad")                                 \
  X(88, kCuModuleLoadData, "cuModuleLoadData")                         \
  X(89, kCuModuleLoadDataEx, "cuModuleLoadDataEx")                     \
  X(90, kCuModuleLoadFatBinary, "cuModuleLoadFatBinary")               \
  X(91, kCuLibraryLoadData, "cuLibraryLoadData")                       \
  X(92, kCuLibraryLoadFromFile, "cuLibraryLoadFromFile")               \
  X(93, kCuInit, "cuInit")                                             \
  X(94, kCuGetProcAddress, "cuGetProcAddress")                         \
  X(95, kCuGetProcAddress_v2, "cuGetProcAddress_v2")                   \
  X(96, kCuLaunchKernel, "cuLaunchKernel")                             \
  X(97, kCuLaunchKernel_ptsz, "cuLaunchKernel_ptsz")                   \
  X(98, kCuLaunchKernelEx, "cuLaunchKernelEx")                         \
  X(99, kCuLaunchKernelEx_ptsz, "cuLaunchKernelEx_ptsz")               \
  X(100, kCuLaunchCooperativeKernel, "cuLaunchCooperativeKernel")      \
  X(101, kCuLaunchCooperativeKernel_ptsz, "cuLaunchCooperativeKernel_ptsz") \
  X(102, kCuModuleGetFunction, "cuModuleGetFunction")                 \
  X(103, kCuLibraryGetKernel, "cuLibraryGetKernel")                   \
  X(104, kCuFuncGetName, "cuFuncGetName")                             \
  X(105, kCuKernelGetFunction, "cuKernelGetFunction")                 \
  X(106, kCuCtxSynchronize, "cuCtxSynchronize")                       \
  X(107, kCuCtxSynchronize_v2, "cuCtxSynchronize_v2")                 \
  X(108, kCuStreamSynchronize, "cuStreamSynchronize")                 \
  X(109, kCuStreamSynchronize_ptsz, "cuStreamSynchronize_ptsz")       \
  X(110, kCuStreamQuery, "cuStreamQuery")                             \
  X(111, kCuStreamQuery_ptsz, "cuStreamQuery_ptsz")                   \
  X(112, kCuEventSynchronize, "cuEventSynchronize")                   \
  X(113, kCuEventQuery, "cuEventQuery")                               \
  X(114, kCuMemcpy, "cuMemcpy")                                       \
  X(115, kCuMemcpy_ptds, "cuMemcpy_ptds")                             \
  X(116, kCuMemcpyAsync, "cuMemcpyAsync")                             \
  X(117, kCuMemcpyAsync_ptsz, "cuMemcpyAsync_ptsz")                   \
  X(118, kCuMemcpyHtoD_v2, "cuMemcpyHtoD_v2")                         \
  X(119, kCuMemcpyHtoD_v2_ptds, "cuMemcpyHtoD_v2_ptds")               \
  X(120, kCuMemcpyDtoH_v2, "cuMemcpyDtoH_v2")                         \
  X(121, kCuMemcpyDtoH_v2_ptds, "cuMemcpyDtoH_v2_ptds")               \
  X(122, kCuMemcpyDtoD_v2, "cuMemcpyDtoD_v2")                         \
  X(123, kCuMemcpyDtoD_v2_ptds, "cuMemcpyDtoD_v2_ptds")               \
  X(124, kCuMemcpyHtoDAsync_v2, "cuMemcpyHtoDAsync_v2")               \
  X(125, kCuMemcpyHtoDAsync_v2_ptsz, "cuMemcpyHtoDAsync_v2_ptsz")     \
  X(126, kCuMemcpyDtoHAsync_v2, "cuMemcpyDtoHAsync_v2")               \
  X(127, kCuMemcpyDtoHAsync_v2_ptsz, "cuMemcpyDtoHAsync_v2_ptsz")     \
  X(250, kPoolState, "PoolState")

enum class GpuApi : uint16_t {
#define CT_GPU_API_ENUM(code, id, name) id = code,
  COLABTRACE_GPU_APIS(CT_GPU_API_ENUM)
#undef CT_GPU_API_ENUM
};

// The API's name ("cudaMalloc"), or nullptr for an unknown code.
constexpr const char* GpuApiName(uint64_t code) {
  switch (code) {
#define CT_GPU_API_NAME(code, id, name) \
  case code:                            \
    return name;
    COLABTRACE_GPU_APIS(CT_GPU_API_NAME)
#undef CT_GPU_API_NAME
    default:
      return nullptr;
  }
}

enum class GpuLayer : uint8_t { kRuntime = 0, kDriver = 1 };

// The CUDA errors that corrupt the context (the same numbers at the runtime and the driver
// level): after one, every later CUDA call in the process fails with it. The shim records
// the first one as a GpuFault. 226 contained, 700 illegal address, 702 launch timeout,
// 710 device-side assert, 714 hardware stack error, 715 illegal instruction, 716
// misaligned address, 717 invalid address space, 718 invalid PC, 719 launch failure, 721
// tensor memory leak, 911 external device, 999 unknown.
constexpr bool IsStickyGpuError(int64_t rc) {
  return (rc >= 714 && rc <= 719) || rc == 700 || rc == 702 || rc == 710 || rc == 721 ||
         rc == 226 || rc == 911 || rc == 999;
}
// The driver's "this image has no code this GPU can run" family, which a failed kernel
// lookup records: 200 invalid image, 209 no binary for the GPU, 218 invalid PTX, 221 no
// JIT compiler, 222 unsupported PTX version, 224 JIT compilation disabled. (Not 500
// not found: a program may probe names.)
constexpr bool IsNoImageGpuError(int64_t rc) {
  return rc == 200 || rc == 209 || rc == 218 || rc == 221 || rc == 222 || rc == 224;
}
enum class GpuMemInfoWhy : uint8_t { kFirstUse = 0, kAfterFailure = 1, kProgramAsked = 2 };
enum class GpuInterposeVia : uint8_t {
  kDlsym = 0, kGetProcAddress = 1, kGetProcAddressV2 = 2
};
enum class CuptiStateCode : uint8_t {
  kSubscribed = 1,   // callbacks and activity enabled
  kBackedOff = 2,    // another subscriber (a profiler) holds CUPTI (rc 39), or the program took
                     // it through the shim's hooks before the shim started (rc 0): nothing enabled
  kLoadFailed = 3,   // libcupti could not be loaded or lacks an entry point
  kFailed = 4,       // another CUPTI call failed (rc)
  kFlushed = 5,      // activity buffers flushed (records/dropped since the last state)
  kInjected = 6,     // CUDA called the shim's InitializeInjection
  kHandedOver = 7,   // the program (its profiler) took CUPTI: the shim flushed, disabled its
                     // activity kinds and unsubscribed (rc: cuptiUnsubscribe's result)
};
enum class CuptiModuleEvent : uint8_t {
  kContextCreated = 1, kModuleLoaded = 2, kModuleUnloading = 3
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

// Whether records of type `code` may give way (COLABTRACE_DROPPABLE_TYPES).
constexpr bool IsDroppable(uint8_t code) {
  switch (code) {
#define CT_DROPPABLE(Name) case static_cast<uint8_t>(RecordType::Name):
    COLABTRACE_DROPPABLE_TYPES(CT_DROPPABLE)
#undef CT_DROPPABLE
    return true;
    default:
      return false;
  }
}
template <class R> inline constexpr bool kDroppable = IsDroppable(static_cast<uint8_t>(R::kType));

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
