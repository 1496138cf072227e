/* A program that makes hooked calls in a loop while signals land at random instants, and
 * makes hooked calls from its signal handler too: a handler can interrupt the shim in the
 * middle of a record (ThreadSanitizer delays asynchronous signals to safe points, so only
 * a real storm tests this). argv: loops main_file handler_file. Prints
 * "main=N handled=H" and exits 0 once it has done `loops` stat+open+read+close visits. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char* g_handler_file;
static volatile sig_atomic_t g_handled;

static void OnSignal(int sig) {
  (void)sig;
  char buf[16];
  const int fd = open(g_handler_file, O_RDONLY);
  if (fd >= 0) {
    if (read(fd, buf, sizeof(buf)) < 0) _exit(3);
    close(fd);
  }
  ++g_handled;
}

int main(int argc, char** argv) {
  if (argc != 4) return 2;
  const long loops = strtol(argv[1], NULL, 10);
  g_handler_file = argv[3];
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = OnSignal;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGUSR1, &sa, NULL) != 0) return 2;
  printf("ready\n");
  fflush(stdout);
  char buf[64];
  for (long k = 0; k < loops; ++k) {
    struct stat st;
    if (stat(argv[2], &st) != 0) return 4;
    const int fd = open(argv[2], O_RDONLY);
    if (fd < 0) return 5;
    if (read(fd, buf, sizeof(buf)) < 0) return 6;
    close(fd);
  }
  printf("main=%ld handled=%d\n", loops, (int)g_handled);
  return 0;
}
