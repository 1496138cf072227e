/* ct_procs MODE ...: process creation. Every line it prints is parsed by the tests.
 *   fork N            N children, child i sets CUDA_CHILD=i and exits 10+i (exit, _exit
 *                     and return alternate); prints "child PID CODE" per child.
 *   forkexec PROG ARGS...  a fork child execs PROG (the trace continues in it).
 *   spawn PROG ARGS...     posix_spawn of PROG.
 *   vfork PROG ARGS...     vfork + execv of PROG.
 *   vforkfail              vfork + exec of a missing program; the child _exits 127.
 * The parent then sets CUDA_PARENT_DONE=1, prints "parent PID" and exits 0. */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

static void report(pid_t pid) {
  int st = 0;
  if (waitpid(pid, &st, 0) != pid) {
    perror("waitpid");
    exit(90);
  }
  if (WIFEXITED(st)) {
    printf("child %d %d\n", (int)pid, WEXITSTATUS(st));
  } else {
    printf("child %d signal %d\n", (int)pid, WTERMSIG(st));
  }
  fflush(stdout);
}

int main(int argc, char** argv) {
  if (argc < 2) return 64;
  const char* mode = argv[1];
  fflush(stdout);
  if (strcmp(mode, "fork") == 0) {
    const int n = argc > 2 ? atoi(argv[2]) : 3;
    for (int i = 0; i < n; ++i) {
      const pid_t p = fork();
      if (p < 0) return 91;
      if (p == 0) {
        char v[16];
        snprintf(v, sizeof(v), "%d", i);
        setenv("CUDA_CHILD", v, 1);
        if (i % 3 == 0) exit(10 + i);
        if (i % 3 == 1) _exit(10 + i);
        return 10 + i;
      }
      report(p);
    }
  } else if (strcmp(mode, "forkexec") == 0 || strcmp(mode, "vfork") == 0) {
    const int use_vfork = strcmp(mode, "vfork") == 0;
    const pid_t p = use_vfork ? vfork() : fork();
    if (p < 0) return 91;
    if (p == 0) {
      if (!use_vfork) setenv("CUDA_BEFORE_EXEC", "1", 1);
      execv(argv[2], argv + 2);
      _exit(127);
    }
    report(p);
  } else if (strcmp(mode, "spawn") == 0) {
    pid_t p = 0;
    const int r = posix_spawn(&p, argv[2], NULL, NULL, argv + 2, environ);
    if (r != 0) return 92;
    report(p);
  } else if (strcmp(mode, "vforkfail") == 0) {
    const pid_t p = vfork();
    if (p < 0) return 91;
    if (p == 0) {
      execl("/nonexistent/ct-missing-program", "ct-missing-program", (char*)NULL);
      _exit(127);
    }
    report(p);
  } else {
    return 64;
  }
  setenv("CUDA_PARENT_DONE", "1", 1);
  printf("parent %d\n", (int)getpid());
  return 0;
}
