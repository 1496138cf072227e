/* Scenarios of the simulated libnccl.so.2: `sim_nccl_scenarios NAME` (exit 0 pass, 1 a check
 * failed). Multi-rank scenarios fork one process per rank before any CUDA call, as a launcher
 * starts ranks; each rank checks its own results and the parent requires every rank to pass.
 * Run with LD_LIBRARY_PATH=SIMCUDA_DIR (the runtime dlopens libcuda.so.1) and SIMNCCL_DIR set to
 * an empty folder (the rendezvous files). */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "nccl_comm_hash.h"
#include "simcuda_test.h"

static uint64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}
static void sleep_ms(unsigned ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* Forks n ranks running body(rank, n, &id) and waits for all (10 s at most); every one must exit 0. */
static void run_ranks(int n, void (*body)(int, int, const ncclUniqueId *)) {
  ncclUniqueId id;
  SIM_CHECK_EQ(ncclGetUniqueId(&id), ncclSuccess);
  pid_t pids[16];
  for (int r = 0; r < n; r++) {
    pids[r] = fork();
    SIM_CHECK(pids[r] >= 0);
    if (pids[r] == 0) {
      alarm(10);
      SIM_CHECK_EQ(cudaSetDevice(0), cudaSuccess);
      body(r, n, &id);
      _exit(0);
    }
  }
  for (int r = 0; r < n; r++) {
    int st = 0;
    SIM_CHECK_EQ(waitpid(pids[r], &st, 0), pids[r]);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      fprintf(stderr, "rank %d failed (status 0x%x)\n", r, st);
      exit(1);
    }
  }
}

/* ---- single process -------------------------------------------------------------------------- */
static void version_and_errors(void) {
  int v = 0;
  SIM_CHECK_EQ(ncclGetVersion(&v), ncclSuccess);
  SIM_CHECK_EQ(v, 22809);
  SIM_CHECK_EQ(ncclGetVersion(NULL), ncclInvalidArgument);
  SIM_CHECK(strcmp(ncclGetErrorString(ncclSuccess), "no error") == 0);
  SIM_CHECK(strcmp(ncclGetErrorString(ncclRemoteError), "remote process exited or there was a network error") == 0);
  SIM_CHECK(strcmp(ncclGetErrorString(ncclInProgress), "NCCL operation in progress") == 0);
  SIM_CHECK(strcmp(ncclGetErrorString(ncclNumResults), "unknown result code") == 0);
  /* The p-names are the same functions. */
  SIM_CHECK_EQ((uintptr_t)&ncclAllReduce, (uintptr_t)&pncclAllReduce);
  ncclUniqueId a, b;
  SIM_CHECK_EQ(ncclGetUniqueId(&a), ncclSuccess);
  SIM_CHECK_EQ(ncclGetUniqueId(&b), ncclSuccess);
  SIM_CHECK(memcmp(&a, &b, sizeof a) != 0);
  SIM_CHECK_EQ(ncclCommInitRank(NULL, 2, a, 0), ncclInvalidArgument);
  ncclComm_t c = NULL;
  SIM_CHECK_EQ(ncclCommInitRank(&c, 2, a, 2), ncclInvalidArgument);
  SIM_CHECK_EQ(ncclAllReduce(NULL, NULL, 1, ncclFloat32, ncclSum, NULL, 0), ncclInvalidArgument);
  SIM_CHECK_EQ(ncclGroupEnd(), ncclInvalidUsage);
}

/* ncclCommInitAll: ndev ranks in one process; each collective completes once every rank entered. */
static void init_all(void) {
  SIM_CHECK_EQ(cudaSetDevice(0), cudaSuccess);
  ncclComm_t comms[2];
  SIM_CHECK_EQ(ncclCommInitAll(comms, 2, NULL), ncclSuccess);
  int count = 0, rank = -1, dev = -1;
  SIM_CHECK_EQ(ncclCommCount(comms[1], &count), ncclSuccess);
  SIM_CHECK_EQ(count, 2);
  SIM_CHECK_EQ(ncclCommUserRank(comms[1], &rank), ncclSuccess);
  SIM_CHECK_EQ(rank, 1);
  SIM_CHECK_EQ(ncclCommCuDevice(comms[1], &dev), ncclSuccess);
  SIM_CHECK_EQ(dev, 1);
  cudaStream_t s0, s1;
  SIM_CHECK_EQ(cudaStreamCreate(&s0), cudaSuccess);
  SIM_CHECK_EQ(cudaStreamCreate(&s1), cudaSuccess);
  SIM_CHECK_EQ(ncclAllReduce(NULL, NULL, 8, ncclFloat32, ncclSum, comms[0], s0), ncclSuccess);
  SIM_CHECK_EQ(cudaStreamQuery(s0), cudaErrorNotReady); /* rank 1 has not entered */
  SIM_CHECK_EQ(cudaStreamQuery(s1), cudaSuccess);
  SIM_CHECK_EQ(ncclAllReduce(NULL, NULL, 8, ncclFloat32, ncclSum, comms[1], s1), ncclSuccess);
  SIM_CHECK_EQ(cudaStreamQuery(s0), cudaSuccess);
  SIM_CHECK_EQ(cudaDeviceSynchronize(), cudaSuccess);
  SIM_CHECK_EQ(ncclCommDestroy(comms[0]), ncclSuccess);
  SIM_CHECK_EQ(ncclCommDestroy(comms[1]), ncclSuccess);
}

/* ---- multi-process ---------------------------------------------------------------------------- */
/* Rank 2 enters the all-reduce 300 ms late: the others' stream stays busy until then, and their
 * cudaStreamSynchronize blocks that long. */
static void late_rank_body(int rank, int n, const ncclUniqueId *id) {
  ncclComm_t c;
  SIM_CHECK_EQ(ncclCommInitRank(&c, n, *id, rank), ncclSuccess);
  int count = 0, me = -1;
  SIM_CHECK_EQ(ncclCommCount(c, &count), ncclSuccess);
  SIM_CHECK_EQ(count, 3);
  SIM_CHECK_EQ(ncclCommUserRank(c, &me), ncclSuccess);
  SIM_CHECK_EQ(me, rank);
  cudaStream_t s;
  SIM_CHECK_EQ(cudaStreamCreate(&s), cudaSuccess);
  if (rank == 2) sleep_ms(300);
  const uint64_t t0 = now_ms();
  SIM_CHECK_EQ(ncclAllReduce(NULL, NULL, 1024, ncclFloat32, ncclSum, c, s), ncclSuccess);
  if (rank != 2) SIM_CHECK_EQ(cudaStreamQuery(s), cudaErrorNotReady);
  SIM_CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
  const uint64_t waited = now_ms() - t0;
  if (rank != 2) SIM_CHECK(waited >= 250);
  SIM_CHECK_EQ(cudaStreamQuery(s), cudaSuccess);
  /* Two more, through the legacy default stream and a device synchronisation. */
  SIM_CHECK_EQ(ncclBroadcast(NULL, NULL, 16, ncclInt32, 0, c, 0), ncclSuccess);
  SIM_CHECK_EQ(ncclAllGather(NULL, NULL, 16, ncclInt32, c, 0), ncclSuccess);
  SIM_CHECK_EQ(cudaDeviceSynchronize(), cudaSuccess);
  SIM_CHECK_EQ(ncclBroadcast(NULL, NULL, 16, ncclInt32, 3, c, 0), ncclInvalidArgument); /* root */
  SIM_CHECK_EQ(ncclCommFinalize(c), ncclSuccess);
  SIM_CHECK_EQ(ncclCommDestroy(c), ncclSuccess);
}
static void late_rank(void) { run_ranks(3, late_rank_body); }

/* Four ranks split by parity, key -rank (so the child's ranks run backwards); a second split with
 * NOCOLOR on rank 3. The child's name is NCCL's derived hash, the same on every member. */
static void split_body(int rank, int n, const ncclUniqueId *id) {
  ncclComm_t c, half, rest;
  SIM_CHECK_EQ(ncclCommInitRank(&c, n, *id, rank), ncclSuccess);
  SIM_CHECK_EQ(ncclCommSplit(c, rank % 2, -rank, &half, NULL), ncclSuccess);
  int count = 0, me = -1;
  SIM_CHECK_EQ(ncclCommCount(half, &count), ncclSuccess);
  SIM_CHECK_EQ(count, 2);
  SIM_CHECK_EQ(ncclCommUserRank(half, &me), ncclSuccess);
  SIM_CHECK_EQ(me, rank < 2 ? 1 : 0);
  SIM_CHECK_EQ(ncclCommSplit(c, rank == 3 ? NCCL_SPLIT_NOCOLOR : 0, rank, &rest, NULL), ncclSuccess);
  if (rank == 3) {
    SIM_CHECK(rest == NULL);
  } else {
    SIM_CHECK_EQ(ncclCommCount(rest, &count), ncclSuccess);
    SIM_CHECK_EQ(count, 3);
  }
  /* The rendezvous file of each child is named by ct_nccl_split_hash(parent, split, color). */
  char path[512];
  snprintf(path, sizeof path, "%s/simnccl-%016llx", getenv("SIMNCCL_DIR"),
           (unsigned long long)ct_nccl_split_hash(ct_nccl_id_hash(id->internal), 1, rank % 2));
  SIM_CHECK_EQ(access(path, F_OK), 0);
  cudaStream_t s;
  SIM_CHECK_EQ(cudaStreamCreate(&s), cudaSuccess);
  SIM_CHECK_EQ(ncclAllReduce(NULL, NULL, 4, ncclFloat64, ncclMax, half, s), ncclSuccess);
  SIM_CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
  SIM_CHECK_EQ(ncclCommDestroy(half), ncclSuccess);
  if (rest) SIM_CHECK_EQ(ncclCommDestroy(rest), ncclSuccess);
  SIM_CHECK_EQ(ncclCommDestroy(c), ncclSuccess);
}
static void split(void) { run_ranks(4, split_body); }

/* A ring of sends and receives in a group: rank r sends to r+1 and receives from r-1. */
static void send_recv_body(int rank, int n, const ncclUniqueId *id) {
  ncclComm_t c;
  SIM_CHECK_EQ(ncclCommInitRank(&c, n, *id, rank), ncclSuccess);
  cudaStream_t s;
  SIM_CHECK_EQ(cudaStreamCreate(&s), cudaSuccess);
  if (rank == 0) sleep_ms(200);
  SIM_CHECK_EQ(ncclGroupStart(), ncclSuccess);
  SIM_CHECK_EQ(ncclSend(NULL, 64, ncclUint8, (rank + 1) % n, c, s), ncclSuccess);
  SIM_CHECK_EQ(ncclRecv(NULL, 64, ncclUint8, (rank + n - 1) % n, c, s), ncclSuccess);
  SIM_CHECK_EQ(ncclGroupEnd(), ncclSuccess);
  /* Rank 1 receives from rank 0, which comes 200 ms late. */
  if (rank == 1) SIM_CHECK_EQ(cudaStreamQuery(s), cudaErrorNotReady);
  SIM_CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
  SIM_CHECK_EQ(ncclSend(NULL, 1, ncclUint8, n, c, s), ncclInvalidArgument); /* peer */
  SIM_CHECK_EQ(ncclCommDestroy(c), ncclSuccess);
}
static void send_recv(void) { run_ranks(3, send_recv_body); }

/* Rank 1 aborts: the others' ncclCommGetAsyncError answer ncclRemoteError. */
static void abort_body(int rank, int n, const ncclUniqueId *id) {
  ncclComm_t c;
  SIM_CHECK_EQ(ncclCommInitRank(&c, n, *id, rank), ncclSuccess);
  ncclResult_t e = ncclInternalError;
  SIM_CHECK_EQ(ncclCommGetAsyncError(c, &e), ncclSuccess);
  SIM_CHECK_EQ(e, ncclSuccess);
  if (rank == 1) {
    sleep_ms(200); /* after rank 0's first check */
    SIM_CHECK_EQ(ncclAllReduce(NULL, NULL, 1, ncclFloat32, ncclSum, c, 0), ncclSuccess);
    SIM_CHECK_EQ(ncclCommAbort(c), ncclSuccess); /* its own work is dropped */
    SIM_CHECK_EQ(cudaStreamSynchronize(0), cudaSuccess);
    return;
  }
  for (int i = 0; i < 5000 && e == ncclSuccess; i++) {
    SIM_CHECK_EQ(ncclCommGetAsyncError(c, &e), ncclSuccess);
    sleep_ms(1);
  }
  SIM_CHECK_EQ(e, ncclRemoteError);
  SIM_CHECK_EQ(ncclCommAbort(c), ncclSuccess);
}
static void abort_remote(void) { run_ranks(2, abort_body); }

int main(int argc, char **argv) {
  static const simcuda_scenario list[] = {
      {"version_and_errors", version_and_errors}, {"init_all", init_all}, {"late_rank", late_rank},
      {"split", split}, {"send_recv", send_recv}, {"abort_remote", abort_remote},
  };
  return simcuda_run(argc, argv, list, sizeof list / sizeof *list);
}
