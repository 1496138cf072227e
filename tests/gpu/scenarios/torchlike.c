/* A PyTorch-like program: its GPU segments come from libc10_cuda.so through plain
 * cudaMalloc. Run with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True in the
 * environment from the start, the setting contradicts what happened (no VMM calls).
 * `gpu_torchlike segments`: 4 x 20 MiB segments, all freed. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "simcuda_test.h"

int c10_cuda_raw_alloc(void **p, size_t n);
int c10_cuda_raw_free(void *p);

static void segments(void) {
  void *p[4];
  for (int i = 0; i < 4; i++) SIM_CHECK_EQ(c10_cuda_raw_alloc(&p[i], 20u << 20), 0);
  for (int i = 0; i < 4; i++) SIM_CHECK_EQ(c10_cuda_raw_free(p[i]), 0);
}

int main(int argc, char **argv) {
  static const simcuda_scenario list[] = {{"segments", segments}};
  return simcuda_run(argc, argv, list, sizeof list / sizeof *list);
}
