/* A directory of many small traces for the analyzer benchmark: forks N children one after
   another; each does K one-byte preads of FILE and exits, so under the shim each writes
   its own trace. Usage: fleet FILE N K */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char** argv) {
  if (argc != 4) return 2;
  const long n = atol(argv[2]), k = atol(argv[3]);
  for (long i = 0; i < n; ++i) {
    const pid_t child = fork();
    if (child < 0) return 1;
    if (child == 0) {
      const int fd = open(argv[1], O_RDONLY);
      if (fd < 0) _exit(1);
      char c;
      for (long j = 0; j < k; ++j) {
        if (pread(fd, &c, 1, 0) != 1) _exit(1);
      }
      close(fd);
      exit(0);
    }
    int status = 0;
    if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return 1;
  }
  return 0;
}
