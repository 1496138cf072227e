/* cpu_burn MS: spins on the CPU until this process has used MS milliseconds of CPU time, then
 * prints the CPU time it used (user and system, ns) as "cpu_ns=N" and exits. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static unsigned long long cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  const unsigned long long want = strtoull(argv[1], NULL, 10) * 1000000ull;
  volatile unsigned long long sink = 0;
  while (cpu_ns() < want) {
    for (int i = 0; i < 100000; i++) sink += (unsigned long long)i * i;
  }
  printf("cpu_ns=%llu\n", cpu_ns());
  return 0;
}
