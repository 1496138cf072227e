/* Runs a command and prints its peak RSS and CPU time on stderr:
   {"maxrss_kib": N, "cpu_s": SECONDS, "status": S}.
   A small launcher, because a child's ru_maxrss also counts the memory of the process it
   was forked from (before its exec): measured from Python it would include Python's.
   Usage: peak_rss PROGRAM ARGS... */
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const pid_t child = fork();
  if (child < 0) return 2;
  if (child == 0) {
    execvp(argv[1], argv + 1);
    _exit(127);
  }
  int status = 0;
  struct rusage ru;
  if (wait4(child, &status, 0, &ru) != child) return 2;
  const double cpu = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                     (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
  fprintf(stderr, "{\"maxrss_kib\": %ld, \"cpu_s\": %.6f, \"status\": %d}\n", ru.ru_maxrss, cpu,
          status);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
