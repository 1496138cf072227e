/* A crash reporter that tries an optional plugin (tests/parity/runtimes.py): its SIGSEGV
 * handler dlopen()s a library that is not installed (as the JVM tries its disassembler,
 * hsdis, while it writes hs_err), prints its own backtrace (which must show the same
 * frames bare and traced: the shim enters a wrapped handler by a tail call), and raises
 * the signal again.
 *
 * With the argument "abort", 20 SIGSEGVs sent with raise() are handled first (more than
 * the shim records), and the crash handler ends the process with abort(), as the JVM
 * does after hs_err. */
#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int g_abort;
static volatile int g_counted;

static void count(int sig) { (void)sig, g_counted++; }

static void on_segv(int sig) {
  void* plugin = dlopen("libcolabtrace-test-absent-plugin.so", RTLD_NOW);
  const char* msg = plugin ? "crash report: plugin loaded\n" : "crash report: no plugin\n";
  write(2, msg, strlen(msg));
  /* The handler, the signal trampoline, main: the frames below main differ under the
   * shim (its __libc_start_main wrapper calls main), which is not what this checks. */
  void* frames[3];
  backtrace_symbols_fd(frames, backtrace(frames, 3), 2);
  if (g_abort) abort();
  signal(sig, SIG_DFL);
  raise(sig);
}

int main(int argc, char** argv) {
  g_abort = argc > 1 && strcmp(argv[1], "abort") == 0;
  if (g_abort) {
    signal(SIGSEGV, count);
    for (int i = 0; i < 20; i++) raise(SIGSEGV);
    printf("handled %d\n", g_counted);
  }
  signal(SIGSEGV, on_segv);
  puts("about to crash");
  fflush(stdout);
  *(volatile int*)16 = 1;
  return 0;
}
