/* ct_guest: what a program can observe of the shim, one mode per check (test_guest.py).
 * Every mode prints what it saw; the tests compare a bare run with a traced one.
 *
 *   fds                   open descriptors, fstat over 0..SC_OPEN_MAX (like CPython's
 *                         fd_status.py), comma-separated
 *   exec-fds              fork + execv "fds"; with "spawn": posix_spawn instead
 *   stdin-closed          close(0); fstat(0)'s errno; the fd open() then returns
 *   spawn-stdin-closed    posix_spawn "stdin-closed-child" with fd 0 closed by a file action
 *   threads MS            traced calls for MS ms, then the thread count of /proc/self/stat
 *   vfork-shared          does a vfork child share our memory? ("shared" / "copied")
 *   vfork-sigterm         a vfork child kills itself with SIGTERM; how did it end?
 *   vfork-sigaction       a vfork child resets SIGINT to SIG_DFL; then we raise SIGINT
 *   execl N / execle N    exec "count" with N extra arguments through execl / execle
 *   count ...             argc and $CT_MARK
 *   fork-thread           fork from a non-main thread; the child's last thread returns
 *   pthread-exit          main ends with pthread_exit: the process ends with status 0
 *   fork-locked           _Fork while another thread holds the loader's lock
 *   clone                 clone() without CLONE_VM; the child sets CUDA_CLONE_CHILD
 *   raise SIG             raise(SIG) (a number), with the default disposition
 *   alarm                 alarm(1) and wait: SIGALRM from the kernel (si_code SI_KERNEL)
 *   sigaction-view        set and read back dispositions; print what reads back
 *   disposition SIG...    print each signal's disposition: dfl, ign or handler
 *   ignore-then-exec SIG  ignore SIG, then exec "disposition SIG"
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char** environ;

static const char* g_self;

static void print_fds(void) {
  long max = sysconf(_SC_OPEN_MAX);
  if (max <= 0) max = 256;
  int first = 1;
  for (long fd = 0; fd < max; ++fd) {
    struct stat st;
    if (fstat((int)fd, &st) != 0) continue;
    printf(first ? "%ld" : ",%ld", fd);
    first = 0;
  }
  printf("\n");
}

static int wait_status(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

static void print_status(int status) {
  if (WIFEXITED(status)) printf("exited %d\n", WEXITSTATUS(status));
  else if (WIFSIGNALED(status)) printf("signaled %d\n", WTERMSIG(status));
  else printf("status %#x\n", status);
}

static volatile sig_atomic_t g_handled = 0;
static void on_signal(int sig) { g_handled = sig; }

static void* fork_worker(void* arg) {
  (void)arg;
  pid_t pid = fork();
  if (pid != 0) {
    /* The parent's worker: report how the child ended, then end the process. */
    print_status(wait_status(pid));
    fflush(stdout);
    exit(0);
  }
  /* The child: only this thread exists. Start and join one more, then return: the
   * last thread's return ends the process with status 0. */
  pthread_t t;
  if (pthread_create(&t, NULL, (void* (*)(void*))sched_yield, NULL) == 0) pthread_join(t, NULL);
  return NULL;
}

static pthread_mutex_t g_locked_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_locked_cv = PTHREAD_COND_INITIALIZER;
static int g_in_callback = 0;

static int hold_loader_lock(struct dl_phdr_info* info, size_t size, void* data) {
  (void)info;
  (void)size;
  (void)data;
  pthread_mutex_lock(&g_locked_mu);
  g_in_callback = 1;
  pthread_cond_signal(&g_locked_cv);
  pthread_mutex_unlock(&g_locked_mu);
  usleep(300000);  /* dl_iterate_phdr holds the loader's lock during callbacks */
  return 1;
}

static void* locker(void* arg) {
  (void)arg;
  dl_iterate_phdr(hold_loader_lock, NULL);
  return NULL;
}

static char g_clone_stack[256 * 1024] __attribute__((aligned(16)));

static int clone_child(void* arg) {
  (void)arg;
  setenv("CUDA_CLONE_CHILD", "1", 1);
  return 3;
}

static void print_disposition(int sig) {
  struct sigaction sa;
  if (sigaction(sig, NULL, &sa) != 0) {
    printf("%d:error\n", sig);
    return;
  }
  const void* h = (const void*)sa.sa_handler;
  printf("%d:%s\n", sig, h == (void*)SIG_DFL ? "dfl" : h == (void*)SIG_IGN ? "ign" : "handler");
}

static void print_view(const char* what, const struct sigaction* sa) {
  const void* h = (const void*)sa->sa_handler;
  unsigned long mask = 0;
  memcpy(&mask, &sa->sa_mask, sizeof(mask));
  printf("%s: %s flags=%#x mask=%#lx\n", what,
         h == (void*)SIG_DFL ? "dfl" : h == (void*)SIG_IGN ? "ign"
         : h == (void*)on_signal ? "on_signal" : "other",
         (unsigned)sa->sa_flags, mask);
}

#define A10 "a", "a", "a", "a", "a", "a", "a", "a", "a", "a"
#define A100 A10, A10, A10, A10, A10, A10, A10, A10, A10, A10
#define A1000 A100, A100, A100, A100, A100, A100, A100, A100, A100, A100
#define A5000 A1000, A1000, A1000, A1000, A1000

int main(int argc, char** argv) {
  g_self = argv[0];
  setvbuf(stdout, NULL, _IONBF, 0);
  const char* mode = argc > 1 ? argv[1] : "";
  if (strcmp(mode, "fds") == 0) {
    print_fds();
    return 0;
  }
  if (strcmp(mode, "exec-fds") == 0) {
    char* child_argv[] = {(char*)g_self, "fds", NULL};
    pid_t pid;
    if (argc > 2 && strcmp(argv[2], "spawn") == 0) {
      if (posix_spawn(&pid, g_self, NULL, NULL, child_argv, environ) != 0) return 2;
    } else {
      pid = fork();
      if (pid == 0) {
        execv(g_self, child_argv);
        _exit(127);
      }
    }
    return WEXITSTATUS(wait_status(pid));
  }
  if (strcmp(mode, "stdin-closed") == 0 || strcmp(mode, "stdin-closed-child") == 0) {
    if (mode[12] == '\0') close(0);
    struct stat st;
    const int r = fstat(0, &st);
    printf("fstat0 %d %s\n", r, r == 0 ? "open" : strerror(errno));
    const int fd = open("/dev/null", O_RDONLY);
    printf("open gave %d\n", fd);
    return 0;
  }
  if (strcmp(mode, "spawn-stdin-closed") == 0) {
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addclose(&fa, 0);
    char* child_argv[] = {(char*)g_self, "stdin-closed-child", NULL};
    pid_t pid;
    if (posix_spawn(&pid, g_self, &fa, NULL, child_argv, environ) != 0) return 2;
    return WEXITSTATUS(wait_status(pid));
  }
  if (strcmp(mode, "threads") == 0) {
    const long ms = argc > 2 ? atol(argv[2]) : 300;
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    do {
      setenv("CUDA_GUEST_TICK", "1", 1);  /* a traced call: periodic samples happen here */
      usleep(5000);
      clock_gettime(CLOCK_MONOTONIC, &now);
    } while ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000 < ms);
    char buf[1024];
    FILE* f = fopen("/proc/self/stat", "r");
    if (f == NULL || fgets(buf, sizeof(buf), f) == NULL) return 2;
    fclose(f);
    const char* p = strrchr(buf, ')');
    int field = 2;  /* ')' ends field 2 (comm) */
    for (; p != NULL && *p; ++p) {
      if (*p == ' ' && ++field == 20) break;  /* num_threads */
    }
    printf("threads %ld\n", p ? strtol(p + 1, NULL, 10) : -1L);
    return 0;
  }
  if (strcmp(mode, "vfork-shared") == 0) {
    static volatile int shared = 0;
    pid_t pid = vfork();
    if (pid == 0) {
      shared = 1;
      _exit(0);
    }
    wait_status(pid);
    printf("%s\n", shared ? "shared" : "copied");
    return 0;
  }
  if (strcmp(mode, "vfork-sigterm") == 0) {
    pid_t pid = vfork();
    if (pid == 0) {
      kill(getpid(), SIGTERM);
      _exit(0);  /* only if SIGTERM was lost */
    }
    print_status(wait_status(pid));
    return 0;
  }
  if (strcmp(mode, "vfork-sigaction") == 0) {
    signal(SIGINT, on_signal);
    pid_t pid = vfork();
    if (pid == 0) {
      struct sigaction dfl;
      memset(&dfl, 0, sizeof(dfl));
      dfl.sa_handler = SIG_DFL;
      sigaction(SIGINT, &dfl, NULL);  /* what CPython's subprocess child does */
      _exit(0);
    }
    wait_status(pid);
    raise(SIGINT);
    printf("handled %d\n", (int)g_handled);
    return 0;
  }
  if (strcmp(mode, "execl") == 0) {
    execl(g_self, g_self, "count", A5000, (char*)NULL);
    perror("execl");
    return 127;
  }
  if (strcmp(mode, "execle") == 0) {
    char* envp[] = {"CT_MARK=from-execle", NULL, NULL, NULL};
    int k = 1;
    for (char** e = environ; *e && k < 3; ++e) {
      if (strncmp(*e, "LD_PRELOAD=", 11) == 0 || strncmp(*e, "COLABTRACE_OUT=", 15) == 0) {
        envp[k++] = *e;
      }
    }
    execle(g_self, g_self, "count", A5000, (char*)NULL, envp);
    perror("execle");
    return 127;
  }
  if (strcmp(mode, "count") == 0) {
    const char* mark = getenv("CT_MARK");
    printf("argc %d mark %s\n", argc, mark ? mark : "(none)");
    return 0;
  }
  if (strcmp(mode, "fork-thread") == 0) {
    pthread_t t;
    if (pthread_create(&t, NULL, fork_worker, NULL) != 0) return 2;
    pthread_join(t, NULL);  /* the worker exits the process */
    return 3;
  }
  if (strcmp(mode, "pthread-exit") == 0) {
    printf("bye\n");
    pthread_exit(NULL);
  }
  if (strcmp(mode, "fork-locked") == 0) {
    pthread_t t;
    if (pthread_create(&t, NULL, locker, NULL) != 0) return 2;
    pthread_mutex_lock(&g_locked_mu);
    while (!g_in_callback) pthread_cond_wait(&g_locked_cv, &g_locked_mu);
    pthread_mutex_unlock(&g_locked_mu);
    pid_t pid = _Fork();
    if (pid == 0) _exit(7);
    alarm(10);  /* a child stuck on the loader's lock would hang us */
    print_status(wait_status(pid));
    pthread_join(t, NULL);
    return 0;
  }
  if (strcmp(mode, "clone") == 0) {
    pid_t pid = clone(clone_child, g_clone_stack + sizeof(g_clone_stack), SIGCHLD, NULL);
    if (pid < 0) return 2;
    print_status(wait_status(pid));
    setenv("CUDA_CLONE_PARENT", "1", 1);
    return 0;
  }
  if (strcmp(mode, "raise") == 0) {
    raise(atoi(argv[2]));
    printf("survived\n");
    return 0;
  }
  if (strcmp(mode, "alarm") == 0) {
    alarm(1);
    for (;;) pause();
  }
  if (strcmp(mode, "sigaction-view") == 0) {
    const int sigs[] = {SIGINT, SIGUSR1, SIGPIPE, SIGSEGV, SIGRTMIN + 2};
    for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); ++i) {
      const int sig = sigs[i];
      struct sigaction act, old;
      memset(&act, 0, sizeof(act));
      memset(&old, 0xff, sizeof(old));
      sigaction(sig, NULL, &old);
      printf("sig %d ", sig);
      print_view("initial", &old);
      act.sa_handler = on_signal;
      act.sa_flags = SA_RESTART | SA_NODEFER;
      sigemptyset(&act.sa_mask);
      sigaddset(&act.sa_mask, SIGUSR2);
      sigaddset(&act.sa_mask, SIGKILL);  /* the kernel drops it */
      memset(&old, 0xff, sizeof(old));
      sigaction(sig, &act, &old);
      printf("sig %d ", sig);
      print_view("before-handler", &old);
      memset(&act, 0, sizeof(act));
      act.sa_handler = SIG_IGN;
      memset(&old, 0xff, sizeof(old));
      sigaction(sig, &act, &old);
      printf("sig %d ", sig);
      print_view("handler", &old);
      act.sa_handler = SIG_DFL;
      memset(&old, 0xff, sizeof(old));
      sigaction(sig, &act, &old);
      printf("sig %d ", sig);
      print_view("ignored", &old);
      memset(&old, 0xff, sizeof(old));
      sigaction(sig, NULL, &old);
      printf("sig %d ", sig);
      print_view("default", &old);
      printf("sig %d signal() returned %s\n", sig,
             signal(sig, on_signal) == SIG_DFL ? "SIG_DFL" : "other");
      printf("sig %d signal() returned %s\n", sig,
             signal(sig, SIG_DFL) == on_signal ? "on_signal" : "other");
    }
    return 0;
  }
  if (strcmp(mode, "disposition") == 0) {
    for (int i = 2; i < argc; ++i) print_disposition(atoi(argv[i]));
    return 0;
  }
  if (strcmp(mode, "ignore-then-exec") == 0) {
    signal(atoi(argv[2]), SIG_IGN);
    execl(g_self, g_self, "disposition", argv[2], (char*)NULL);
    return 127;
  }
  fprintf(stderr, "unknown mode %s\n", mode);
  return 2;
}
