// The finding catalogue's table. Each row: the id, its area, the default severity
// (shared/PRODUCT.md's, in parentheses there), whether a rule may give another, a title
// and the advice every finding of the id starts from.
#include "core/finding_catalog.h"

#include <array>

namespace colabtrace::analyzer {
namespace {

using enum FindingId;
using A = FindingArea;
using S = Severity;

constexpr std::array<FindingSpec, kFindingIdCount> kCatalog = {{
    // ---- process and host (process/rules/) ----
    {kProcKilled, "proc.killed", A::kProcess, S::kError, false, "Process killed",
     "Something sent SIGKILL: the OOM killer (check `dmesg` and the cgroup's "
     "memory.events), a job timeout, or the notebook runtime restarting. If "
     "memory was high, reduce DataLoader workers or batch size."},
    {kProcHang, "proc.hang", A::kProcess, S::kError, false, "Job hung",
     "The job stopped making progress: see what each process was blocked in. A DataLoader "
     "worker blocked on a network or FUSE mount: copy the data to local disk, and give the "
     "DataLoader a timeout (DataLoader(timeout=...)) so that a stuck read raises instead of "
     "hanging. Run under `colabtrace run --hang-timeout SECONDS` to end such a job by itself "
     "with every thread's Python stack."},
    {kProcFatalSignal, "proc.fatal-signal", A::kProcess, S::kError, false, "Process crashed",
     "A native crash. The stack names the library that crashed; a mismatched "
     "extension or CUDA library build is a common cause (see abi.* findings)."},
    {kProcPythonException, "proc.python-exception", A::kProcess, S::kError, true,
     "Uncaught Python exception",
     "The process ended on a Python exception nobody caught: python_stack starts at the "
     "innermost line of the program's own code (raised_in: the library frames inside it). "
     "Fix the cause the message names, or catch the exception where the program can go "
     "on."},
    {kHostMemoryPressure, "host.memory-pressure", A::kHost, S::kWarning, false,
     "Host memory nearly exhausted",
     "Host memory is nearly exhausted, so the OOM killer is next. Use fewer DataLoader "
     "workers or a smaller batch/prefetch_factor, keep file paths rather than loaded "
     "data in the dataset, and free large arrays you no longer need."},
    {kHostShmSmall, "host.shm-small", A::kHost, S::kWarning, false, "/dev/shm too small",
     "DataLoader workers pass batches through /dev/shm. Enlarge it (docker run "
     "--shm-size=8g, or remount the tmpfs larger) or set num_workers=0."},

    // ---- GPU memory (gpu/rules/) ----
    {kGpuOom, "gpu.oom", A::kGpu, S::kError, false, "Out of GPU memory",
     "This process's own allocations fill the device. Reduce the batch size (or sequence "
     "length, model size), free what is no longer needed (del tensors, then "
     "torch.cuda.empty_cache() between experiments in a notebook), and use mixed "
     "precision or activation checkpointing."},
    {kGpuOomFragmentation, "gpu.oom-fragmentation", A::kGpu, S::kError, false,
     "Out of GPU memory through fragmentation",
     "The request is larger than any free piece. With PyTorch, set "
     "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True before the first CUDA call (in the "
     "shell, or before `import torch`) so segments grow in place instead of leaving gaps; "
     "or limit splitting with max_split_size_mb. Allocate the largest buffers first, keep "
     "tensor shapes uniform, and call torch.cuda.empty_cache() between phases or "
     "experiments. The segments listed hold the gaps: their stacks show who keeps them. "
     "(On real GPUs the driver maps scattered pages, so a raw cudaMalloc seldom fails this "
     "way; the gaps that matter are inside a framework's cached segments.)"},
    {kGpuLeak, "gpu.leak", A::kGpu, S::kWarning, false, "GPU memory keeps growing",
     "These sites allocate again and again after warm-up and never free: free what you "
     "allocate (cudaFree, or drop the last reference to a tensor: a list that collects "
     "losses or outputs without .item()/.detach() keeps them alive). Memory a framework "
     "cache merely holds at exit is not counted here (held_at_exit_bytes)."},
    {kGpuChurn, "gpu.churn", A::kGpu, S::kWarning, false, "Raw GPU allocation churn",
     "Each raw cudaMalloc/cudaFree can synchronise the device and costs far more than reusing "
     "memory. Reuse buffers, allocate once outside the loop, or use a caching or "
     "stream-ordered allocator (cudaMallocAsync reuses freed memory from a pool)."},
    {kGpuDeviceFault, "gpu.device-fault", A::kGpu, S::kError, false, "GPU device fault",
     "Confirm with CUDA_LAUNCH_BLOCKING=1 (each launch then reports its own kernel's error), "
     "compute-sanitizer --tool memcheck (names the faulting access and thread), or "
     "CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1 (a GPU core dump to open in cuda-gdb)."},
    {kGpuNearCapacity, "gpu.near-capacity", A::kGpu, S::kWarning, false,
     "GPU memory near capacity",
     "Less than 5% headroom: a larger batch, a longer sequence or some fragmentation will "
     "tip it into an out-of-memory error. Keep the peak under about 90%: a smaller batch, "
     "expandable_segments:True, or gradient accumulation."},
    {kGpuAllocatorConfigIgnored, "gpu.allocator-config-ignored", A::kGpu, S::kWarning, false,
     "Allocator setting ignored",
     "Allocator settings are read once, when the framework first uses CUDA. Set them in the "
     "shell or job spec, or at the very top of the script before importing torch, "
     "tensorflow or jax (os.environ[...] after that, or after the first CUDA call, is too "
     "late); then check that the calls changed as expected in a new trace."},
    {kGpuLaunchFailed, "gpu.launch-failed", A::kGpu, S::kError, false, "Kernel launch failed",
     "Check the launch configuration (grid, block, shared memory) and the "
     "error: with CUDA_LAUNCH_BLOCKING=1 an asynchronous error is reported by "
     "the launch that caused it."},
    {kGpuCoverageIncomplete, "gpu.coverage-incomplete", A::kGpu, S::kInfo, false,
     "GPU memory trace may be incomplete",
     "Frees of unseen addresses mean allocations happened before tracing started or through "
     "a path the shim does not see (counts and leaks may be off by those). A runtime layer "
     "that is bypassed only loses the runtime API names; the bytes are still counted at the "
     "driver level."},

    // ---- libraries and ABI (abi/rules/) ----
    {kAbiDuplicateLibrary, "abi.duplicate-library", A::kAbi, S::kError, false,
     "One library loaded from two files",
     "Two copies of one library are mapped in one process; each symbol binds to whichever "
     "copy the loader searched first, so code built against one copy may run the other. "
     "This usually comes from a pip wheel (site-packages/nvidia/...) plus a system or "
     "toolkit copy reached through LD_LIBRARY_PATH or an absolute dlopen: remove the "
     "extra directory from LD_LIBRARY_PATH (or pin wheels so one copy serves every user), "
     "then restart the runtime."},
    {kAbiMixedCudaMajors, "abi.mixed-cuda-majors", A::kAbi, S::kError, false,
     "Two CUDA major versions in one process",
     "One process can only use one CUDA major version: a library built for CUDA 12 needs "
     "libcudart.so.12 and its companions and fails or misbehaves next to CUDA 13 ones. "
     "Install wheels of one CUDA line only (all *-cu12 or all *-cu13: torch, jax and the "
     "nvidia-* packages), remove the other toolkit's directory from LD_LIBRARY_PATH, and "
     "restart the runtime."},
    {kAbiDriverTooOld, "abi.driver-too-old", A::kAbi, S::kError, false,
     "CUDA driver older than the runtime",
     "The installed NVIDIA driver supports an older CUDA than the libraries this process "
     "loaded. Install wheels built for a CUDA major the driver supports (e.g. torch "
     "+cu12x for a CUDA 12 driver; `nvidia-smi` shows the driver's CUDA version), or "
     "upgrade the driver (on data-center GPUs the cuda-compat package also works)."},
    {kAbiNoKernelImage, "abi.no-kernel-image", A::kAbi, S::kError, false,
     "No kernel image for this GPU",
     "The calling library has no cubin for this GPU and no PTX the driver can JIT. Install "
     "a build that supports this GPU's compute capability (check with "
     "`colabtrace report --gpu-arch sm_XY`)."},
    {kAbiLoadFailed, "abi.load-failed", A::kAbi, S::kError, true, "Library load failed",
     "The library was not found. Install it, then restart the runtime."},
    {kAbiSymbolVersionMissing, "abi.symbol-version-missing", A::kAbi, S::kError, false,
     "Needed symbol version missing",
     "An older copy of the provider was loaded than the one the library was built against. "
     "Install a newer provider, or use a build of the requester made for the older one; "
     "then restart the runtime."},
    {kAbiStaleLibrary, "abi.stale-library", A::kAbi, S::kWarning, false,
     "Library changed on disk during the run",
     "The process still runs the old copy, while new processes (and later loads of its "
     "companions) get the new one, so versions mix. This is what `pip install` into a "
     "running notebook does: restart the runtime after installing packages."},
    {kAbiSystemVsPip, "abi.system-vs-pip", A::kAbi, S::kWarning, false,
     "One library family from pip and from the system",
     "Parts of one library family come from a pip wheel and from a system install, which "
     "are usually different versions. On Colab this is typically LD_LIBRARY_PATH pointing "
     "at /usr/local/cuda or /usr/lib64-nvidia: remove the system directory from "
     "LD_LIBRARY_PATH (or uninstall the wheel) so that one copy serves everything, then "
     "restart the runtime."},

    // ---- file I/O (io/rules/) ----
    {kIoSmallFiles, "io.small-files", A::kIo, S::kWarning, false, "Many small files read",
     "Per-file open and lookup latency dominates when samples are small files. Pack them "
     "into a few large shards (100 MB or more): tar shards read with WebDataset, "
     "TFRecord, or an LMDB/HDF5 file"},
    {kIoNetworkFilesystem, "io.network-filesystem", A::kIo, S::kWarning, false,
     "Data read from a network filesystem",
     "Every open, stat and read on this mount crosses a network or a FUSE daemon. Stage "
     "the dataset on local disk before training (copy or rsync it, or unpack one "
     "archive, to /content or /tmp), or read it as a few large shards (tar/WebDataset, "
     "TFRecord) so the latency is paid once per shard, not per sample."},
    {kIoSmallReads, "io.small-reads", A::kIo, S::kInfo, false, "Small reads on large files",
     "Each small read is a system call (and on network storage a round trip). Read "
     "large files in bigger blocks: open with a larger buffer (open(path, 'rb', "
     "buffering=1<<20)), read whole records at once, or memory-map the file (numpy.load "
     "with mmap_mode, np.memmap)."},
    {kIoReread, "io.reread", A::kIo, S::kInfo, false, "Files re-read from slow storage",
     "Each epoch fetches the same files from slow storage again. Copy the dataset to "
     "local disk once, or cache decoded samples in memory or on local disk after the "
     "first epoch (e.g. a cached Dataset, or persistent_workers with an in-worker cache)."},
    {kIoMetadataHeavy, "io.metadata-heavy", A::kIo, S::kInfo, false,
     "File lookups outnumber reads",
     "The program looks files up far more often than it reads them (os.path.exists/isfile "
     "checks, glob or os.walk every epoch, listdir in __getitem__). Build the file list "
     "once, keep it (or an index file) in memory, and drop per-sample existence checks; "
     "on network storage each lookup is a round trip."},
    {kIoErrors, "io.errors", A::kIo, S::kWarning, false, "File I/O errors",
     "Many opens failed on data paths (missing files or permissions): check "
     "the dataset's file list against what is on disk, and the paths' base "
     "directory (a relative path depends on the working directory)."},

    // ---- steps (perf/rules/) ----
    {kPerfInputBound, "perf.input-bound", A::kPerf, S::kWarning, true,
     "Training waits for its input",
     "The step loop waits for its next batch. Find what the DataLoader workers wait for "
     "(the evidence splits their time into file I/O, CPU and waiting) and fix that first: "
     "faster storage or fewer, larger files for I/O, more workers or lighter transforms for "
     "CPU."},
    {kPerfStepSlowdown, "perf.step-slowdown", A::kPerf, S::kWarning, false,
     "Steps got slower during the run",
     "Later steps take at least twice as long as earlier ones. The evidence names the part "
     "of the step that grew: input wait or file I/O latency (the page cache ran out, or the "
     "storage slowed down), GPU synchronisation, or host compute."},
    {kPerfGpuUnused, "perf.gpu-unused", A::kPerf, S::kWarning, false,
     "Training runs on the CPU although a GPU is there",
     "The process trained without ever initialising CUDA, on a machine with an NVIDIA GPU: "
     "a slow fallback that looks correct. Install the framework's CUDA build (not a +cpu "
     "wheel), leave CUDA_VISIBLE_DEVICES unset or non-empty, unset JAX_PLATFORMS=cpu, and "
     "move the model and batches to the GPU (.to(\"cuda\"))."},

    // ---- multi-rank jobs (dist/rules/) ----
    {kDistFirstFailure, "dist.first-failure", A::kDist, S::kError, false,
     "One rank broke the job",
     "Look at this rank first: its own finding (proc.killed, proc.fatal-signal, or its exit) "
     "says why it stopped. The other ranks' ends (a lost connection, a collective timeout, "
     "the launcher's SIGTERM) followed from it and are listed as its consequences; "
     "torchrun's \"Root Cause (first observed failure)\" names the first exit the launcher "
     "saw, which is often one of them."},
    {kDistHang, "dist.hang", A::kDist, S::kError, false,
     "One rank never entered the collective the others waited in",
     "The ranks named here stopped making progress (blocked in the call named, or gone) "
     "while the others waited for them in a collective; the waiting ranks' timeouts and "
     "exits followed and are listed as its consequences. Fix what the blocked rank was "
     "inside (a dead mount, a stuck read, a data loader that never returns); a rank that "
     "left its loop early (uneven data) needs every rank to run the same number of steps "
     "(torch's Join, or drop_last)."},
    {kDistCollectiveMismatch, "dist.collective-mismatch", A::kDist, S::kError, false,
     "Ranks called different collectives at one point",
     "At the sequence number named, the odd ranks called another collective (or another "
     "size or dtype) than the rest: gloo and NCCL match collectives by order, so the job "
     "hangs or mixes data. Call collectives on every rank in the same order: a metric "
     "all_reduce inside `if rank == 0:` is the usual cause."},
    {kDistStraggler, "dist.straggler", A::kDist, S::kWarning, false,
     "One rank makes every step slow",
     "The other ranks spend much of each step waiting for this one in their collectives, so "
     "the whole job runs at its pace. Its split says where its time goes: file I/O on a slow "
     "mount (stage its data locally, as the others read theirs), input wait (more DataLoader "
     "workers on it), GPU synchronisation or compute (a slower GPU or a busier host). The "
     "waiting ranks are not input-bound: they wait for this rank."},
}};

constexpr bool InIdOrder() {
  for (size_t i = 0; i < kCatalog.size(); ++i) {
    if (static_cast<size_t>(kCatalog[i].id) != i) return false;
  }
  return true;
}
static_assert(InIdOrder(), "kCatalog's rows must be in FindingId order");

}  // namespace

std::string_view FindingAreaName(FindingArea a) {
  switch (a) {
    case FindingArea::kProcess: return "proc";
    case FindingArea::kHost: return "host";
    case FindingArea::kGpu: return "gpu";
    case FindingArea::kAbi: return "abi";
    case FindingArea::kIo: return "io";
    case FindingArea::kPerf: return "perf";
    case FindingArea::kDist: return "dist";
  }
  return "";
}

std::span<const FindingSpec> FindingCatalog() { return kCatalog; }

const FindingSpec& SpecOf(FindingId id) { return kCatalog[static_cast<size_t>(id)]; }

const FindingSpec* FindFindingSpec(std::string_view name) {
  for (const FindingSpec& s : kCatalog) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

}  // namespace colabtrace::analyzer
