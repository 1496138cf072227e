/* N one-byte preads of a small file: a trace of N I/O events for the analyzer benchmark
   and the shim's RSS. Usage: reads FILE N */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
int main(int argc, char** argv) {
  if (argc != 3) return 2;
  const long n = atol(argv[2]);
  const int fd = open(argv[1], O_RDONLY);
  if (fd < 0) return 1;
  char c;
  long got = 0;
  for (long i = 0; i < n; ++i) got += pread(fd, &c, 1, 0);
  close(fd);
  /* The peak RSS of this program image (VmHWM restarts at exec; getrusage's maxrss
     would include the launcher's memory from before the exec). */
  FILE* st = fopen("/proc/self/status", "r");
  char line[256];
  while (st && fgets(line, sizeof(line), st)) {
    if (strncmp(line, "VmHWM:", 6) == 0) printf("{\"hwm_kib\": %ld}\n", atol(line + 6));
  }
  if (st) fclose(st);
  return got == n ? 0 : 1;
}
