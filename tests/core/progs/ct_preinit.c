/* libct_preinit.so: a preloaded library whose constructor runs before the shim's (list
 * it after the shim in LD_PRELOAD; the loader runs preload constructors last-first).
 * Before the shim is initialised it calls setenv, fork (the child _exits 7 at once)
 * and a failing execve, and prints what it saw on stderr as "preinit: ...". */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* True if this process already has a trace open (the shim has initialised). */
static int shim_has_trace(void) {
  DIR* d = opendir("/proc/self/fd");
  if (d == NULL) return -1;
  int found = 0;
  struct dirent* e;
  while ((e = readdir(d)) != NULL) {
    char link[64], target[512];
    snprintf(link, sizeof(link), "/proc/self/fd/%s", e->d_name);
    const ssize_t n = readlink(link, target, sizeof(target) - 1);
    if (n < 7) continue;
    target[n] = '\0';
    if (strcmp(target + n - 7, ".ctrace") == 0) found = 1;
  }
  closedir(d);
  return found;
}

__attribute__((constructor)) static void preinit(void) {
  fprintf(stderr, "preinit: shim initialised before us: %s\n", shim_has_trace() ? "yes" : "no");
  if (setenv("CUDA_PREINIT", "early", 1) != 0) fprintf(stderr, "preinit: setenv failed\n");
  const pid_t p = fork();
  if (p == 0) _exit(7);
  int st = 0;
  if (p < 0 || waitpid(p, &st, 0) != p) {
    fprintf(stderr, "preinit: fork/wait failed\n");
  } else {
    fprintf(stderr, "preinit: child exit %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
  }
  char* args[] = {(char*)"ct-missing", NULL};
  errno = 0;
  const int r = execve("/nonexistent/ct-missing", args, NULL);
  fprintf(stderr, "preinit: execve %d %s\n", r, strerror(errno));
}
