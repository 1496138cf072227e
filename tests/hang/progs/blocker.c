/* Blocks in one hooked call, for the in-flight note tests (tests/hang).
 *
 *   blocker open FIFO      open(FIFO, O_RDONLY): blocks until a writer opens it
 *   blocker read FIFO      opens FIFO read-write (no block), then read() on it: a FIFO is
 *                          not a traced descriptor, so no note (the shim traces files)
 *   blocker stat FIFO      open(FIFO) as "open" but through fopen()
 *   blocker wait           forks a child that sleeps for ever, then waitpid() for it
 *   blocker thread FIFO    a second thread blocks in open(FIFO); the main thread sleeps
 *
 * Prints "ready <pid> <tid>" (the blocking thread's) and flushes just before the call;
 * after the call returns it prints "returned" and exits 0. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *g_path;

static void ready(void) {
  printf("ready %d %ld\n", (int)getpid(), (long)syscall(SYS_gettid));
  fflush(stdout);
}

static void *open_fifo(void *arg) {
  (void)arg;
  ready();
  int fd = open(g_path, O_RDONLY);
  if (fd < 0) {
    perror("open");
    exit(2);
  }
  close(fd);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  const char *mode = argv[1];
  g_path = argc > 2 ? argv[2] : NULL;
  if (strcmp(mode, "open") == 0) {
    open_fifo(NULL);
  } else if (strcmp(mode, "fopen") == 0) {
    ready();
    FILE *f = fopen(g_path, "r");
    if (f == NULL) return 2;
    fclose(f);
  } else if (strcmp(mode, "wait") == 0) {
    pid_t child = fork();
    if (child == 0) {
      for (;;) pause();
    }
    printf("child %d\n", (int)child);
    ready();
    int st = 0;
    if (waitpid(child, &st, 0) != child) return 2;
  } else if (strcmp(mode, "thread") == 0) {
    pthread_t th;
    if (pthread_create(&th, NULL, open_fifo, NULL) != 0) return 2;
    pthread_join(th, NULL);
  } else {
    return 2;
  }
  printf("returned\n");
  fflush(stdout);
  return 0;
}
