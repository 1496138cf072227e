// A small, deterministic workload for the CLI's end-to-end tests (export, baseline,
// check, diff). Every option is one thing the tests count exactly:
//   --file PATH --reads N --chunk BYTES  open PATH once, read() it N times, close it
//   --setenv M                           M setenv calls (NCCL_CLI_TEST_<i>=1)
//   --alloc-mib X                        malloc X MiB and touch it (kept until exit)
//   --fork K                             fork K children; each does --child-reads reads
//   --child-reads N                      reads per forked child (default 0)
//   --sleep-ms MS                        sleep before exiting (lets samples happen)
//   --kill                               end with SIGKILL: a trace with no end record
// It prints nothing and uses no stdio, so its file I/O is exactly what is asked.
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void Fail(const char* what) {
  const char* prefix = "cli_workload: ";
  (void)!write(2, prefix, strlen(prefix));
  (void)!write(2, what, strlen(what));
  (void)!write(2, "\n", 1);
  _exit(3);
}

static void ReadFile(const char* path, long reads, long chunk) {
  if (reads <= 0) return;
  if (path == NULL) Fail("--reads needs --file");
  char* buf = malloc((size_t)chunk);
  if (buf == NULL) Fail("out of memory");
  const int fd = open(path, O_RDONLY);
  if (fd < 0) Fail("cannot open --file");
  for (long i = 0; i < reads; ++i) {
    if (read(fd, buf, (size_t)chunk) != (ssize_t)chunk) Fail("short read: --file is too small");
  }
  close(fd);
  free(buf);
}

int main(int argc, char** argv) {
  const char* path = NULL;
  long reads = 0, chunk = 4096, setenvs = 0, alloc_mib = 0, forks = 0, child_reads = 0;
  long sleep_ms = 0;
  int kill_self = 0;
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--kill") == 0) {
      kill_self = 1;
      continue;
    }
    if (v == NULL) Fail("an option is missing its value");
    ++i;
    if (strcmp(a, "--file") == 0) path = v;
    else if (strcmp(a, "--reads") == 0) reads = atol(v);
    else if (strcmp(a, "--chunk") == 0) chunk = atol(v);
    else if (strcmp(a, "--setenv") == 0) setenvs = atol(v);
    else if (strcmp(a, "--alloc-mib") == 0) alloc_mib = atol(v);
    else if (strcmp(a, "--fork") == 0) forks = atol(v);
    else if (strcmp(a, "--child-reads") == 0) child_reads = atol(v);
    else if (strcmp(a, "--sleep-ms") == 0) sleep_ms = atol(v);
    else Fail("unknown option");
  }
  if (chunk <= 0) Fail("--chunk must be positive");

  ReadFile(path, reads, chunk);
  for (long i = 0; i < setenvs; ++i) {
    char name[64];
    snprintf(name, sizeof(name), "NCCL_CLI_TEST_%ld", i);
    if (setenv(name, "1", 1) != 0) Fail("setenv failed");
  }
  if (alloc_mib > 0) {
    const size_t n = (size_t)alloc_mib << 20;
    char* block = malloc(n);
    if (block == NULL) Fail("out of memory");
    memset(block, 1, n);  // resident until exit
  }
  for (long k = 0; k < forks; ++k) {
    const pid_t child = fork();
    if (child < 0) Fail("fork failed");
    if (child == 0) {
      ReadFile(path, child_reads, chunk);
      exit(0);
    }
  }
  for (long k = 0; k < forks; ++k) {
    int status = 0;
    if (wait(&status) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) Fail("a child failed");
  }
  if (sleep_ms > 0) {
    struct timespec ts = {sleep_ms / 1000, (sleep_ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
  }
  if (kill_self) raise(SIGKILL);
  return 0;
}
