/* A multi-rank NCCL job on the simulated libcudart and libnccl (tests/simnccl), linked as a
 * real program links the real ones.
 *
 *   nccl_job N MODE [ARG]      the launcher: starts N ranks (this program again, by exec) with
 *                              torchrun's variables (RANK, LOCAL_RANK, WORLD_SIZE,
 *                              LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT,
 *                              TORCHELASTIC_RUN_ID, TORCHELASTIC_RESTART_COUNT), waits for them
 *                              and exits 0 when every rank did, else 1.
 *   (with RANK set)            one rank: rank 0 makes the unique id and hands it to the others
 *                              through a file in $TMPDIR named by MASTER_PORT.
 *
 * Every rank makes kSteps steps (colabtrace_step), each one all-reduce of 1024 float32 on the
 * world communicator, waited for with cudaStreamSynchronize. MODE:
 *   healthy   also: a split by parity (color rank % 2, key -rank), one broadcast of 16 int32
 *             from its rank 0 per step on it, waited for with cudaDeviceSynchronize; a ring of
 *             grouped send/recv on the world communicator at the end; then every communicator
 *             is destroyed. World: kSteps collectives per rank; each half: kSteps.
 *   skip R    rank R skips the all-reduce of step 3 (collective #3) and then blocks in open() of
 *             a FIFO nobody writes ($TMPDIR/nccl-job-PORT.fifo): the others wait in #3 for good.
 *   bcast R   at step 2 rank R calls ncclBroadcast (root 0, 1024 float32) where the others
 *             all-reduce: collective #2 differs; the simulator matches by order, so the job
 *             completes.
 *   abort R   no steps: rank R aborts the world communicator; the others poll
 *             ncclCommGetAsyncError until it reports the remote error (ncclRemoteError, 6;
 *             5 s at most, else they exit 1), then abort it too.
 *   shrink R  rank R exits 3 right after the world communicator is made (a lost rank); the
 *             others revoke the world communicator (an all-reduce on it is then refused with
 *             ncclInvalidUsage), shrink it excluding R, and make their steps on the shrunk
 *             one; the launcher exits 1. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <colabtrace/colabtrace.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

enum { kSteps = 5, kMaxRanks = 16 };

#define CHECK(call)                                                                  \
  do {                                                                               \
    long long rc_ = (long long)(call);                                               \
    if (rc_ != 0) {                                                                  \
      fprintf(stderr, "rank %s: %s failed: %lld\n", getenv("RANK"), #call, rc_);     \
      exit(1);                                                                       \
    }                                                                                \
  } while (0)

static int launcher(char **argv, int n) {
  char port[16], run_id[32];
  snprintf(port, sizeof port, "%d", 20000 + getpid() % 20000);
  snprintf(run_id, sizeof run_id, "nccl-%d", getpid());
  pid_t pids[kMaxRanks];
  for (int r = 0; r < n; r++) {
    pids[r] = fork();
    if (pids[r] < 0) return 1;
    if (pids[r] == 0) {
      char rank[16], world[16];
      snprintf(rank, sizeof rank, "%d", r);
      snprintf(world, sizeof world, "%d", n);
      setenv("RANK", rank, 1), setenv("LOCAL_RANK", rank, 1), setenv("GROUP_RANK", "0", 1);
      setenv("WORLD_SIZE", world, 1), setenv("LOCAL_WORLD_SIZE", world, 1);
      setenv("MASTER_ADDR", "127.0.0.1", 1), setenv("MASTER_PORT", port, 1);
      setenv("TORCHELASTIC_RUN_ID", run_id, 1), setenv("TORCHELASTIC_RESTART_COUNT", "0", 1);
      execv("/proc/self/exe", argv);
      _exit(127);
    }
  }
  int failed = 0;
  for (int r = 0; r < n; r++) {
    int st = 0;
    if (waitpid(pids[r], &st, 0) != pids[r] || !WIFEXITED(st) || WEXITSTATUS(st) != 0) failed = 1;
  }
  return failed;
}

/* Rank 0 writes the id (write, then rename: never read half written); the others poll. */
static void exchange_id(int rank, ncclUniqueId *id) {
  char path[512], tmp[600];
  const char *dir = getenv("TMPDIR");
  snprintf(path, sizeof path, "%s/nccl-job-%s.id", dir && *dir ? dir : "/tmp", getenv("MASTER_PORT"));
  if (rank == 0) {
    CHECK(ncclGetUniqueId(id));
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    if (!f || fwrite(id, sizeof *id, 1, f) != 1 || fclose(f) != 0 || rename(tmp, path) != 0) exit(1);
    return;
  }
  for (;;) {
    FILE *f = fopen(path, "rb");
    if (f) {
      const size_t got = fread(id, sizeof *id, 1, f);
      fclose(f);
      if (got == 1) return;
    }
    const struct timespec tick = {0, 2000000};
    nanosleep(&tick, NULL);
  }
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s N healthy|skip R|bcast R|abort R|shrink R\n", argv[0]);
    return 2;
  }
  const char *rank_env = getenv("RANK");
  const int n = atoi(argv[1]);
  if (!rank_env) return n >= 1 && n <= kMaxRanks ? launcher(argv, n) : 2;
  const int rank = atoi(rank_env);
  const char *mode = argv[2];
  const int odd = argc > 3 ? atoi(argv[3]) : -1;

  CHECK(cudaSetDevice(0));
  ncclUniqueId id;
  exchange_id(rank, &id);
  ncclComm_t world, half = NULL;
  CHECK(ncclCommInitRank(&world, n, id, rank));
  if (strcmp(mode, "abort") == 0) {
    if (rank != odd) {
      ncclResult_t e = ncclSuccess;
      for (int i = 0; i < 5000 && e == ncclSuccess; i++) {
        CHECK(ncclCommGetAsyncError(world, &e));
        const struct timespec tick = {0, 1000000};
        nanosleep(&tick, NULL);
      }
      if (e != ncclRemoteError) return 1;
    }
    CHECK(ncclCommAbort(world));
    return 0;
  }
  ncclComm_t coll = world; /* the communicator each step all-reduces on */
  const int shrink = strcmp(mode, "shrink") == 0;
  if (shrink) {
    if (rank == odd) return 3;
    int excluded[1] = {odd};
    CHECK(ncclCommRevoke(world, 0));
    if (ncclAllReduce(NULL, NULL, 1024, ncclFloat32, ncclSum, world, 0) != ncclInvalidUsage) return 1;
    CHECK(ncclCommShrink(world, excluded, 1, &coll, NULL, 0));
  }
  const int healthy = strcmp(mode, "healthy") == 0;
  if (healthy) CHECK(ncclCommSplit(world, rank % 2, -rank, &half, NULL));
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  for (int step = 1; step <= kSteps; step++) {
    if (strcmp(mode, "skip") == 0 && rank == odd && step == 3) {
      /* Blocks for good in open() of a FIFO nobody opens for writing (a call the shim notes). */
      char fifo[512];
      const char *dir = getenv("TMPDIR");
      snprintf(fifo, sizeof fifo, "%s/nccl-job-%s.fifo", dir && *dir ? dir : "/tmp", getenv("MASTER_PORT"));
      if (mkfifo(fifo, 0600) != 0) return 1;
      (void)!open(fifo, O_RDONLY);
      return 1;
    }
    if (strcmp(mode, "bcast") == 0 && rank == odd && step == 2) {
      CHECK(ncclBroadcast(NULL, NULL, 1024, ncclFloat32, 0, world, s));
    } else {
      CHECK(ncclAllReduce(NULL, NULL, 1024, ncclFloat32, ncclSum, coll, s));
    }
    CHECK(cudaStreamSynchronize(s));
    if (half) {
      CHECK(ncclBroadcast(NULL, NULL, 16, ncclInt32, 0, half, 0));
      CHECK(cudaDeviceSynchronize());
    }
    colabtrace_step(step);
  }
  if (healthy) {
    CHECK(ncclGroupStart());
    CHECK(ncclSend(NULL, 64, ncclUint8, (rank + 1) % n, world, s));
    CHECK(ncclRecv(NULL, 64, ncclUint8, (rank + n - 1) % n, world, s));
    CHECK(ncclGroupEnd());
    CHECK(cudaStreamSynchronize(s));
    CHECK(ncclCommDestroy(half));
  }
  if (shrink) CHECK(ncclCommDestroy(coll));
  CHECK(ncclCommDestroy(world));
  return 0;
}
