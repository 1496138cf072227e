// ctload: runs a list of library operations, printing one line per operation, for the
// library/ABI tests:
//   open:PATH  deep:PATH  global:PATH  noload:PATH   dlopen with RTLD_NOW [|DEEPBIND|GLOBAL|NOLOAD]
//   close:PATH                                        dlclose the handle opened for PATH
//   setenv:NAME=VALUE                                 setenv at run time
//   replace:SRC:DST                                   copy SRC to DST.tmp, rename over DST
//   call:PATH:SYMBOL                                  call a `const char* (void)` symbol
//   fork                                              fork; the child runs the remaining ops
//   sleep:MS
//   exit:N                                            exit(N) here
//   killself                                          SIGKILL itself (no exit record)
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { kMax = 64 };
static const char* g_paths[kMax];
static void* g_handles[kMax];
static int g_count = 0;

static void do_open(const char* what, const char* path, int mode) {
  void* h = dlopen(path, mode);
  if (h) {
    if (g_count < kMax) {
      g_paths[g_count] = path;
      g_handles[g_count++] = h;
    }
    printf("%s %s: ok\n", what, path);
  } else {
    printf("%s %s: error %s\n", what, path, dlerror());
  }
}

static int copy_file(const char* src, const char* dst) {
  int in = open(src, O_RDONLY), out = open(dst, O_WRONLY | O_CREAT | O_TRUNC, 0755);
  if (in < 0 || out < 0) return -1;
  char buf[65536];
  ssize_t n;
  while ((n = read(in, buf, sizeof buf)) > 0) {
    if (write(out, buf, (size_t)n) != n) return -1;
  }
  close(in);
  close(out);
  return 0;
}

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IONBF, 0);
  for (int i = 1; i < argc; ++i) {
    char* op = argv[i];
    char* arg = strchr(op, ':');
    if (arg) *arg++ = '\0';
    if (!strcmp(op, "open")) {
      do_open(op, arg, RTLD_NOW);
    } else if (!strcmp(op, "deep")) {
      do_open(op, arg, RTLD_NOW | RTLD_DEEPBIND);
    } else if (!strcmp(op, "global")) {
      do_open(op, arg, RTLD_NOW | RTLD_GLOBAL);
    } else if (!strcmp(op, "noload")) {
      do_open(op, arg, RTLD_NOW | RTLD_NOLOAD);
    } else if (!strcmp(op, "close")) {
      for (int k = g_count - 1; k >= 0; --k) {
        if (g_handles[k] && !strcmp(g_paths[k], arg)) {
          printf("close %s: %d\n", arg, dlclose(g_handles[k]));
          g_handles[k] = NULL;
          break;
        }
      }
    } else if (!strcmp(op, "setenv")) {
      char* eq = strchr(arg, '=');
      *eq = '\0';
      setenv(arg, eq + 1, 1);
      printf("setenv %s\n", arg);
    } else if (!strcmp(op, "replace")) {
      char* dst = strchr(arg, ':');
      *dst++ = '\0';
      char tmp[4096];
      snprintf(tmp, sizeof tmp, "%s.tmp", dst);
      const int ok = copy_file(arg, tmp) == 0 && rename(tmp, dst) == 0;
      printf("replace %s: %s\n", dst, ok ? "ok" : "failed");
    } else if (!strcmp(op, "call")) {
      char* sym = strrchr(arg, ':');
      *sym++ = '\0';
      void* h = dlopen(arg, RTLD_NOW | RTLD_NOLOAD);
      const char* (*fn)(void) = h ? (const char* (*)(void))dlsym(h, sym) : NULL;
      printf("call %s: %s\n", sym, fn ? fn() : "missing");
    } else if (!strcmp(op, "fork")) {
      const pid_t pid = fork();
      if (pid > 0) {
        int status = 0;
        waitpid(pid, &status, 0);
        printf("child exited %d\n", WEXITSTATUS(status));
        return 0;
      }
    } else if (!strcmp(op, "sleep")) {
      struct timespec ts = {atoi(arg) / 1000, (atoi(arg) % 1000) * 1000000L};
      nanosleep(&ts, NULL);
    } else if (!strcmp(op, "exit")) {
      exit(atoi(arg));
    } else if (!strcmp(op, "killself")) {
      kill(getpid(), SIGKILL);
    } else {
      fprintf(stderr, "ctload: unknown op %s\n", op);
      return 2;
    }
  }
  return 0;
}
