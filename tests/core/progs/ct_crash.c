/* ct_crash MODE: dies of a fatal signal in a function of this executable.
 *   segv   a write through a null pointer (crash_segv)
 *   abort  abort() (crash_abort)
 *   fpe    an integer division by zero (crash_fpe)
 *   bus    touches a page of a /dev/shm file that was truncated under its mapping
 *          (crash_bus); the file name is argv[2]
 *   bus-full  sizes a /dev/shm file (argv[2]) to 1 MiB, maps it and touches its pages
 *          in order (crash_bus) until tmpfs has no page left to give: run it where
 *          /dev/shm is smaller than 1 MiB.
 *   handler  installs its own SIGSEGV handler (which _exit(42)s), checks that
 *          sigaction(SIGSEGV, NULL, &old) returns it, then crashes in crash_segv.
 *   overflow        overflows its stack (crash_overflow); its SIGSEGV handler runs on an
 *          8 KiB alternate stack, as Rust's runtime does, prints "stack overflow" and
 *          _exit(43)s.
 *   overflow-abort  the same, but the handler calls abort() (on_overflow), as Rust does.
 * Built with -g -fno-omit-frame-pointer so the stack walks through these functions.
 * Prints "ready" before crashing. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

volatile int g_zero = 0;
volatile int g_sink = 0;

__attribute__((noinline)) void crash_segv(int* volatile p) {
  *p = 42;
  g_sink++;
}

__attribute__((noinline)) void crash_abort(void) {
  abort();
}

__attribute__((noinline)) int crash_fpe(int a) {
  int r = a / g_zero;
  g_sink++;
  return r;
}

__attribute__((noinline)) void crash_bus(volatile char* p) {
  p[0] = 1;
  g_sink++;
}

static void on_segv(int sig) {
  (void)sig;
  _exit(42);
}

__attribute__((noinline)) int crash_overflow(volatile char* up) {
  volatile char frame[4096];
  frame[0] = up[0];
  return crash_overflow(frame) + frame[100];
}

static int g_abort_on_overflow = 0;

__attribute__((noinline)) void on_overflow(int sig, siginfo_t* info, void* uc) {
  (void)sig, (void)info, (void)uc;
  static const char msg[] = "stack overflow\n";
  if (write(1, msg, sizeof(msg) - 1) < 0) _exit(44);
  if (g_abort_on_overflow) abort();
  _exit(43);
}

static char g_altstack[8192];

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "segv";
  setenv("CUDA_CRASH_MODE", mode, 1);
  if (strcmp(mode, "handler") == 0) {
    struct sigaction act, old;
    memset(&act, 0, sizeof(act));
    act.sa_handler = on_segv;
    sigemptyset(&act.sa_mask);
    if (sigaction(SIGSEGV, &act, NULL) != 0) return 3;
    memset(&old, 0, sizeof(old));
    if (sigaction(SIGSEGV, NULL, &old) != 0) return 4;
    if (old.sa_handler != on_segv) {
      printf("sigaction returned a handler that is not ours\n");
      return 5;
    }
    printf("handler ok\n");
  }
  const int overflow = strncmp(mode, "overflow", 8) == 0;
  if (overflow) {
    g_abort_on_overflow = strcmp(mode, "overflow-abort") == 0;
    stack_t ss;
    memset(&ss, 0, sizeof(ss));
    ss.ss_sp = g_altstack;
    ss.ss_size = sizeof(g_altstack);
    if (sigaltstack(&ss, NULL) != 0) return 9;
    struct sigaction act;
    memset(&act, 0, sizeof(act));
    act.sa_sigaction = on_overflow;
    act.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&act.sa_mask);
    if (sigaction(SIGSEGV, &act, NULL) != 0) return 10;
  }
  printf("ready\n");
  fflush(stdout);
  if (overflow) {
    // overflow-late: 30 ms without a traced call first, so that a periodic sample
    // (COLABTRACE_SAMPLE_MS=1) is due when the crash and the handler's write() are
    // recorded, on the 8 KiB alternate stack (a loaded machine's Rust overflow report).
    if (strcmp(mode, "overflow-late") == 0) {
      struct timespec t0, t;
      clock_gettime(CLOCK_MONOTONIC, &t0);
      do clock_gettime(CLOCK_MONOTONIC, &t);
      while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 30000000L);
    }
    char start = 0;
    return crash_overflow(&start);
  }
  if (strcmp(mode, "segv") == 0 || strcmp(mode, "handler") == 0) crash_segv(NULL);
  if (strcmp(mode, "abort") == 0) crash_abort();
  if (strcmp(mode, "fpe") == 0) return crash_fpe(7);
  if (strcmp(mode, "bus-full") == 0) {
    const char* name = argc > 2 ? argv[2] : "/dev/shm/ct_crash_bus";
    const size_t size = 1u << 20;
    const int fd = open(name, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || ftruncate(fd, (off_t)size) != 0) return 6;
    char* p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) return 7;
    for (size_t off = 0; off < size; off += 4096) crash_bus(p + off);
    return 11;  // /dev/shm had room for all of it
  }
  if (strcmp(mode, "bus") == 0) {
    const char* name = argc > 2 ? argv[2] : "/dev/shm/ct_crash_bus";
    const int fd = open(name, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || ftruncate(fd, 8192) != 0) return 6;
    char* p = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) return 7;
    p[0] = 0;
    if (ftruncate(fd, 0) != 0) return 8;
    crash_bus(p + 4096);
  }
  return 99;
}
