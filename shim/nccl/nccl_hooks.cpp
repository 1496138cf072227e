// The NCCL module: hooks of libnccl.so.2's API (nccl_hooks.def).
//
// Communicator calls (init in every variant, split, finalize, destroy, abort) are cold: each
// claims or updates the communicator's entry in the NCCL chunk (nccl_table.h) and writes an
// NcclComm record when it returns. A communicator is named alike on every rank by NCCL's own
// commHash (nccl_comm_hash.h): the unique id's hash, or for a split the parent's hash, its
// split count and the color. ncclCommInitAll makes its id inside NCCL, out of sight: its
// communicators are named 0 (they live in one process, so no other rank has to match them).
//
// Collectives and send/recv are the hot path (budget: 100 ns over the real call, tools/bench
// suite nccl): after the real call returns, the communicator's entry (an index probe), its
// sequence number (collectives only, counted when the call succeeded: each call inside a
// group counts), and one slot of the call ring. No record is written per call: the ring, in
// the trace file, is what the reader turns into nccl_call records, killed or not.
//
// NCCL calls its own API inside some calls (ncclBcast is ncclBroadcast): a hook entered while
// another NCCL hook runs on the thread passes straight through, so such a call counts once.
#include <cstring>

#include "clock.h"
#include "gpu/gpu_module.h"
#include "modules.h"
#include "nccl_api.h"
#include "nccl_comm_hash.h"
#include "nccl_table.h"
#include "python/python_stack.h"
#include "real.h"
#include "spin_lock.h"
#include "state.h"
#include "writer.h"

#include "nccl_hooks.def"

namespace colabtrace::shim::nccl {
namespace {

using format::CollectiveOp;
using format::NcclCommEvent;
using format::NcclCommStateCode;

// ---- the real functions -------------------------------------------------------------------
// RTLD_NEXT from the shim finds a libnccl the program linked or loaded RTLD_GLOBAL; one it
// loaded RTLD_LOCAL is known only from the program's own dlsym (NcclInterposeSymbol), which
// stores the real pointer here.
enum Api : int {
#define CT_NCCL_API(name) kApi_##name,
  COLABTRACE_NCCL_HOOKS(CT_NCCL_API)
#undef CT_NCCL_API
  kApis
};
void* g_real[kApis];
constexpr const char* kNames[kApis] = {
#define CT_NCCL_NAME(name) #name,
    COLABTRACE_NCCL_HOOKS(CT_NCCL_NAME)
#undef CT_NCCL_NAME
};

__attribute__((noinline, cold)) void* ResolveSlow(int api) {
  ShimScope scope;  // keeps errno
  void* p = ResolveNext(kNames[api]);
  if (p != nullptr) {
    void* expected = nullptr;
    __atomic_compare_exchange_n(&g_real[api], &expected, p, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
  }
  return __atomic_load_n(&g_real[api], __ATOMIC_ACQUIRE);
}
template <int kApi, class F> inline F Real() {
  void* p = __atomic_load_n(&g_real[kApi], __ATOMIC_ACQUIRE);
  if (__builtin_expect(p == nullptr, 0)) p = ResolveSlow(kApi);
  return reinterpret_cast<F>(p);
}
#define CT_REAL(name) Real<kApi_##name, decltype(&::name)>()

// ncclCommCount and ncclCommUserRank, for a split's child (not hooked: lookups only).
using CountFn = ncclResult_t (*)(ncclComm_t, int*);
CountFn g_count_fn, g_rank_fn;

// ---- per thread and per process ----------------------------------------------------------------
struct NcclThread {
  int depth;  // NCCL hooks on this thread's stack
  int group;  // ncclGroupStart depth
};
constinit thread_local NcclThread t_nccl CT_TLS = {};

SpinLock g_lock;  // taken only inside a ShimScope (cold paths: registering communicators)
uint8_t* g_chunk = nullptr;
uint32_t g_chunk_gen = UINT32_MAX;  // g_generation that g_chunk and g_index belong to
CommIndex g_index;

void Lock() { g_lock.Lock(); }
void Unlock() { g_lock.Unlock(); }

// This process's NCCL chunk (nullptr: no trace). Under the lock.
uint8_t* ChunkLocked() {
  if (g_chunk_gen != g_generation) {
    g_index.Clear();
    g_chunk = NcclChunk();
    __atomic_store_n(&g_chunk_gen, g_generation, __ATOMIC_RELEASE);
  }
  return g_chunk;
}

// The entry of handle: registered at its init, else (a communicator made before the shim saw
// it) registered now, named 0. nullptr when there is no trace or the table is full.
__attribute__((noinline, cold)) NcclCommEntry* RegisterLate(uint64_t handle) {
  ShimScope scope;  // a signal handler on this thread passes through while the lock is held
  if (!scope.entered()) return nullptr;
  Lock();
  NcclCommEntry* e = nullptr;
  if (uint8_t* c = ChunkLocked()) {
    e = g_index.Find(handle);
    if (e == nullptr && (e = ClaimComm(c, handle, 0, 0, -1, -1)) != nullptr) g_index.Put(handle, e);
  }
  Unlock();
  return e;
}
inline NcclCommEntry* EntryOf(ncclComm_t comm) {
  const uint64_t h = reinterpret_cast<uint64_t>(comm);
  if (__builtin_expect(__atomic_load_n(&g_chunk_gen, __ATOMIC_ACQUIRE) == g_generation, 1)) {
    if (NcclCommEntry* e = g_index.Find(h)) return e;
  }
  return comm != nullptr ? RegisterLate(h) : nullptr;
}

// Whether a hook passes straight through: nested in another NCCL hook, or not recording.
inline bool PassThrough() { return t_nccl.depth != 0 || !Recording(); }

// Runs the real call with this thread's NCCL depth raised (NCCL's own calls inside it pass
// through); *t0 is when it began.
template <class Run> inline ncclResult_t RunReal(Run&& run, uint64_t* t0) {
  NcclThread& nt = t_nccl;
  *t0 = Ticks();
  ++nt.depth;
  const ncclResult_t rc = run();
  --nt.depth;
  return rc;
}

// ---- communicators (cold) ------------------------------------------------------------------
struct CommFacts {
  NcclCommEvent event;
  uint64_t comm = 0, parent = 0;
  int32_t nranks = -1, rank = -1, color = 0;
  uint32_t split = 0;
};

// After a communicator call returned: its entry (a new communicator, when `made`) and its record.
void NoteComm(const CommFacts& f, ncclComm_t handle, bool made, ncclResult_t rc, uint64_t t0) {
  ShimScope scope;
  if (!scope.entered()) return;
  const uint64_t h = reinterpret_cast<uint64_t>(handle);
  if (made && handle != nullptr) {
    Lock();
    if (uint8_t* c = ChunkLocked()) {
      if (NcclCommEntry* e = ClaimComm(c, h, f.comm, f.parent, f.nranks, f.rank)) g_index.Put(h, e);
    }
    Unlock();
  }
  format::NcclComm r;
  r.ts = t0;
  r.dur = Ticks() - t0;
  r.event = static_cast<uint64_t>(f.event);
  r.comm = f.comm;
  r.parent = f.parent;
  r.nranks = f.nranks;
  r.rank = f.rank;
  r.color = f.color;
  r.split = f.split;
  r.handle = h;
  r.rc = static_cast<int64_t>(rc);
  Emit(r);
}

// A communicator ended (finalize, destroy, abort) or was revoked: its state, and its record.
void EndComm(NcclCommEvent event, NcclCommStateCode state, ncclComm_t comm, ncclResult_t rc, uint64_t t0) {
  CommFacts f;
  f.event = event;
  if (NcclCommEntry* e = EntryOf(comm)) {
    f.comm = e->comm, f.parent = e->parent, f.nranks = e->nranks, f.rank = e->rank;
    if (rc == ncclSuccess) __atomic_store_n(&e->state, static_cast<uint32_t>(state), __ATOMIC_RELEASE);
  }
  NoteComm(f, comm, false, rc, t0);
}

// Finalize, destroy, abort, revoke. The entry is looked up before the real call frees the
// communicator (a handle NCCL may hand out again at once).
template <class Run>
ncclResult_t EndHook(ncclComm_t comm, NcclCommEvent event, NcclCommStateCode state, Run&& run) {
  if (PassThrough()) return run();
  if (comm != nullptr) EntryOf(comm);
  uint64_t t0;
  const ncclResult_t rc = RunReal(run, &t0);
  if (comm != nullptr) EndComm(event, state, comm, rc, t0);
  return rc;
}

// A call that made one communicator from an id: its facts from the id and the arguments.
template <class Run>
ncclResult_t InitFromId(NcclCommEvent event, ncclComm_t* out, int nranks, int rank, const ncclUniqueId* id,
                        Run&& run) {
  if (PassThrough()) return run();
  uint64_t t0;
  const ncclResult_t rc = RunReal(run, &t0);
  CommFacts f;
  f.event = event;
  f.comm = id != nullptr ? ct_nccl_id_hash(id->internal) : 0;
  f.nranks = nranks;
  f.rank = rank;
  const bool ok = rc == ncclSuccess || rc == ncclInProgress;
  NoteComm(f, ok && out != nullptr ? *out : nullptr, ok, rc, t0);
  return rc;
}

// ---- calls (hot) -------------------------------------------------------------------------------
inline uint8_t DtypeByte(ncclDataType_t t) { return static_cast<uint8_t>(t); }
inline uint8_t RedopByte(int op) { return op >= 0 && op < ncclNumOps ? static_cast<uint8_t>(op) : 255; }

struct CallArgs {
  CollectiveOp op;
  bool collective;  // counts in the communicator's sequence (not send/recv)
  ncclComm_t comm;
  size_t count;
  ncclDataType_t dtype;
  int redop;  // -1 none
  int peer;   // root or peer; -1 none
  cudaStream_t stream;
};

__attribute__((noinline)) void NoteCall(const CallArgs& a, ncclResult_t rc, uint64_t t0) {
  NcclCommEntry* e = EntryOf(a.comm);
  if (e == nullptr) return;
  uint8_t* chunk = __atomic_load_n(&g_chunk, __ATOMIC_ACQUIRE);
  if (chunk == nullptr) return;
  NcclSlot s;
  s.op = static_cast<uint8_t>(a.op);
  s.dtype = DtypeByte(a.dtype);
  s.redop = RedopByte(a.redop);
  const int g = t_nccl.group;
  s.group = static_cast<uint8_t>(g > 255 ? 255 : g);
  s.comm = e->comm;
  s.seq = 0;
  if (rc == ncclSuccess || rc == ncclInProgress) {
    if (a.collective) {
      s.seq = __atomic_add_fetch(&e->colls, 1, __ATOMIC_RELAXED);
    } else {
      __atomic_add_fetch(&e->p2p, 1, __ATOMIC_RELAXED);
    }
  }
  s.count = a.count;
  s.stream = reinterpret_cast<uint64_t>(a.stream);
  s.ticks = t0;
  s.peer = a.peer;
  s.rc = static_cast<int32_t>(rc);
  s.py_stack = __builtin_expect(python::PythonFramesOn(), 0) ? python::LaunchPythonStackId() : 0;
  PushCall(chunk, s);
}

template <class Run> inline ncclResult_t Call(const CallArgs& a, Run&& run) {
  if (PassThrough()) return run();
  uint64_t t0;
  const ncclResult_t rc = RunReal(run, &t0);
  NoteCall(a, rc, t0);
  return rc;
}

// A child communicator that a split or a shrink made: its size and this rank in it, asked of
// NCCL (its own answers, not the program's calls), then its entry and record.
void NoteChild(CommFacts& f, ncclComm_t child, ncclResult_t rc, uint64_t t0) {
  if (child != nullptr) {
    ShimScope scope;
    if (scope.entered()) {
      if (g_count_fn == nullptr) g_count_fn = reinterpret_cast<CountFn>(ResolveNext("ncclCommCount"));
      if (g_rank_fn == nullptr) g_rank_fn = reinterpret_cast<CountFn>(ResolveNext("ncclCommUserRank"));
    }
    ++t_nccl.depth;
    int v = -1;
    if (g_count_fn != nullptr && g_count_fn(child, &v) == ncclSuccess) f.nranks = v;
    if (g_rank_fn != nullptr && g_rank_fn(child, &v) == ncclSuccess) f.rank = v;
    --t_nccl.depth;
  }
  NoteComm(f, child, child != nullptr, rc, t0);
}

}  // namespace
}  // namespace colabtrace::shim::nccl

using namespace colabtrace::shim;
using namespace colabtrace::shim::nccl;
using colabtrace::format::CollectiveOp;
using colabtrace::format::NcclCommEvent;
using colabtrace::format::NcclCommStateCode;

extern "C" {
#pragma GCC visibility push(default)

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
  auto real = CT_REAL(ncclCommInitRank);
  return InitFromId(NcclCommEvent::kInitRank, comm, nranks, rank, &commId,
                    [&] { return real(comm, nranks, commId, rank); });
}
ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                                    ncclConfig_t* config) {
  auto real = CT_REAL(ncclCommInitRankConfig);
  return InitFromId(NcclCommEvent::kInitRankConfig, comm, nranks, rank, &commId,
                    [&] { return real(comm, nranks, commId, rank, config); });
}
// NCCL hashes the first id into the communicator's name.
ncclResult_t ncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId, ncclUniqueId* commIds,
                                      ncclConfig_t* config) {
  auto real = CT_REAL(ncclCommInitRankScalable);
  return InitFromId(NcclCommEvent::kInitRankScalable, newcomm, nranks, myrank, nId > 0 ? commIds : nullptr,
                    [&] { return real(newcomm, nranks, myrank, nId, commIds, config); });
}
// ndev communicators in this process, named 0 (NCCL makes their id inside).
ncclResult_t ncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist) {
  auto real = CT_REAL(ncclCommInitAll);
  if (PassThrough()) return real(comms, ndev, devlist);
  uint64_t t0;
  const ncclResult_t rc = RunReal([&] { return real(comms, ndev, devlist); }, &t0);
  for (int i = 0; i < ndev && comms != nullptr; ++i) {
    CommFacts f;
    f.event = NcclCommEvent::kInitAll;
    f.nranks = ndev;
    f.rank = i;
    NoteComm(f, rc == ncclSuccess ? comms[i] : nullptr, rc == ncclSuccess, rc, t0);
  }
  return rc;
}

// The child's name from the parent's, its split count (counted here: every split call that
// NCCL accepted, NCCL_SPLIT_NOCOLOR included, as NCCL's childCount) and the color.
ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config) {
  auto real = CT_REAL(ncclCommSplit);
  if (PassThrough()) return real(comm, color, key, newcomm, config);
  uint64_t t0;
  const ncclResult_t rc = RunReal([&] { return real(comm, color, key, newcomm, config); }, &t0);
  CommFacts f;
  f.event = NcclCommEvent::kSplit;
  f.color = color;
  const bool ok = rc == ncclSuccess || rc == ncclInProgress;
  if (NcclCommEntry* parent = EntryOf(comm)) {
    f.parent = parent->comm;
    if (ok) f.split = __atomic_add_fetch(&parent->splits, 1, __ATOMIC_RELAXED);
  }
  ncclComm_t child = ok && newcomm != nullptr ? *newcomm : nullptr;
  if (child != nullptr) f.comm = ct_nccl_split_hash(f.parent, static_cast<int32_t>(f.split), color);
  NoteChild(f, child, rc, t0);
  return rc;
}

// NCCL 2.28 names a shrunk communicator as a split with split count 0 and color 0 (a shrink
// leaves the parent's split count alone), so every survivor computes the same id.
ncclResult_t ncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount, ncclComm_t* newcomm,
                            ncclConfig_t* config, int shrinkFlags) {
  auto real = CT_REAL(ncclCommShrink);
  auto run = [&] { return real(comm, excludeRanksList, excludeRanksCount, newcomm, config, shrinkFlags); };
  if (PassThrough()) return run();
  uint64_t t0;
  const ncclResult_t rc = RunReal(run, &t0);
  CommFacts f;
  f.event = NcclCommEvent::kShrink;
  if (NcclCommEntry* parent = EntryOf(comm)) f.parent = parent->comm;
  const bool ok = rc == ncclSuccess || rc == ncclInProgress;
  ncclComm_t child = ok && newcomm != nullptr ? *newcomm : nullptr;
  if (child != nullptr) f.comm = ct_nccl_split_hash(f.parent, 0, 0);
  NoteChild(f, child, rc, t0);
  return rc;
}

ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  auto real = CT_REAL(ncclCommFinalize);
  return EndHook(comm, NcclCommEvent::kFinalize, NcclCommStateCode::kFinalized, [&] { return real(comm); });
}
ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  auto real = CT_REAL(ncclCommDestroy);
  return EndHook(comm, NcclCommEvent::kDestroy, NcclCommStateCode::kDestroyed, [&] { return real(comm); });
}
ncclResult_t ncclCommAbort(ncclComm_t comm) {
  auto real = CT_REAL(ncclCommAbort);
  return EndHook(comm, NcclCommEvent::kAbort, NcclCommStateCode::kAborted, [&] { return real(comm); });
}
// Its work stops; NCCL refuses collectives on it from then (ncclInvalidUsage), and the
// program shrinks it or destroys it.
ncclResult_t ncclCommRevoke(ncclComm_t comm, int revokeFlags) {
  auto real = CT_REAL(ncclCommRevoke);
  return EndHook(comm, NcclCommEvent::kRevoke, NcclCommStateCode::kRevoked, [&] { return real(comm, revokeFlags); });
}

// Polled (PyTorch's watchdog asks every few hundred milliseconds): recorded once per
// communicator, the first time it reports an error.
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  auto real = CT_REAL(ncclCommGetAsyncError);
  if (PassThrough()) return real(comm, asyncError);
  uint64_t t0;
  const ncclResult_t rc = RunReal([&] { return real(comm, asyncError); }, &t0);
  if (rc != ncclSuccess || asyncError == nullptr || *asyncError == ncclSuccess) return rc;
  NcclCommEntry* e = EntryOf(comm);
  if (e == nullptr || __atomic_exchange_n(&e->async_noted, 1ull, __ATOMIC_ACQ_REL) != 0) return rc;
  CommFacts f;
  f.event = NcclCommEvent::kAsyncError;
  f.comm = e->comm, f.parent = e->parent, f.nranks = e->nranks, f.rank = e->rank;
  NoteComm(f, comm, false, *asyncError, t0);
  return rc;
}

ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                           ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  auto real = CT_REAL(ncclAllReduce);
  return Call({CollectiveOp::kAllReduce, true, comm, count, datatype, op, -1, stream},
              [&] { return real(sendbuff, recvbuff, count, datatype, op, comm, stream); });
}
ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                           ncclComm_t comm, cudaStream_t stream) {
  auto real = CT_REAL(ncclBroadcast);
  return Call({CollectiveOp::kBroadcast, true, comm, count, datatype, -1, root, stream},
              [&] { return real(sendbuff, recvbuff, count, datatype, root, comm, stream); });
}
ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                       cudaStream_t stream) {
  auto real = CT_REAL(ncclBcast);
  return Call({CollectiveOp::kBroadcast, true, comm, count, datatype, -1, root, stream},
              [&] { return real(buff, count, datatype, root, comm, stream); });
}
ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                        int root, ncclComm_t comm, cudaStream_t stream) {
  auto real = CT_REAL(ncclReduce);
  return Call({CollectiveOp::kReduce, true, comm, count, datatype, op, root, stream},
              [&] { return real(sendbuff, recvbuff, count, datatype, op, root, comm, stream); });
}
ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
                           ncclComm_t comm, cudaStream_t stream) {
  auto real = CT_REAL(ncclAllGather);
  return Call({CollectiveOp::kAllGather, true, comm, sendcount, datatype, -1, -1, stream},
              [&] { return real(sendbuff, recvbuff, sendcount, datatype, comm, stream); });
}
ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype,
                               ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  auto real = CT_REAL(ncclReduceScatter);
  return Call({CollectiveOp::kReduceScatter, true, comm, recvcount, datatype, op, -1, stream},
              [&] { return real(sendbuff, recvbuff, recvcount, datatype, op, comm, stream); });
}
ncclResult_t ncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                          ncclComm_t comm, cudaStream_t stream) {
  auto real = CT_REAL(ncclAlltoAll);
  return Call({CollectiveOp::kAllToAll, true, comm, count, datatype, -1, -1, stream},
              [&] { return real(sendbuff, recvbuff, count, datatype, comm, stream); });
}
ncclResult_t ncclGather(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                        ncclComm_t comm, cudaStream_t stream) {
  auto real = CT_REAL(ncclGather);
  return Call({CollectiveOp::kGather, true, comm, count, datatype, -1, root, stream},
              [&] { return real(sendbuff, recvbuff, count, datatype, root, comm, stream); });
}
ncclResult_t ncclScatter(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                         ncclComm_t comm, cudaStream_t stream) {
  auto real = CT_REAL(ncclScatter);
  return Call({CollectiveOp::kScatter, true, comm, count, datatype, -1, root, stream},
              [&] { return real(sendbuff, recvbuff, count, datatype, root, comm, stream); });
}
ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                      cudaStream_t stream) {
  auto real = CT_REAL(ncclSend);
  return Call({CollectiveOp::kSend, false, comm, count, datatype, -1, peer, stream},
              [&] { return real(sendbuff, count, datatype, peer, comm, stream); });
}
ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                      cudaStream_t stream) {
  auto real = CT_REAL(ncclRecv);
  return Call({CollectiveOp::kRecv, false, comm, count, datatype, -1, peer, stream},
              [&] { return real(recvbuff, count, datatype, peer, comm, stream); });
}

// The group depth a call is made at (NcclCall.group); nothing is recorded for these.
ncclResult_t ncclGroupStart(void) {
  const ncclResult_t rc = CT_REAL(ncclGroupStart)();
  if (rc == ncclSuccess && t_nccl.depth == 0) ++t_nccl.group;
  return rc;
}
ncclResult_t ncclGroupEnd(void) {
  const ncclResult_t rc = CT_REAL(ncclGroupEnd)();
  if (t_nccl.depth == 0 && t_nccl.group > 0) --t_nccl.group;
  return rc;
}

#pragma GCC visibility pop
}  // extern "C"

namespace colabtrace::shim {

// The program's dlsym of a hooked NCCL name: the hook, with the real function it found kept
// for it (the first one: one libnccl per process).
void* NcclInterposeSymbol(const char* name, void* real) {
  if (real == nullptr || gpu::IsShimText(real)) return real;
  static void* const kHooks[] = {
#define CT_NCCL_HOOK_ADDRESS(n) reinterpret_cast<void*>(&::n),
      COLABTRACE_NCCL_HOOKS(CT_NCCL_HOOK_ADDRESS)
#undef CT_NCCL_HOOK_ADDRESS
  };
  for (int i = 0; i < kApis; ++i) {
    if (std::strcmp(kNames[i], name) != 0) continue;
    void* expected = nullptr;
    __atomic_compare_exchange_n(&g_real[i], &expected, real, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    return kHooks[i];
  }
  return real;
}

}  // namespace colabtrace::shim
