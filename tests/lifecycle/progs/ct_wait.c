// Reaps children with every wait API and prints what each call returned, so a test can
// compare a bare run with a traced one (returns and errno must be identical) and check
// the wait_status records against the statuses the program saw.
//
// Children, in order: exit 3 (wait), SIGTERM (waitpid), exit 5 (wait3), SIGKILL (wait4),
// exit 7 (waitid, P_PID), exit 9 (waitid with WNOWAIT first, then waitpid with a NULL
// status). Also: a WNOHANG call while a child still runs, and calls with no child left.
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static pid_t child_exiting(int code) {
  pid_t p = fork();
  if (p == 0) _exit(code);
  return p;
}

// A child that waits to be killed; returns once it runs (and so has its trace).
static pid_t child_sleeping(void) {
  int fds[2];
  if (pipe(fds) != 0) abort();
  pid_t p = fork();
  if (p == 0) {
    close(fds[0]);
    if (write(fds[1], "r", 1) != 1) _exit(99);
    for (;;) pause();
  }
  close(fds[1]);
  char c;
  if (read(fds[0], &c, 1) != 1) abort();
  close(fds[0]);
  return p;
}

int main(void) {
  int st = 0;
  pid_t p = child_exiting(3);
  pid_t r = wait(&st);
  printf("wait %d %d status=%d\n", r == p, r > 0, st);

  p = child_sleeping();
  st = -1;
  r = waitpid(p, &st, WNOHANG);  // still running: 0, status untouched
  printf("waitpid-wnohang r=%d status=%d\n", (int)r, st);
  kill(p, SIGTERM);
  r = waitpid(p, &st, 0);
  printf("waitpid %d status=%d\n", r == p, st);

  p = child_exiting(5);
  struct rusage ru;
  r = wait3(&st, 0, &ru);
  printf("wait3 %d status=%d\n", r == p, st);

  p = child_sleeping();
  kill(p, SIGKILL);
  r = wait4(p, &st, 0, &ru);
  printf("wait4 %d status=%d\n", r == p, st);

  p = child_exiting(7);
  siginfo_t si;
  memset(&si, 0, sizeof(si));
  int rc = waitid(P_PID, (id_t)p, &si, WEXITED);
  printf("waitid rc=%d pid_ok=%d code=%d status=%d\n", rc, si.si_pid == p, si.si_code, si.si_status);

  p = child_exiting(9);
  memset(&si, 0, sizeof(si));
  rc = waitid(P_PID, (id_t)p, &si, WEXITED | WNOWAIT);  // a peek: the child stays
  printf("waitid-wnowait rc=%d pid_ok=%d status=%d\n", rc, si.si_pid == p, si.si_status);
  r = waitpid(p, NULL, 0);  // NULL status: the reap is still recorded
  printf("waitpid-null %d\n", r == p);

  errno = 0;
  r = waitpid(-1, &st, 0);  // no child left
  printf("waitpid-none r=%d errno=%s\n", (int)r, strerror(errno));
  errno = 0;
  rc = waitid(P_ALL, 0, &si, WEXITED | WNOHANG);
  printf("waitid-none rc=%d errno=%s\n", rc, strerror(errno));
  return 0;
}
