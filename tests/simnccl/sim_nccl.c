/* The simulated libnccl.so.2 (README.md): communicators whose ranks are separate processes, joined
 * through a rendezvous file named by the communicator's hash; collectives and send/recv that run on
 * the simulated CUDA runtime's streams and complete only when every rank (the peer, for send/recv)
 * has entered them. No data moves: the simulated device memory holds none.
 *
 * Each API function is defined once as pnccl<Name> (exported, global) with nccl<Name> a weak alias,
 * the binding of the real library (`nm -D`: T pncclX, W ncclX). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <nccl.h>

#include "nccl_comm_hash.h" /* shim/nccl: NCCL's commHash */
#include "sim_tool.h" /* tests/simcuda: the stream engine interface */

#define API __attribute__((visibility("default")))
#define ALIAS(name) extern __typeof__(p##name) name __attribute__((weak, alias("p" #name), visibility("default")));

/* ---- the rendezvous file, shared by the ranks of one communicator ---------------------------- */
#define SN_MAX_RANKS 64
#define SN_MAGIC 0x4c43434e4d4953ull /* "SIMNCCL" */
enum { SN_JOINED = 1, SN_ABORTED = 2, SN_LEFT = 3 };
typedef struct sn_rank {
  uint64_t coll;       /* collectives entered */
  int32_t pid, state;  /* SN_* */
  uint32_t split_seq;  /* the split (the parent's count) whose color and key it published */
  uint32_t split_done; /* the split it has read everyone's colors for */
  int32_t color, key;
} sn_rank;
typedef struct sn_shared {
  uint64_t magic;
  int32_t nranks;
  uint32_t left; /* ranks that destroyed or aborted it; the last one unlinks the file */
  sn_rank r[SN_MAX_RANKS];
  uint64_t sends[SN_MAX_RANKS][SN_MAX_RANKS]; /* [src][dst]: sends src entered to dst */
  uint64_t recvs[SN_MAX_RANKS][SN_MAX_RANKS]; /* [dst][src]: receives dst entered from src */
} sn_shared;

#define SN_COMM_MAGIC 0x636f6d6du
struct ncclComm {
  uint32_t magic; /* SN_COMM_MAGIC while alive */
  uint64_t hash;  /* NCCL's commHash (nccl_comm_hash.h) */
  int nranks, rank, dev;
  sn_shared *sh;
  char path[256];
  uint32_t child_count; /* splits made from it (NCCL's childCount) */
  int finalized, aborted, revoked;
  uint64_t coll;        /* collectives entered (this rank) */
  uint64_t sent[SN_MAX_RANKS], received[SN_MAX_RANKS];
};

static uint64_t load64(const uint64_t *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
static int32_t load32(const int32_t *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
static void pause_tick(void) {
  const struct timespec tick = {0, 200000};
  nanosleep(&tick, NULL);
}

static const char *rendezvous_dir(void) {
  const char *d = getenv("SIMNCCL_DIR");
  if (!d || !*d) d = getenv("TMPDIR");
  return d && *d ? d : "/tmp";
}

/* ---- work on streams (the driver polls busy() in its synchronisations) ------------------------ */
enum { OP_COLL = 0, OP_SEND = 1, OP_RECV = 2 };
typedef struct sn_op {
  void *stream; /* NULL: the default streams */
  struct ncclComm *comm;
  int kind, peer;
  uint64_t n; /* the collective's (or this peer's send/recv) number, from 1 */
} sn_op;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static sn_op *g_ops;
static size_t g_nops, g_capops;
static int g_attached;

static void *stream_key(cudaStream_t s) {
  return s == cudaStreamLegacy || s == cudaStreamPerThread ? NULL : (void *)s;
}

/* Whether op has completed: every rank entered the collective, or the peer its side. A
 * communicator aborted here drops its work, as NCCL's abort makes its kernels return. */
static int op_done(const sn_op *o) {
  const struct ncclComm *c = o->comm;
  if (c->aborted) return 1;
  if (o->kind == OP_SEND) return load64(&c->sh->recvs[o->peer][c->rank]) >= o->n;
  if (o->kind == OP_RECV) return load64(&c->sh->sends[o->peer][c->rank]) >= o->n;
  for (int r = 0; r < c->nranks; r++)
    if (load64(&c->sh->r[r].coll) < o->n) return 0;
  return 1;
}

static int engine_busy(void *stream, int any) {
  pthread_mutex_lock(&g_mu);
  size_t kept = 0;
  int busy = 0;
  for (size_t i = 0; i < g_nops; i++) {
    if (op_done(&g_ops[i])) continue;
    busy |= any || g_ops[i].stream == stream;
    g_ops[kept++] = g_ops[i];
  }
  g_nops = kept;
  pthread_mutex_unlock(&g_mu);
  return busy;
}

/* Whether comm still has work on any stream. */
static int comm_busy(struct ncclComm *c) {
  pthread_mutex_lock(&g_mu);
  int busy = 0;
  for (size_t i = 0; i < g_nops && !busy; i++) busy = g_ops[i].comm == c && !op_done(&g_ops[i]);
  pthread_mutex_unlock(&g_mu);
  return busy;
}

static ncclResult_t enqueue(struct ncclComm *c, int kind, int peer, uint64_t n, cudaStream_t s) {
  pthread_mutex_lock(&g_mu);
  if (g_nops == g_capops) {
    size_t cap = g_capops ? 2 * g_capops : 64;
    sn_op *v = realloc(g_ops, cap * sizeof *v);
    if (!v) {
      pthread_mutex_unlock(&g_mu);
      return ncclSystemError;
    }
    g_ops = v, g_capops = cap;
  }
  g_ops[g_nops++] = (sn_op){stream_key(s), c, kind, peer, n};
  pthread_mutex_unlock(&g_mu);
  return ncclSuccess;
}

/* The simulated driver's engine interface: without it (the real driver) nothing can run. */
static ncclResult_t attach_engine(void) {
  if (__atomic_load_n(&g_attached, __ATOMIC_ACQUIRE)) return ncclSuccess;
  void *drv = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  void (*attach)(sim_engine_busy_fn) =
      drv ? (void (*)(sim_engine_busy_fn))dlsym(drv, "simcuda_debug_stream_engine_attach") : NULL;
  if (!attach) return ncclUnhandledCudaError;
  attach(engine_busy);
  __atomic_store_n(&g_attached, 1, __ATOMIC_RELEASE);
  return ncclSuccess;
}

static int current_device(void) {
  cudaError_t (*get)(int *) = (cudaError_t(*)(int *))dlsym(RTLD_DEFAULT, "cudaGetDevice");
  int d = 0;
  if (get && get(&d) != cudaSuccess) d = 0;
  return d;
}

/* ---- errors ---------------------------------------------------------------------------------- */
static __thread char t_last_error[256];
static void set_error(const char *fmt, const char *what) { snprintf(t_last_error, sizeof t_last_error, fmt, what); }

API const char *pncclGetErrorString(ncclResult_t code) {
  switch (code) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
  }
}
ALIAS(ncclGetErrorString)
API const char *pncclGetLastError(ncclComm_t comm) {
  (void)comm;
  return t_last_error;
}
ALIAS(ncclGetLastError)

API ncclResult_t pncclGetVersion(int *version) {
  if (!version) return ncclInvalidArgument;
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}
ALIAS(ncclGetVersion)

/* An id names its rendezvous by its hash: a magic, the creating pid, 8 random bytes and the time. */
API ncclResult_t pncclGetUniqueId(ncclUniqueId *out) {
  if (!out) {
    set_error("%s: NULL argument", "ncclGetUniqueId");
    return ncclInvalidArgument;
  }
  memset(out, 0, sizeof *out);
  const uint64_t magic = SN_MAGIC;
  const int32_t pid = getpid();
  uint64_t rnd = 0;
  if (getrandom(&rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) return ncclSystemError;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  memcpy(out->internal, &magic, 8);
  memcpy(out->internal + 8, &pid, 4);
  memcpy(out->internal + 16, &rnd, 8);
  memcpy(out->internal + 24, &ts, sizeof ts);
  return ncclSuccess;
}
ALIAS(ncclGetUniqueId)

/* ---- communicators ---------------------------------------------------------------------------- */
static int valid_comm(const struct ncclComm *c) { return c && c->magic == SN_COMM_MAGIC; }

/* Maps the rendezvous file of communicator `hash` (creating it if first) and takes slot `rank`. */
static ncclResult_t comm_open(uint64_t hash, int nranks, int rank, int dev, struct ncclComm **out) {
  if (nranks < 1 || nranks > SN_MAX_RANKS || rank < 0 || rank >= nranks) {
    set_error("%s: bad nranks or rank", "ncclCommInitRank");
    return ncclInvalidArgument;
  }
  ncclResult_t r = attach_engine();
  if (r != ncclSuccess) return r;
  struct ncclComm *c = calloc(1, sizeof *c);
  if (!c) return ncclSystemError;
  snprintf(c->path, sizeof c->path, "%s/simnccl-%016llx", rendezvous_dir(), (unsigned long long)hash);
  int fd = open(c->path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) {
    free(c);
    return ncclSystemError;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || (st.st_size < (off_t)sizeof(sn_shared) && ftruncate(fd, sizeof(sn_shared)) != 0)) {
    close(fd);
    free(c);
    return ncclSystemError;
  }
  c->sh = mmap(NULL, sizeof(sn_shared), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (c->sh == MAP_FAILED) {
    free(c);
    return ncclSystemError;
  }
  int32_t expected = 0;
  __atomic_compare_exchange_n(&c->sh->nranks, &expected, nranks, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
  if (load32(&c->sh->nranks) != nranks || load32(&c->sh->r[rank].state) != 0) {
    munmap(c->sh, sizeof(sn_shared));
    free(c);
    set_error("%s: nranks differs between ranks, or the rank joined twice", "ncclCommInitRank");
    return ncclInvalidUsage;
  }
  c->magic = SN_COMM_MAGIC;
  c->hash = hash;
  c->nranks = nranks, c->rank = rank, c->dev = dev;
  c->sh->r[rank].pid = getpid();
  __atomic_store_n(&c->sh->r[rank].state, SN_JOINED, __ATOMIC_RELEASE);
  *out = c;
  return ncclSuccess;
}

/* Blocks until every rank joined (as NCCL's bootstrap does; forever if one never comes). */
static void comm_wait_joined(struct ncclComm *c) {
  for (int r = 0; r < c->nranks; r++)
    while (load32(&c->sh->r[r].state) == 0) pause_tick();
  __atomic_store_n(&c->sh->magic, SN_MAGIC, __ATOMIC_RELEASE);
}

static ncclResult_t init_rank(ncclComm_t *comm, int nranks, const ncclUniqueId *id, int rank, ncclConfig_t *config) {
  if (!comm || !id) {
    set_error("%s: NULL argument", "ncclCommInitRank");
    return ncclInvalidArgument;
  }
  *comm = NULL;
  if (config && config->magic != 0xcafebeef) {
    set_error("%s: config not initialized with NCCL_CONFIG_INITIALIZER", "ncclCommInitRankConfig");
    return ncclInvalidArgument;
  }
  struct ncclComm *c;
  ncclResult_t r = comm_open(ct_nccl_id_hash(id->internal), nranks, rank, current_device(), &c);
  if (r != ncclSuccess) return r;
  comm_wait_joined(c);
  *comm = c;
  return ncclSuccess;
}

API ncclResult_t pncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank) {
  return init_rank(comm, nranks, &commId, rank, NULL);
}
ALIAS(ncclCommInitRank)
API ncclResult_t pncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank,
                                         ncclConfig_t *config) {
  return init_rank(comm, nranks, &commId, rank, config);
}
ALIAS(ncclCommInitRankConfig)
/* NCCL hashes the first of the ids into the communicator's hash. */
API ncclResult_t pncclCommInitRankScalable(ncclComm_t *newcomm, int nranks, int myrank, int nId,
                                           ncclUniqueId *commIds, ncclConfig_t *config) {
  if (nId < 1 || !commIds) return ncclInvalidArgument;
  return init_rank(newcomm, nranks, &commIds[0], myrank, config);
}
ALIAS(ncclCommInitRankScalable)

/* One process, ndev ranks (devlist[i], or device i). */
API ncclResult_t pncclCommInitAll(ncclComm_t *comms, int ndev, const int *devlist) {
  if (!comms || ndev < 1) return ncclInvalidArgument;
  ncclUniqueId id;
  ncclResult_t r = pncclGetUniqueId(&id);
  if (r != ncclSuccess) return r;
  const uint64_t hash = ct_nccl_id_hash(id.internal);
  for (int i = 0; i < ndev; i++) {
    if ((r = comm_open(hash, ndev, i, devlist ? devlist[i] : i, &comms[i])) != ncclSuccess) return r;
  }
  for (int i = 0; i < ndev; i++) comm_wait_joined(comms[i]);
  return ncclSuccess;
}
ALIAS(ncclCommInitAll)

/* Collective over the parent: every rank publishes its color and key, reads everyone's, and the
 * ranks of one color form a child ordered by (key, parent rank), whose hash NCCL derives from the
 * parent's hash, the parent's split count and the color (nccl_comm_hash.h). */
API ncclResult_t pncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm, ncclConfig_t *config) {
  if (!valid_comm(comm) || !newcomm) return ncclInvalidArgument;
  if (color < 0 && color != NCCL_SPLIT_NOCOLOR) return ncclInvalidArgument;
  if (config && config->magic != 0xcafebeef) return ncclInvalidArgument;
  *newcomm = NULL;
  const uint32_t k = ++comm->child_count;
  sn_rank *me = &comm->sh->r[comm->rank];
  me->color = color, me->key = key;
  __atomic_store_n(&me->split_seq, k, __ATOMIC_RELEASE);
  int members[SN_MAX_RANKS], keys[SN_MAX_RANKS], n = 0;
  for (int r = 0; r < comm->nranks; r++) {
    sn_rank *o = &comm->sh->r[r];
    while (__atomic_load_n(&o->split_seq, __ATOMIC_ACQUIRE) < k) pause_tick();
    if (color != NCCL_SPLIT_NOCOLOR && o->color == color) members[n] = r, keys[n++] = o->key;
  }
  __atomic_store_n(&me->split_done, k, __ATOMIC_RELEASE);
  for (int r = 0; r < comm->nranks; r++)
    while (__atomic_load_n(&comm->sh->r[r].split_done, __ATOMIC_ACQUIRE) < k) pause_tick();
  if (color == NCCL_SPLIT_NOCOLOR) return ncclSuccess;
  int myrank = 0;
  for (int i = 0; i < n; i++)
    if (keys[i] < key || (keys[i] == key && members[i] < comm->rank)) myrank++;
  struct ncclComm *c;
  ncclResult_t r = comm_open(ct_nccl_split_hash(comm->hash, (int32_t)k, color), n, myrank, comm->dev, &c);
  if (r != ncclSuccess) return r;
  comm_wait_joined(c);
  *newcomm = c;
  return ncclSuccess;
}
ALIAS(ncclCommSplit)

/* Waits (blocking communicators) until its work on every stream has completed. */
API ncclResult_t pncclCommFinalize(ncclComm_t comm) {
  if (!valid_comm(comm)) return ncclInvalidArgument;
  if (comm->finalized) return ncclInvalidUsage;
  while (comm_busy(comm)) pause_tick();
  comm->finalized = 1;
  return ncclSuccess;
}
ALIAS(ncclCommFinalize)

/* Its queued work is dropped: the synchronisations waiting for it return. */
static void drop_work(struct ncclComm *c) {
  pthread_mutex_lock(&g_mu);
  size_t kept = 0;
  for (size_t i = 0; i < g_nops; i++)
    if (g_ops[i].comm != c) g_ops[kept++] = g_ops[i];
  g_nops = kept;
  pthread_mutex_unlock(&g_mu);
}

static void comm_release(struct ncclComm *c, int state) {
  drop_work(c);
  __atomic_store_n(&c->sh->r[c->rank].state, state, __ATOMIC_RELEASE);
  if (__atomic_add_fetch(&c->sh->left, 1, __ATOMIC_ACQ_REL) == (uint32_t)c->nranks) unlink(c->path);
  munmap(c->sh, sizeof(sn_shared));
  c->magic = 0;
  free(c);
}

/* Destroy finalizes first when the program did not (its work completes first). */
API ncclResult_t pncclCommDestroy(ncclComm_t comm) {
  if (!comm) return ncclSuccess;
  if (!valid_comm(comm)) return ncclInvalidArgument;
  if (!comm->finalized) {
    while (comm_busy(comm)) pause_tick();
  }
  comm_release(comm, SN_LEFT);
  return ncclSuccess;
}
ALIAS(ncclCommDestroy)

/* Its work is dropped at once (the synchronisations waiting for it return); the other ranks'
 * ncclCommGetAsyncError then answer ncclRemoteError, while their own work on it waits on. */
API ncclResult_t pncclCommAbort(ncclComm_t comm) {
  if (!comm) return ncclSuccess;
  if (!valid_comm(comm)) return ncclInvalidArgument;
  comm->aborted = 1;
  comm_release(comm, SN_ABORTED);
  return ncclSuccess;
}
ALIAS(ncclCommAbort)

/* As NCCL 2.28: flags other than NCCL_REVOKE_DEFAULT (0), and a communicator finalized or
 * revoked already, are refused (ncclInvalidArgument); its queued work is dropped (the
 * synchronisations waiting for it return), later collectives on it get ncclInvalidUsage, and
 * it may still be shrunk or destroyed. A NULL communicator is a success. */
API ncclResult_t pncclCommRevoke(ncclComm_t comm, int revokeFlags) {
  if (!comm) return ncclSuccess;
  if (!valid_comm(comm) || revokeFlags != 0 || comm->finalized || comm->revoked) return ncclInvalidArgument;
  drop_work(comm);
  comm->revoked = 1;
  comm->finalized = 1; /* NCCL sets finalizeCalled: a later destroy does not wait */
  return ncclSuccess;
}
ALIAS(ncclCommRevoke)

static int compare_ints(const void *a, const void *b) {
  const int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

/* Only the ranks that stay call it, each with the same list (NCCL sorts the caller's list in
 * place, and so does this); each joins the child: its rank the parent's, less the excluded
 * ranks below it. NCCL names the child from the parent's hash with split count 0 and color 0
 * (a shrink leaves the parent's split count alone). A revoked parent may be shrunk. */
API ncclResult_t pncclCommShrink(ncclComm_t comm, int *excludeRanksList, int excludeRanksCount, ncclComm_t *newcomm,
                                 ncclConfig_t *config, int shrinkFlags) {
  (void)shrinkFlags; /* NCCL_SHRINK_ABORT stops the parent's work first: there is none left here */
  if (!valid_comm(comm) || !newcomm || !excludeRanksList || excludeRanksCount <= 0) return ncclInvalidArgument;
  if (config && config->magic != 0xcafebeef) return ncclInvalidArgument;
  qsort(excludeRanksList, (size_t)excludeRanksCount, sizeof(int), compare_ints);
  if (bsearch(&comm->rank, excludeRanksList, (size_t)excludeRanksCount, sizeof(int), compare_ints))
    return ncclInvalidArgument;
  *newcomm = NULL;
  int below = 0;
  for (int i = 0; i < excludeRanksCount; i++) below += excludeRanksList[i] < comm->rank;
  struct ncclComm *c;
  ncclResult_t r = comm_open(ct_nccl_split_hash(comm->hash, 0, 0), comm->nranks - excludeRanksCount,
                             comm->rank - below, comm->dev, &c);
  if (r != ncclSuccess) return r;
  comm_wait_joined(c);
  *newcomm = c;
  return ncclSuccess;
}
ALIAS(ncclCommShrink)

API ncclResult_t pncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError) {
  if (!valid_comm(comm) || !asyncError) return ncclInvalidArgument;
  *asyncError = ncclSuccess;
  for (int r = 0; r < comm->nranks; r++)
    if (load32(&comm->sh->r[r].state) == SN_ABORTED) *asyncError = ncclRemoteError;
  return ncclSuccess;
}
ALIAS(ncclCommGetAsyncError)

API ncclResult_t pncclCommCount(const ncclComm_t comm, int *count) {
  if (!valid_comm(comm) || !count) return ncclInvalidArgument;
  *count = comm->nranks;
  return ncclSuccess;
}
ALIAS(ncclCommCount)
API ncclResult_t pncclCommCuDevice(const ncclComm_t comm, int *device) {
  if (!valid_comm(comm) || !device) return ncclInvalidArgument;
  *device = comm->dev;
  return ncclSuccess;
}
ALIAS(ncclCommCuDevice)
API ncclResult_t pncclCommUserRank(const ncclComm_t comm, int *rank) {
  if (!valid_comm(comm) || !rank) return ncclInvalidArgument;
  *rank = comm->rank;
  return ncclSuccess;
}
ALIAS(ncclCommUserRank)

/* ---- collectives and point-to-point ------------------------------------------------------------ */
static int g_group_depth; /* ncclGroupStart/End nesting (per process, as NCCL's is per thread) */

static ncclResult_t check(const struct ncclComm *c, ncclDataType_t t, int op, int root) {
  if (!valid_comm(c)) return ncclInvalidArgument;
  if (c->finalized || c->revoked) return ncclInvalidUsage;
  if ((int)t < 0 || t >= ncclNumTypes) return ncclInvalidArgument;
  if (op != -1 && (op < 0 || op >= ncclNumOps)) return ncclInvalidArgument;
  if (root != -1 && (root < 0 || root >= c->nranks)) return ncclInvalidArgument;
  return ncclSuccess;
}

/* Entered: the collective counts on this rank, and its completion is queued on the stream. */
static ncclResult_t collective(struct ncclComm *c, ncclDataType_t t, int op, int root, cudaStream_t s) {
  ncclResult_t r = check(c, t, op, root);
  if (r != ncclSuccess) return r;
  const uint64_t n = ++c->coll;
  __atomic_store_n(&c->sh->r[c->rank].coll, n, __ATOMIC_RELEASE);
  return enqueue(c, OP_COLL, 0, n, s);
}

API ncclResult_t pncclAllReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                                ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  (void)sendbuff, (void)recvbuff, (void)count;
  return collective(comm, datatype, op, -1, stream);
}
ALIAS(ncclAllReduce)
API ncclResult_t pncclReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                             ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  (void)sendbuff, (void)recvbuff, (void)count;
  return collective(comm, datatype, op, root, stream);
}
ALIAS(ncclReduce)
API ncclResult_t pncclBroadcast(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                                int root, ncclComm_t comm, cudaStream_t stream) {
  (void)sendbuff, (void)recvbuff, (void)count;
  return collective(comm, datatype, -1, root, stream);
}
ALIAS(ncclBroadcast)
API ncclResult_t pncclBcast(void *buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                            cudaStream_t stream) {
  (void)buff, (void)count;
  return collective(comm, datatype, -1, root, stream);
}
ALIAS(ncclBcast)
API ncclResult_t pncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount, ncclDataType_t datatype,
                                ncclComm_t comm, cudaStream_t stream) {
  (void)sendbuff, (void)recvbuff, (void)sendcount;
  return collective(comm, datatype, -1, -1, stream);
}
ALIAS(ncclAllGather)
API ncclResult_t pncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount, ncclDataType_t datatype,
                                    ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  (void)sendbuff, (void)recvbuff, (void)recvcount;
  return collective(comm, datatype, op, -1, stream);
}
ALIAS(ncclReduceScatter)
API ncclResult_t pncclAlltoAll(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                               ncclComm_t comm, cudaStream_t stream) {
  (void)sendbuff, (void)recvbuff, (void)count;
  return collective(comm, datatype, -1, -1, stream);
}
ALIAS(ncclAlltoAll)
API ncclResult_t pncclGather(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,
                             ncclComm_t comm, cudaStream_t stream) {
  (void)sendbuff, (void)recvbuff, (void)count;
  return collective(comm, datatype, -1, root, stream);
}
ALIAS(ncclGather)
API ncclResult_t pncclScatter(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,
                              ncclComm_t comm, cudaStream_t stream) {
  (void)sendbuff, (void)recvbuff, (void)count;
  return collective(comm, datatype, -1, root, stream);
}
ALIAS(ncclScatter)

/* The n-th send from this rank to peer pairs with the peer's n-th receive from this rank. */
API ncclResult_t pncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                           cudaStream_t stream) {
  (void)sendbuff, (void)count;
  ncclResult_t r = check(comm, datatype, -1, peer);
  if (r != ncclSuccess) return r;
  const uint64_t n = ++comm->sent[peer];
  __atomic_store_n(&comm->sh->sends[comm->rank][peer], n, __ATOMIC_RELEASE);
  return enqueue(comm, OP_SEND, peer, n, stream);
}
ALIAS(ncclSend)
API ncclResult_t pncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                           cudaStream_t stream) {
  (void)recvbuff, (void)count;
  ncclResult_t r = check(comm, datatype, -1, peer);
  if (r != ncclSuccess) return r;
  const uint64_t n = ++comm->received[peer];
  __atomic_store_n(&comm->sh->recvs[comm->rank][peer], n, __ATOMIC_RELEASE);
  return enqueue(comm, OP_RECV, peer, n, stream);
}
ALIAS(ncclRecv)

/* Calls inside a group are entered as they are made: nothing here blocks, so the pairing a group
 * exists for (a send and a receive that would deadlock one by one) holds without deferring. */
API ncclResult_t pncclGroupStart(void) {
  __atomic_add_fetch(&g_group_depth, 1, __ATOMIC_RELAXED);
  return ncclSuccess;
}
ALIAS(ncclGroupStart)
API ncclResult_t pncclGroupEnd(void) {
  if (__atomic_load_n(&g_group_depth, __ATOMIC_RELAXED) == 0) return ncclInvalidUsage;
  __atomic_sub_fetch(&g_group_depth, 1, __ATOMIC_RELAXED);
  return ncclSuccess;
}
ALIAS(ncclGroupEnd)
API ncclResult_t pncclGroupSimulateEnd(ncclSimInfo_t *simInfo) {
  if (!simInfo) return ncclInvalidArgument;
  simInfo->estimatedTime = 0.0f;
  return pncclGroupEnd();
}
ALIAS(ncclGroupSimulateEnd)

/* ---- memory and registration: no device data, so these only check their arguments ------------- */
API ncclResult_t pncclMemAlloc(void **ptr, size_t size) {
  cudaError_t (*m)(void **, size_t) = (cudaError_t(*)(void **, size_t))dlsym(RTLD_DEFAULT, "cudaMalloc");
  if (!ptr) return ncclInvalidArgument;
  if (!m) return ncclUnhandledCudaError;
  return m(ptr, size) == cudaSuccess ? ncclSuccess : ncclUnhandledCudaError;
}
ALIAS(ncclMemAlloc)
API ncclResult_t pncclMemFree(void *ptr) {
  cudaError_t (*f)(void *) = (cudaError_t(*)(void *))dlsym(RTLD_DEFAULT, "cudaFree");
  if (!f) return ncclUnhandledCudaError;
  return f(ptr) == cudaSuccess ? ncclSuccess : ncclUnhandledCudaError;
}
ALIAS(ncclMemFree)
API ncclResult_t pncclCommRegister(const ncclComm_t comm, void *buff, size_t size, void **handle) {
  if (!valid_comm(comm) || !handle) return ncclInvalidArgument;
  (void)size;
  *handle = buff;
  return ncclSuccess;
}
ALIAS(ncclCommRegister)
API ncclResult_t pncclCommDeregister(const ncclComm_t comm, void *handle) {
  (void)handle;
  return valid_comm(comm) ? ncclSuccess : ncclInvalidArgument;
}
ALIAS(ncclCommDeregister)
API ncclResult_t pncclCommWindowRegister(ncclComm_t comm, void *buff, size_t size, ncclWindow_t *win, int winFlags) {
  (void)size, (void)winFlags;
  if (!valid_comm(comm) || !win) return ncclInvalidArgument;
  *win = (ncclWindow_t)buff;
  return ncclSuccess;
}
ALIAS(ncclCommWindowRegister)
API ncclResult_t pncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win) {
  (void)win;
  return valid_comm(comm) ? ncclSuccess : ncclInvalidArgument;
}
ALIAS(ncclCommWindowDeregister)

/* Not simulated (custom reduction operators, revoke, shrink): ncclInvalidUsage, said in
 * ncclGetLastError. */
static ncclResult_t not_simulated(const char *what) {
  set_error("%s is not simulated by simnccl", what);
  return ncclInvalidUsage;
}
API ncclResult_t pncclRedOpCreatePreMulSum(ncclRedOp_t *op, void *scalar, ncclDataType_t datatype,
                                           ncclScalarResidence_t residence, ncclComm_t comm) {
  (void)op, (void)scalar, (void)datatype, (void)residence, (void)comm;
  return not_simulated("ncclRedOpCreatePreMulSum");
}
ALIAS(ncclRedOpCreatePreMulSum)
API ncclResult_t pncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
  (void)op, (void)comm;
  return not_simulated("ncclRedOpDestroy");
}
ALIAS(ncclRedOpDestroy)
