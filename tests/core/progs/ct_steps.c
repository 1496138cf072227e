/* ct_steps COUNT DELAY_US [NAME]: COUNT steps; step i sets NAME (default CUDA_STEP) to i
 * through setenv(), a call the core shim records as an env record, and only then prints
 * "step i" and flushes. Exits 0 after the last step. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char** argv) {
  const long count = argc > 1 ? atol(argv[1]) : 10;
  const long delay_us = argc > 2 ? atol(argv[2]) : 0;
  const char* name = argc > 3 ? argv[3] : "CUDA_STEP";
  for (long i = 0; i < count; ++i) {
    char value[32];
    snprintf(value, sizeof(value), "%ld", i);
    if (setenv(name, value, 1) != 0) return 3;
    printf("step %ld\n", i);
    fflush(stdout);
    if (delay_us > 0) usleep((useconds_t)delay_us);
  }
  printf("done %ld\n", count);
  return 0;
}
