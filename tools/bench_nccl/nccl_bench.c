/* Benchmark: the cost of an NCCL call against the simulated libnccl.so.2 (tests/simnccl), to
 * compare a bare run, an empty LD_PRELOAD library and the shim, whose NCCL hooks add, per call,
 * an index probe, a sequence number and one slot of the call ring (budget: <= 100 ns).
 *
 *   nccl_bench [CALLS [ROUNDS]]
 *
 * One rank (a communicator of one: each all-reduce completes as it is entered). Each round
 * makes CALLS all-reduces, synchronising the stream after every 256 (the simulator keeps the
 * work until a synchronisation looks at it; the same in every mode), timed with the thread's
 * CPU clock. Prints one JSON object with
 * the median ns per call. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "../bench_gpu/bench_clock.h"

int main(int argc, char **argv) {
  const long n = argc > 1 ? atol(argv[1]) : 200000;
  const int rounds = argc > 2 ? atoi(argv[2]) : 15;
  if (n <= 0 || rounds <= 0 || rounds > 1000) return 2;
  ncclUniqueId id;
  ncclComm_t comm;
  cudaStream_t s;
  if (cudaSetDevice(0) != cudaSuccess || cudaStreamCreate(&s) != cudaSuccess) return 1;
  if (ncclGetUniqueId(&id) != ncclSuccess || ncclCommInitRank(&comm, 1, id, 0) != ncclSuccess) return 1;
  for (int i = 0; i < 1024; i++)
    if (ncclAllReduce(NULL, NULL, 1024, ncclFloat32, ncclSum, comm, s) != ncclSuccess) return 1;
  cudaStreamSynchronize(s);
  double per[1000];
  for (int r = 0; r < rounds; r++) {
    const double t0 = bench_ns(CLOCK_THREAD_CPUTIME_ID);
    for (long i = 0; i < n; i++) {
      ncclAllReduce(NULL, NULL, 1024, ncclFloat32, ncclSum, comm, s);
      if ((i & 255) == 255) cudaStreamSynchronize(s);
    }
    per[r] = (bench_ns(CLOCK_THREAD_CPUTIME_ID) - t0) / (double)n;
  }
  cudaStreamSynchronize(s);
  ncclCommDestroy(comm);
  printf("{\"calls\": %ld, \"rounds\": %d, \"median_ns_per_call\": %.2f}\n", n, rounds, bench_median(per, rounds));
  return 0;
}
